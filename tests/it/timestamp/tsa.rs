//! A real RFC 3161 time-stamping authority for the tests: `openssl ts -reply` behind a
//! loopback HTTP handler (127.0.0.1, an ephemeral port) that this file starts and stops,
//! with a root CA and a TSA certificate made by `openssl` in a temporary directory. Not a
//! test double: every token is OpenSSL's. The handler can also be told to answer garbage,
//! an error status or an oversized body, as a broken TSA would.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The TSA's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Rsa,
    P256,
    P384,
}

/// How the TSA is made.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub key: Key,
    /// Embed the root too (OpenSSL then writes the certificate SET out of DER order).
    pub embed_chain: bool,
    /// `ess_cert_id_alg`: sha1 (ESSCertID) or sha256 (ESSCertIDv2).
    pub ess_sha1: bool,
    /// `signer_digest`.
    pub digest: &'static str,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            key: Key::Rsa,
            embed_chain: false,
            ess_sha1: false,
            digest: "sha256",
        }
    }
}

/// What the handler answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// OpenSSL's `TimeStampResp`.
    Token,
    /// 200 with bytes that are not DER.
    Garbage,
    /// HTTP 503.
    Unavailable,
    /// 200 with 300 KB.
    Huge,
}

/// A root CA and a TSA certificate issued by it, in a temporary directory.
pub struct Pki {
    pub dir: tempfile::TempDir,
}

fn openssl(args: &[&str], cwd: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn newkey(key: Key) -> Vec<&'static str> {
    match key {
        Key::Rsa => vec!["-newkey", "rsa:2048"],
        Key::P256 => vec!["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
        Key::P384 => vec!["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"],
    }
}

impl Pki {
    /// A root (`ca.pem`, P-384) and a TSA certificate (`tsa.pem`, extendedKeyUsage
    /// critical timeStamping) with `setup.key`; `tsa.cnf` the `openssl ts` configuration.
    pub fn new(setup: Setup) -> Pki {
        Self::named(setup, "Test Root CA")
    }

    /// [`Pki::new`] with the root's common name.
    pub fn named(setup: Setup, ca_name: &str) -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let subj = format!("/CN={ca_name}");
        let mut ca = vec![
            "req", "-x509", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        ];
        ca.extend(newkey(Key::P384));
        ca.extend([
            "-days",
            "3650",
            "-subj",
            &subj,
            "-addext",
            "basicConstraints=critical,CA:true",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        openssl(&ca, d);
        std::fs::write(
            d.join("ext.cnf"),
            "[v3_tsa]\nbasicConstraints = critical, CA:false\nextendedKeyUsage = critical, timeStamping\nkeyUsage = critical, digitalSignature\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n",
        )
        .unwrap();
        let mut req = vec![
            "req", "-new", "-nodes", "-keyout", "tsa.key", "-out", "tsa.csr",
        ];
        req.extend(newkey(setup.key));
        req.extend(["-subj", "/CN=Test TSA"]);
        openssl(&req, d);
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                "tsa.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "tsa.pem",
                "-days",
                "365",
                "-extfile",
                "ext.cnf",
                "-extensions",
                "v3_tsa",
            ],
            d,
        );
        let p = |f: &str| d.join(f).display().to_string();
        // OpenSSL embeds the signer's certificate (the request asks for it); `certs` adds
        // more: the root, for the whole chain.
        let certs = if setup.embed_chain {
            format!("certs = {}\n", p("ca.pem"))
        } else {
            String::new()
        };
        std::fs::write(d.join("serial"), "01\n").unwrap();
        std::fs::write(
            d.join("tsa.cnf"),
            format!(
                "[tsa]\ndefault_tsa = tsa_config1\n[tsa_config1]\nserial = {}\nsigner_cert = {}\n{}signer_key = {}\nsigner_digest = {}\ndefault_policy = 1.2.3.4.1\ndigests = sha256, sha384, sha512\naccuracy = secs:1\nclock_precision_digits = 6\nordering = no\ntsa_name = yes\ness_cert_id_chain = no\ness_cert_id_alg = {}\n",
                p("serial"),
                p("tsa.pem"),
                certs,
                p("tsa.key"),
                setup.digest,
                if setup.ess_sha1 { "sha1" } else { "sha256" },
            ),
        )
        .unwrap();
        Pki { dir }
    }

    pub fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    /// `openssl ts -reply` to the DER request `query`.
    pub fn reply(&self, query: &[u8]) -> Vec<u8> {
        let d = self.dir.path();
        let n = std::process::id() as u64 ^ rand_u64();
        let q = d.join(format!("q{n}.tsq"));
        let r = d.join(format!("r{n}.tsr"));
        std::fs::write(&q, query).unwrap();
        let cnf = self.path("tsa.cnf");
        let out = Command::new("openssl")
            .args(["ts", "-reply", "-config"])
            .arg(&cnf)
            .arg("-queryfile")
            .arg(&q)
            .arg("-out")
            .arg(&r)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read(&r).unwrap()
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    h.finish()
}

/// The loopback HTTP handler in front of [`Pki::reply`]; stopped when dropped.
pub struct Tsa {
    pub url: String,
    pub answer: Arc<Mutex<Answer>>,
    /// Requests answered.
    pub served: Arc<Mutex<u64>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Tsa {
    /// Start it for `pki` on 127.0.0.1.
    pub fn start(pki: Arc<Pki>) -> Tsa {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(Mutex::new(Answer::Token));
        let served = Arc::new(Mutex::new(0));
        let (s, a, n) = (stop.clone(), answer.clone(), served.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let mode = *a.lock().unwrap();
                if serve(&mut conn, &pki, mode).is_ok() {
                    *n.lock().unwrap() += 1;
                }
            }
        });
        Tsa {
            url: format!("http://{addr}/tsa"),
            answer,
            served,
            stop,
            addr,
            thread: Some(thread),
        }
    }

    pub fn set(&self, a: Answer) {
        *self.answer.lock().unwrap() = a;
    }

    pub fn served(&self) -> u64 {
        *self.served.lock().unwrap()
    }
}

impl Drop for Tsa {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A URL where nothing listens (a port bound, then released): a TSA that is down.
pub fn down_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/tsa")
}

/// One HTTP/1.1 exchange: read the request (headers, `Content-Length` body), answer.
fn serve(conn: &mut TcpStream, pki: &Pki, mode: Answer) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    assert!(head.starts_with("post "), "{head}");
    assert!(
        head.contains("content-type: application/timestamp-query"),
        "{head}"
    );
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < header_end + len {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = &buf[header_end..header_end + len];
    let (status, answer) = match mode {
        Answer::Token => ("200 OK", pki.reply(body)),
        Answer::Garbage => (
            "200 OK",
            b"<html>the TSA is having a bad day</html>".to_vec(),
        ),
        Answer::Unavailable => ("503 Service Unavailable", b"busy".to_vec()),
        Answer::Huge => ("200 OK", vec![0x30; 300 * 1024]),
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: application/timestamp-reply\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    )?;
    conn.write_all(&answer)?;
    conn.flush()
}

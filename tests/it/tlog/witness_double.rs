//! TEST DOUBLE of a C2SP transparency-log witness (`c2sp.org/tlog-witness`,
//! `add-checkpoint` only), written here from the specification because no C2SP witness
//! can be installed on the test machines. It shares no code with lineage-store's client:
//! the checkpoint's signature is checked by the independent `signed_note` crate, the
//! consistency proof by the independent `tlog_tiles` crate (`check_tree`), and the
//! cosignature (`cosignature/v1`, Ed25519 with a timestamp) is made here by the
//! `c2sp.org/tlog-cosignature` recipe.
//!
//! Like a real witness it keeps, per origin, the size and root it last cosigned, and
//! answers: 404 for an unknown origin, 403 when no signature by the key it trusts for the
//! origin verifies, 400 for an old size above the checkpoint's, 409 (`text/x.tlog.size`)
//! when the old size is not the size it holds, 422 when the proof does not verify (or a
//! proof comes with old size 0, or an equal size has another root), else 200 with its
//! cosignature line. A plain HTTP/1.1 server on 127.0.0.1, one thread per connection.
//!
//! [`Silent`] is a witness that accepts connections and never answers.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use sha2::{Digest, Sha256};
use signed_note::{Note, StandardVerifier, VerifierList};
use tlog_tiles::{check_tree, Hash};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// What the witness holds and whom it trusts.
#[derive(Default)]
struct State {
    /// origin → the log's verifier key (signed-note vkey).
    logs: HashMap<String, String>,
    /// origin → (size, root) last cosigned.
    latest: HashMap<String, (u64, [u8; 32])>,
    /// (old size, status) of every request, in order.
    seen: Vec<(u64, u16)>,
}

/// A running witness double.
pub struct Witness {
    /// Its submission prefix.
    pub url: String,
    /// Its name.
    pub name: String,
    key: SigningKey,
    state: Arc<Mutex<State>>,
}

impl Witness {
    /// A witness named `name` with the Ed25519 secret `seed`, trusting nothing yet.
    pub fn start(name: &str, seed: u8) -> Witness {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/w/", listener.local_addr().unwrap());
        let key = SigningKey::from_bytes(&[seed; 32]);
        let state = Arc::new(Mutex::new(State::default()));
        let (s, k, n) = (state.clone(), key.clone(), name.to_string());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (s, k, n) = (s.clone(), k.clone(), n.clone());
                std::thread::spawn(move || serve(conn, &s, &k, &n));
            }
        });
        Witness {
            url,
            name: name.to_string(),
            key,
            state,
        }
    }

    /// Trust `log_vkey` (a signed-note verifier key; its name is the origin).
    pub fn trust(&self, log_vkey: &str) {
        let origin = log_vkey.split('+').next().unwrap().to_string();
        self.state
            .lock()
            .unwrap()
            .logs
            .insert(origin, log_vkey.to_string());
    }

    /// Set what the witness last cosigned for `origin` (as if another client had pushed).
    pub fn set_latest(&self, origin: &str, size: u64, root: [u8; 32]) {
        self.state
            .lock()
            .unwrap()
            .latest
            .insert(origin.to_string(), (size, root));
    }

    /// The size it holds for `origin`.
    pub fn latest(&self, origin: &str) -> Option<u64> {
        self.state.lock().unwrap().latest.get(origin).map(|l| l.0)
    }

    /// (old size, status) of every request so far.
    pub fn seen(&self) -> Vec<(u64, u16)> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Its verifier key: `<name>+<id>+base64(0x04 || public key)`, the id by the
    /// spec's recipe (`sha256(name || "\n" || 0x04 || key)[:4]`).
    pub fn vkey(&self) -> String {
        let pk = self.key.verifying_key().to_bytes();
        let mut k = vec![0x04u8];
        k.extend_from_slice(&pk);
        format!(
            "{}+{:08x}+{}",
            self.name,
            key_id(&self.name, &pk),
            B64.encode(k)
        )
    }

    /// A cosignature line by this witness over checkpoint text `body` at `time`.
    pub fn cosign(&self, body: &str, time: u64) -> String {
        cosign_line(&self.key, &self.name, body, time)
    }
}

/// The key id of an Ed25519 cosigner key.
pub fn key_id(name: &str, pk: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', 0x04]);
    h.update(pk);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

fn cosign_line(key: &SigningKey, name: &str, body: &str, time: u64) -> String {
    let msg = format!("cosignature/v1\ntime {time}\n{body}");
    let sig = key.sign(msg.as_bytes());
    let mut raw = key_id(name, &key.verifying_key().to_bytes())
        .to_be_bytes()
        .to_vec();
    raw.extend_from_slice(&time.to_be_bytes());
    raw.extend_from_slice(&sig.to_bytes());
    format!("\u{2014} {name} {}\n", B64.encode(raw))
}

/// One connection: one request, one answer.
fn serve(mut conn: TcpStream, state: &Mutex<State>, key: &SigningKey, name: &str) {
    let Some((path, body)) = read_request(&mut conn) else {
        return;
    };
    let (status, ctype, answer) = if path.ends_with("/add-checkpoint") {
        add_checkpoint(&body, state, key, name)
    } else {
        (404, "text/plain", "no such endpoint\n".to_string())
    };
    state.lock().unwrap().seen.push((old_of(&body), status));
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(answer.as_bytes());
}

fn old_of(body: &str) -> u64 {
    body.lines()
        .next()
        .and_then(|l| l.strip_prefix("old "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

fn read_request(conn: &mut TcpStream) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < end + len {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((path, String::from_utf8_lossy(&buf[end..]).to_string()))
}

/// The protocol's checks, in the specification's order.
fn add_checkpoint(
    body: &str,
    state: &Mutex<State>,
    key: &SigningKey,
    name: &str,
) -> (u16, &'static str, String) {
    let bad = |s: u16, why: &str| (s, "text/plain", format!("{why}\n"));
    let Some((head, note)) = body.split_once("\n\n") else {
        return bad(400, "no blank line");
    };
    let mut lines = head.split('\n');
    let Some(old) = lines
        .next()
        .and_then(|l| l.strip_prefix("old "))
        .and_then(|n| n.parse::<u64>().ok())
    else {
        return bad(400, "no old size line");
    };
    let proof: Option<Vec<Hash>> = lines
        .map(|l| {
            let b = B64.decode(l).ok()?;
            Some(Hash(b.try_into().ok()?))
        })
        .collect();
    let Some(proof) = proof else {
        return bad(400, "a proof line that is not a hash");
    };
    let Ok(parsed) = Note::from_bytes(note.as_bytes()) else {
        return bad(400, "not a signed note");
    };
    let text = String::from_utf8_lossy(parsed.text()).to_string();
    let Ok(cp) = tlog_tiles::Checkpoint::from_bytes(text.as_bytes()) else {
        return bad(400, "not a checkpoint");
    };
    let origin = cp.origin().to_string();
    let mut st = state.lock().unwrap();
    let Some(log_vkey) = st.logs.get(&origin).cloned() else {
        return bad(404, "unknown origin");
    };
    let verifier = StandardVerifier::new(&log_vkey).unwrap();
    if parsed
        .verify(&VerifierList::new(vec![Box::new(verifier)]))
        .is_err()
    {
        return bad(403, "no valid signature by a trusted key");
    }
    let size = cp.size();
    if old > size {
        return bad(400, "old size above the checkpoint's");
    }
    let (have, have_root) = st.latest.get(&origin).copied().unwrap_or((0, [0; 32]));
    if old != have {
        return (409, "text/x.tlog.size", format!("{have}\n"));
    }
    let root = cp.hash().0;
    let consistent = if old == 0 {
        proof.is_empty()
    } else if old == size {
        proof.is_empty() && root == have_root
    } else {
        check_tree(&proof, size, Hash(root), old, Hash(have_root)).is_ok()
    };
    if !consistent {
        return bad(422, "the consistency proof does not verify");
    }
    st.latest.insert(origin, (size, root));
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (200, "text/plain", cosign_line(key, name, &text, time))
}

/// A witness that accepts every connection and never answers (nor closes it).
pub struct Silent {
    /// Its URL.
    pub url: String,
    /// Connections it has accepted.
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    /// Start one on 127.0.0.1.
    pub fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let held = Arc::new(Mutex::new(Vec::new()));
        let h = held.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                h.lock().unwrap().push(conn);
            }
        });
        Silent { url, held }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

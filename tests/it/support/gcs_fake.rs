//! A FAKE of Google Cloud Storage's XML API: exactly the requests `object_store`'s GCS
//! client sends for what lineage-store does (create-only PUT with
//! `x-goog-if-generation-match: 0`, GET with optional `Range`, `list-type=2` listing,
//! DELETE), served in-process on 127.0.0.1.
//!
//! Why a fake: no GCS emulator from the package registries reachable here speaks the XML
//! API `object_store` uses (fake-gcs-server answers 400 "invalid uploadType"). This tests
//! our wiring (URL, headers, status mapping), not Google's semantics; the real-GCS tests
//! in tests/it/publish/conformance.rs run when `LINEAGE_REAL_GCS_URL` and credentials are given.
//!
//! It refuses a PUT without the create-only precondition (400), so a publisher that ever
//! sent a plain overwrite would fail here rather than pass silently.
//!
//! The XML API is S3's, so the same fake also answers the S3 dialect of these requests
//! (`If-None-Match: *`, SigV4 requests, whose signature it does not check), when started
//! with [`GcsFake::start_s3_dialect`]: that is how S3-only answers that no emulator gives
//! on demand (409 `ConditionalRequestConflict`) are injected.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Default)]
struct State {
    /// object name → (bytes, generation, modified)
    objects: BTreeMap<String, (Bytes, u64, DateTime<Utc>)>,
    next_generation: u64,
    /// "METHOD path" of every request, for assertions.
    log: Vec<String>,
    /// Create-only PUTs that found the object and were answered 412.
    refused_creates: usize,
    /// Faults for the next PUTs that store their object: what to answer instead of 200.
    put_faults: Vec<PutFault>,
}

/// What the fake does after storing a PUT's object, instead of answering 200: the two
/// ways a create lands while its caller never hears so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutFault {
    /// Close the connection without a response (a lost response).
    DropConnection,
    /// Answer 503 (object_store retries, and the retry finds the object: 412).
    ServiceUnavailable,
    /// S3 dialect only: answer 409 `ConditionalRequestConflict` *without* storing.
    ConditionalRequestConflict,
}

/// A running fake GCS server; stopped when dropped.
#[derive(Debug)]
pub struct GcsFake {
    addr: SocketAddr,
    bucket: String,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

/// Which client's requests the fake expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Gcs,
    S3,
}

impl Drop for GcsFake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(s: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl GcsFake {
    /// Start serving `bucket` on a free port of 127.0.0.1.
    pub async fn start(bucket: &str) -> std::io::Result<Self> {
        Self::start_with(bucket, Dialect::Gcs).await
    }

    /// Start serving `bucket` to an S3 client (path-style requests).
    pub async fn start_s3_dialect(bucket: &str) -> std::io::Result<Self> {
        Self::start_with(bucket, Dialect::S3).await
    }

    async fn start_with(bucket: &str, dialect: Dialect) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        let bucket_name = bucket.to_string();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let st = st.clone();
                let b = bucket_name.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, st, b, dialect).await;
                });
            }
        });
        Ok(Self {
            addr,
            bucket: bucket.to_string(),
            state,
            task,
        })
    }

    /// Base URL to give `object_store` (`GoogleCloudStorageBuilder::with_base_url`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bucket served.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Faults not yet fired.
    pub fn pending_faults(&self) -> usize {
        lock(&self.state).put_faults.len()
    }

    /// Every request seen, as "METHOD /path?query".
    pub fn requests(&self) -> Vec<String> {
        lock(&self.state).log.clone()
    }

    /// Make the next PUTs that store an object fail afterwards, in this order.
    pub fn fail_puts(&self, faults: &[PutFault]) {
        lock(&self.state).put_faults.extend_from_slice(faults);
    }

    /// How many create-only PUTs found the object taken (answered 412).
    pub fn refused_creates(&self) -> usize {
        lock(&self.state).refused_creates
    }
}

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

async fn read_request(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut it = line.split_whitespace();
    let method = it.next().unwrap_or_default().to_string();
    let target = it.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut req = Request {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    let len: usize = req
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    req.body = vec![0; len];
    r.read_exact(&mut req.body).await?;
    Ok(Some(req))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

struct Response {
    /// Close the connection instead of answering.
    drop: bool,
    status: u16,
    reason: &'static str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn resp(status: u16, reason: &'static str, body: impl Into<Vec<u8>>) -> Response {
    Response {
        drop: false,
        status,
        reason,
        headers: Vec::new(),
        body: body.into(),
    }
}

fn error_xml(code: &str, msg: &str) -> Vec<u8> {
    format!("<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{msg}</Message></Error>").into_bytes()
}

fn handle(req: &Request, st: &Mutex<State>, bucket: &str, dialect: Dialect) -> Response {
    let (path, query) = match req.target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (req.target.as_str(), ""),
    };
    lock(st).log.push(format!("{} {}", req.method, req.target));
    let authorized = match dialect {
        Dialect::Gcs => req.header("authorization") == Some("Bearer fake-gcs-token"),
        Dialect::S3 => req
            .header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 ")),
    };
    if !authorized {
        return resp(
            401,
            "Unauthorized",
            error_xml("AuthenticationRequired", "no token"),
        );
    }
    let Some(rest) = path.strip_prefix('/') else {
        return resp(400, "Bad Request", error_xml("InvalidURI", "path"));
    };
    let (b, name) = match rest.split_once('/') {
        Some((b, n)) => (percent_decode(b), percent_decode(n)),
        None => (percent_decode(rest), String::new()),
    };
    if b != bucket {
        return resp(404, "Not Found", error_xml("NoSuchBucket", &b));
    }
    let params: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect();
    let param = |k: &str| {
        params
            .iter()
            .find(|(pk, _)| pk == k)
            .map(|(_, v)| v.clone())
    };
    match (req.method.as_str(), name.is_empty()) {
        ("GET", true) if param("list-type").as_deref() == Some("2") => {
            let prefix = param("prefix").unwrap_or_default();
            let s = lock(st);
            let mut xml = String::from("<?xml version='1.0' encoding='UTF-8'?><ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'>");
            xml.push_str(&format!(
                "<Name>{}</Name><Prefix>{}</Prefix><IsTruncated>false</IsTruncated>",
                xml_escape(bucket),
                xml_escape(&prefix)
            ));
            for (k, (bytes, generation, t)) in s.objects.range(prefix.clone()..) {
                if !k.starts_with(&prefix) {
                    break;
                }
                xml.push_str(&format!(
                    "<Contents><Key>{}</Key><Generation>{generation}</Generation><LastModified>{}</LastModified><ETag>\"{generation}\"</ETag><Size>{}</Size></Contents>",
                    xml_escape(k),
                    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    bytes.len()
                ));
            }
            xml.push_str("</ListBucketResult>");
            let mut r = resp(200, "OK", xml);
            r.headers
                .push(("Content-Type".into(), "application/xml".into()));
            r
        }
        ("PUT", false) => {
            let create_only = match dialect {
                Dialect::Gcs => req.header("x-goog-if-generation-match") == Some("0"),
                Dialect::S3 => req.header("if-none-match") == Some("*"),
            };
            if !create_only {
                return resp(
                    400,
                    "Bad Request",
                    error_xml("FakeRefused", "this fake only accepts create-only PUTs"),
                );
            }
            let mut s = lock(st);
            if s.put_faults.first() == Some(&PutFault::ConditionalRequestConflict) {
                s.put_faults.remove(0);
                return resp(
                    409,
                    "Conflict",
                    error_xml(
                        "ConditionalRequestConflict",
                        "A conflicting conditional operation is currently in progress against this resource. Please try again.",
                    ),
                );
            }
            if s.objects.contains_key(&name) {
                s.refused_creates += 1;
                return resp(
                    412,
                    "Precondition Failed",
                    error_xml(
                        "PreconditionFailed",
                        "At least one of the pre-conditions you specified did not hold.",
                    ),
                );
            }
            s.next_generation += 1;
            let generation = s.next_generation;
            s.objects.insert(
                name,
                (Bytes::from(req.body.clone()), generation, Utc::now()),
            );
            if !s.put_faults.is_empty() {
                match s.put_faults.remove(0) {
                    PutFault::DropConnection => {
                        let mut r = resp(200, "OK", Vec::new());
                        r.drop = true;
                        return r;
                    }
                    PutFault::ConditionalRequestConflict => {}
                    PutFault::ServiceUnavailable => {
                        return resp(
                            503,
                            "Service Unavailable",
                            error_xml("ServiceUnavailable", "injected"),
                        );
                    }
                }
            }
            let mut r = resp(200, "OK", Vec::new());
            r.headers.push(("ETag".into(), format!("\"{generation}\"")));
            r.headers
                .push(("x-goog-generation".into(), generation.to_string()));
            r
        }
        ("GET", false) | ("HEAD", false) => {
            let s = lock(st);
            let Some((bytes, generation, t)) = s.objects.get(&name) else {
                return resp(
                    404,
                    "Not Found",
                    error_xml("NoSuchKey", "The specified key does not exist."),
                );
            };
            let total = bytes.len();
            let (status, reason, body, range) =
                match req.header("range").and_then(|r| r.strip_prefix("bytes=")) {
                    Some(r) => {
                        let (a, z) = r.split_once('-').unwrap_or((r, ""));
                        let a: usize = a.parse().unwrap_or(0);
                        let z: usize = z
                            .parse()
                            .map(|z: usize| z.min(total.saturating_sub(1)))
                            .unwrap_or(total.saturating_sub(1));
                        if a >= total || a > z {
                            return resp(
                                416,
                                "Range Not Satisfiable",
                                error_xml("InvalidRange", "range"),
                            );
                        }
                        (
                            206,
                            "Partial Content",
                            bytes.slice(a..z + 1),
                            Some(format!("bytes {a}-{z}/{total}")),
                        )
                    }
                    None => (200, "OK", bytes.clone(), None),
                };
            let mut r = resp(status, reason, body.to_vec());
            r.headers.push(("ETag".into(), format!("\"{generation}\"")));
            r.headers
                .push(("x-goog-generation".into(), generation.to_string()));
            r.headers.push((
                "Last-Modified".into(),
                t.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
            ));
            if let Some(cr) = range {
                r.headers.push(("Content-Range".into(), cr));
            }
            r
        }
        ("DELETE", false) => {
            if lock(st).objects.remove(&name).is_some() {
                resp(204, "No Content", Vec::new())
            } else {
                resp(
                    404,
                    "Not Found",
                    error_xml("NoSuchKey", "The specified key does not exist."),
                )
            }
        }
        _ => resp(
            400,
            "Bad Request",
            error_xml("FakeUnsupported", "request not part of the fake"),
        ),
    }
}

async fn serve(
    sock: TcpStream,
    st: Arc<Mutex<State>>,
    bucket: String,
    dialect: Dialect,
) -> std::io::Result<()> {
    let mut r = BufReader::new(sock);
    while let Some(req) = read_request(&mut r).await? {
        let res = handle(&req, &st, &bucket, dialect);
        if res.drop {
            return Ok(());
        }
        let mut head = format!("HTTP/1.1 {} {}\r\n", res.status, res.reason);
        for (k, v) in &res.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        // A HEAD answer carries the length of the body it does not send.
        head.push_str(&format!("Content-Length: {}\r\n\r\n", res.body.len()));
        let w = r.get_mut();
        w.write_all(head.as_bytes()).await?;
        if req.method != "HEAD" {
            w.write_all(&res.body).await?;
        }
        w.flush().await?;
    }
    Ok(())
}

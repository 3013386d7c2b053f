//! A TCP fault proxy for tests: it sits on 127.0.0.1 in front of a real server (LocalStack,
//! Azurite), understands HTTP/1.1 message boundaries (headers, then a `Content-Length` or
//! chunked body; responses also end at EOF), and for each request, as a seeded
//! [`Schedule`] decides, either forwards it untouched or injects one [`Fault`]:
//!
//! - drop the connection before forwarding (the server never sees the request);
//! - forward, wait for the server's whole response (so a write has landed), then drop the
//!   connection without answering (a lost response);
//! - stall, before or after forwarding, answering nothing until the client gives up (its
//!   request timeout) and closes the connection;
//! - deliver late: stall until the client gave up, and only then forward (a request held
//!   in a queue somewhere lands after the client stopped waiting for it);
//! - answer 503, 429 or 500 itself, before forwarding, or after forwarding (the write
//!   landed, the client is told it failed).
//!
//! Each request gets a fresh upstream connection (so a keep-alive connection the server
//! closed is never reused), while the client's connection is kept alive across requests,
//! as `object_store`'s pooled HTTP client expects. `object_store` sends every body with a
//! `Content-Length`; chunked bodies are understood anyway.
//!
//! The decision for a request is a hash of (seed, epoch, method, path with ids masked,
//! how often that method and path were seen in this epoch), so a schedule does not depend
//! on the order in which concurrent requests arrive.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Longest a stall waits for the client to give up. A client that is still waiting then
/// has no working timeout: the stall is counted as expired, and tests assert none did.
pub const STALL_LIMIT: Duration = Duration::from_secs(60);
/// Largest header block accepted (test traffic is far smaller).
const MAX_HEAD: usize = 64 * 1024;

/// What the proxy does to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// Close the connection without forwarding the request.
    DropBefore,
    /// Forward, read the whole response, close without answering: the write landed.
    DropAfter,
    /// Do not forward; answer nothing until the client closes (its timeout).
    StallBefore,
    /// Forward, read the whole response, answer nothing until the client closes.
    StallAfter,
    /// Answer nothing until the client closes, then forward: the write lands late.
    DeliverLate,
    /// Answer this status without forwarding.
    Status(u16),
    /// Forward (the write lands), then answer this status instead of the server's answer.
    StatusAfter(u16),
}

impl Fault {
    /// A stable name for counts.
    pub fn name(self) -> String {
        match self {
            Fault::DropBefore => "drop before forwarding".into(),
            Fault::DropAfter => "drop after forwarding (write landed)".into(),
            Fault::StallBefore => "stall before forwarding".into(),
            Fault::StallAfter => "stall after forwarding (write landed)".into(),
            Fault::DeliverLate => "stall, forward once the client gave up (lands late)".into(),
            Fault::Status(s) => format!("{s} before forwarding"),
            Fault::StatusAfter(s) => format!("{s} after forwarding (write landed)"),
        }
    }

    fn is_stall(self) -> bool {
        matches!(
            self,
            Fault::StallBefore | Fault::StallAfter | Fault::DeliverLate
        )
    }
}

/// Which requests fail, and how: seeded, so a run can be repeated.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed (print it with the results).
    pub seed: u64,
    /// Which part of the test this is (e.g. one per CLI run); part of every decision.
    pub epoch: u64,
    /// Faults per 1,000 requests.
    pub per_mille: u64,
    /// The faults to choose from, with weights.
    pub mix: Vec<(Fault, u64)>,
    /// Most stalls per epoch (each costs a client timeout); later stalls become 503s.
    pub max_stalls: u64,
}

impl Schedule {
    /// No faults at all.
    pub fn none() -> Self {
        Self {
            seed: 0,
            epoch: 0,
            per_mille: 0,
            mix: Vec::new(),
            max_stalls: 0,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    schedule: Option<Schedule>,
    /// (method, masked path) → requests seen in this epoch.
    seen: BTreeMap<(String, String), u64>,
    stalls_this_epoch: u64,
    /// Fault name → times injected.
    injected: BTreeMap<String, u64>,
    /// Requests forwarded without a fault.
    passed: u64,
    /// Stalls the client never ended (no working timeout).
    stalls_expired: u64,
    /// Proxy-side failures (the upstream refused a connection, a malformed message).
    proxy_errors: Vec<String>,
    /// "METHOD path → fault" for every injected fault, for failure messages.
    log: Vec<String>,
}

/// Injected faults and passed requests, as counted by the proxy.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Fault name → times injected.
    pub injected: BTreeMap<String, u64>,
    /// Requests forwarded without a fault.
    pub passed: u64,
    /// Stalls the client never ended.
    pub stalls_expired: u64,
    /// Proxy-side failures.
    pub proxy_errors: Vec<String>,
}

impl Counts {
    /// Faults injected in all.
    pub fn total_injected(&self) -> u64 {
        self.injected.values().sum()
    }
}

/// A running proxy; stopped when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    /// Client connections being served (a forwarded request may still be landing).
    active: tokio::sync::watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
}

/// Counts a served connection until dropped.
struct Active(Arc<tokio::sync::watch::Sender<u64>>);

impl Active {
    fn new(tx: &Arc<tokio::sync::watch::Sender<u64>>) -> Self {
        tx.send_modify(|n| *n += 1);
        Self(tx.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(s: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl FaultProxy {
    /// Listen on a free port of 127.0.0.1 and forward to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> std::io::Result<Self> {
        let up = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let upstream: SocketAddr = up.parse().map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{up}: the proxy needs an http://<ip>:<port> upstream: {e}"),
            )
        })?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        let (tx, active) = tokio::sync::watch::channel(0u64);
        let tx = Arc::new(tx);
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let st = st.clone();
                let guard = Active::new(&tx);
                tokio::spawn(async move {
                    let _guard = guard;
                    if let Err(e) = serve(conn, upstream, &st).await {
                        // A client that hangs up mid-request is ordinary (its timeout);
                        // anything else is the proxy's own failure, reported to the test.
                        if !matches!(
                            e.kind(),
                            std::io::ErrorKind::UnexpectedEof
                                | std::io::ErrorKind::ConnectionReset
                                | std::io::ErrorKind::BrokenPipe
                        ) {
                            lock(&st).proxy_errors.push(e.to_string());
                        }
                    }
                });
            }
        });
        Ok(Self {
            addr,
            state,
            active,
            task,
        })
    }

    /// Wait until no client connection is being served: every request the proxy forwarded
    /// has been answered by the server, so nothing more can land. (Call after the client
    /// process exited; its connections are closed then.)
    pub async fn idle(&self) {
        let mut rx = self.active.clone();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Use `schedule` from now on (its epoch's request counts start afresh).
    pub fn set_schedule(&self, schedule: Schedule) {
        let mut s = lock(&self.state);
        s.schedule = Some(schedule);
        s.seen.clear();
        s.stalls_this_epoch = 0;
    }

    /// Counts so far.
    pub fn counts(&self) -> Counts {
        let s = lock(&self.state);
        Counts {
            injected: s.injected.clone(),
            passed: s.passed,
            stalls_expired: s.stalls_expired,
            proxy_errors: s.proxy_errors.clone(),
        }
    }

    /// "METHOD path → fault" of every fault injected so far.
    pub fn log(&self) -> Vec<String> {
        lock(&self.state).log.clone()
    }
}

/// Mask ids (runs of 32 or more hex digits and dashes: UUIDs, digests, unique prefixes),
/// so a decision does not depend on random ids.
fn mask_ids(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 32 {
            out.push('*');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in path.chars() {
        if c.is_ascii_hexdigit() || c == '-' {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

fn decide(state: &Mutex<State>, method: &str, target: &str) -> Option<Fault> {
    let mut s = lock(state);
    let sched = s.schedule.clone()?;
    let total: u64 = sched.mix.iter().map(|(_, w)| w).sum();
    if sched.per_mille == 0 || total == 0 {
        return None;
    }
    let masked = mask_ids(target);
    let n = s
        .seen
        .entry((method.to_string(), masked.clone()))
        .and_modify(|n| *n += 1)
        .or_insert(0);
    let mut h = Sha256::new();
    h.update(sched.seed.to_be_bytes());
    h.update(sched.epoch.to_be_bytes());
    h.update(method.as_bytes());
    h.update([0]);
    h.update(masked.as_bytes());
    h.update(n.to_be_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    let r = u64::from_be_bytes(b);
    if r % 1000 >= sched.per_mille {
        return None;
    }
    let mut pick = (r / 1000) % total;
    let mut fault = None;
    for (f, w) in &sched.mix {
        if pick < *w {
            fault = Some(*f);
            break;
        }
        pick -= w;
    }
    let mut fault = fault?;
    if fault.is_stall() {
        if s.stalls_this_epoch >= sched.max_stalls {
            fault = Fault::Status(503);
        } else {
            s.stalls_this_epoch += 1;
        }
    }
    Some(fault)
}

/// One HTTP/1.1 message as read off the wire.
#[derive(Debug)]
struct Message {
    /// The whole message, exactly as received.
    raw: Vec<u8>,
    /// Request: method; response: status code.
    first: String,
    /// Request: target; response: reason.
    second: String,
    /// The peer asked to close after this message (or the body ended at EOF).
    close: bool,
}

/// Read one message. `None` when the peer closed before sending anything.
/// `head_request`: a response to HEAD has no body whatever its headers say.
async fn read_message<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    is_request: bool,
    head_request: bool,
) -> std::io::Result<Option<Message>> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let mut raw = Vec::new();
    let mut lines = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = r.read_until(b'\n', &mut line).await?;
        if n == 0 {
            if raw.is_empty() {
                return Ok(None);
            }
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        raw.extend_from_slice(&line);
        if raw.len() > MAX_HEAD {
            return Err(bad("header block over 64 KiB".into()));
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        if text.is_empty() {
            if lines.is_empty() {
                continue; // stray CRLF between messages
            }
            break;
        }
        lines.push(text);
    }
    let start = lines.remove(0);
    let mut parts = start.splitn(3, ' ');
    let (a, b, c) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let (first, second) = if is_request {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), c.to_string())
    };
    let mut length = None;
    let mut chunked = false;
    let mut close = false;
    for l in &lines {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
        match k.as_str() {
            "content-length" => {
                length = Some(
                    v.parse::<usize>()
                        .map_err(|e| bad(format!("Content-Length {v:?}: {e}")))?,
                )
            }
            "transfer-encoding" => chunked = v.contains("chunked"),
            "connection" => close = v.contains("close"),
            _ => {}
        }
    }
    let status: u16 = if is_request {
        0
    } else {
        first.parse().unwrap_or(0)
    };
    let no_body =
        !is_request && (head_request || status / 100 == 1 || status == 204 || status == 304);
    if no_body {
    } else if chunked {
        loop {
            let mut line = Vec::new();
            if r.read_until(b'\n', &mut line).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            raw.extend_from_slice(&line);
            let text = String::from_utf8_lossy(&line);
            let size_text = text.trim().split(';').next().unwrap_or("").to_string();
            let size = usize::from_str_radix(&size_text, 16)
                .map_err(|e| bad(format!("chunk size {size_text:?}: {e}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let mut t = Vec::new();
                    if r.read_until(b'\n', &mut t).await? == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    raw.extend_from_slice(&t);
                    if t == b"\r\n" || t == b"\n" {
                        break;
                    }
                }
                break;
            }
            let at = raw.len();
            raw.resize(at + size + 2, 0);
            r.read_exact(&mut raw[at..]).await?;
        }
    } else if let Some(n) = length {
        let at = raw.len();
        raw.resize(at + n, 0);
        r.read_exact(&mut raw[at..]).await?;
    } else if !is_request {
        // A response without length or chunking ends when the server closes.
        r.read_to_end(&mut raw).await?;
        close = true;
    }
    Ok(Some(Message {
        raw,
        first,
        second,
        close,
    }))
}

/// Send one request upstream on a fresh connection and read its whole response.
async fn forward(upstream: SocketAddr, req: &Message) -> std::io::Result<Message> {
    let mut conn = TcpStream::connect(upstream).await?;
    conn.write_all(&req.raw).await?;
    let mut r = BufReader::new(conn);
    loop {
        let resp = read_message(&mut r, false, req.first == "HEAD")
            .await?
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "{} {}: upstream closed without a response",
                        req.first, req.second
                    ),
                )
            })?;
        // An interim 1xx answer is followed by the real one.
        if !resp.first.starts_with('1') {
            return Ok(resp);
        }
    }
}

/// The answer the proxy itself gives for an injected status (an XML error body, as S3
/// and Azure send, so the client parses it as it would a real one).
fn status_response(status: u16) -> Vec<u8> {
    let (reason, code) = match status {
        429 => ("Too Many Requests", "SlowDown"),
        500 => ("Internal Server Error", "InternalError"),
        _ => ("Service Unavailable", "ServiceUnavailable"),
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>injected by the test fault proxy</Message></Error>"
    );
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nx-lineage-fault-proxy: {status}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Wait until the client closes its connection (it timed out), at most [`STALL_LIMIT`].
async fn stall<R: AsyncRead + Unpin>(client: &mut BufReader<R>, state: &Mutex<State>) {
    let mut buf = [0u8; 1024];
    let waited = tokio::time::timeout(STALL_LIMIT, async {
        loop {
            match client.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    if waited.is_err() {
        lock(state).stalls_expired += 1;
    }
}

/// Serve one client connection, request by request.
async fn serve(conn: TcpStream, upstream: SocketAddr, state: &Mutex<State>) -> std::io::Result<()> {
    let (cr, mut cw) = conn.into_split();
    let mut client = BufReader::new(cr);
    while let Some(req) = read_message(&mut client, true, false).await? {
        let fault = decide(state, &req.first, &req.second);
        {
            let mut s = lock(state);
            match fault {
                None => s.passed += 1,
                Some(f) => {
                    *s.injected.entry(f.name()).or_insert(0) += 1;
                    s.log
                        .push(format!("{} {} → {}", req.first, req.second, f.name()));
                }
            }
        }
        let upstream_answer = match fault {
            None
            | Some(Fault::DropAfter)
            | Some(Fault::StallAfter)
            | Some(Fault::StatusAfter(_)) => Some(forward(upstream, &req).await?),
            _ => None,
        };
        match (fault, upstream_answer) {
            (None, Some(resp)) => {
                cw.write_all(&resp.raw).await?;
                if resp.close || req.close {
                    return Ok(());
                }
            }
            (Some(Fault::DropBefore | Fault::DropAfter), _) => return Ok(()),
            (Some(Fault::StallBefore | Fault::StallAfter), _) => {
                stall(&mut client, state).await;
                return Ok(());
            }
            (Some(Fault::DeliverLate), _) => {
                stall(&mut client, state).await;
                forward(upstream, &req).await?;
                return Ok(());
            }
            (Some(Fault::Status(s) | Fault::StatusAfter(s)), _) => {
                cw.write_all(&status_response(s)).await?;
            }
            (None, None) => return Ok(()),
        }
    }
    Ok(())
}

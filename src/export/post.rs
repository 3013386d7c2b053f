//! Sending events to an OpenLineage HTTP endpoint, as the standard HTTP transport of the
//! OpenLineage clients does: `POST <url>/<endpoint>` (endpoint default `api/v1/lineage`,
//! joined like the Python client's `urljoin`), `Content-Type: application/json`, and
//! `Authorization: Bearer <key>` when an API key is given (the CLI reads
//! `OPENLINEAGE_API_KEY`). The key is never logged or put in an error, and neither is a
//! query value of the URL (`?token=…`): messages name the URL redacted.
//!
//! A hostile or broken endpoint cannot make a post costly or send the event elsewhere: at
//! most [`BODY_READ`] bytes of an answer are read (the connection is dropped with the
//! rest), and a redirect is followed only within the endpoint's origin (scheme, host and
//! port): a redirect to another origin is an undelivered event that says so.
//!
//! Every event is retried with exponential backoff (and `Retry-After` where the server
//! sends one) after a transport error, a timeout, or HTTP 408, 425, 429, 500, 502, 503 or
//! 504; any other non-2xx answer is final. The outcome of each event is returned, so no
//! event is ever lost silently: the CLI exits non-zero naming every undelivered event.
//! Events are deterministic, so re-running the export re-sends identical events.

use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};

/// The OpenLineage clients' default endpoint path.
pub const DEFAULT_ENDPOINT: &str = "api/v1/lineage";
/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How much of an error response body is quoted.
const BODY_QUOTE: usize = 300;
/// How much of an answer's body is read at most; the rest is never read.
pub const BODY_READ: usize = 4096;
/// Redirects followed (within the endpoint's origin) for one attempt.
const MAX_REDIRECTS: usize = 5;

/// Where and how to send.
#[derive(Debug, Clone)]
pub struct PostConfig {
    /// The endpoint's full URL.
    pub url: String,
    /// Bearer token (not shown by `Debug`).
    pub api_key: Option<Secret>,
    /// Time one request may take.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
    /// Wait before the first retry; doubled for each further one (at most 30 s).
    pub backoff: Duration,
}

impl PostConfig {
    /// The URL for messages and logs: userinfo, query values and fragment redacted.
    pub fn shown(&self) -> String {
        crate::base::text::redact_url(&self.url)
    }
}

/// A string that `Debug` prints as `***`.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// The endpoint URL of a base URL and an endpoint path. The base's path is a directory
/// the endpoint is joined below (`http://h/ol` and `api/v1/lineage` post to
/// `http://h/ol/api/v1/lineage`; an endpoint starting with `/` replaces the path), and the
/// base's query is kept (put before any query of the endpoint's). An empty endpoint posts
/// to `base` itself.
pub fn endpoint_url(base: &str, endpoint: &str) -> Result<String> {
    let shown = crate::base::text::redact_url(base);
    let usage = |why: String| Error::invalid(Param::Post, text![format!("{shown}: {why}")]);
    let mut b = url::Url::parse(base.trim()).map_err(|e| usage(e.to_string()))?;
    if !matches!(b.scheme(), "http" | "https") {
        return Err(usage(
            "an OpenLineage endpoint is an http:// or https:// URL".into(),
        ));
    }
    if !b.username().is_empty() || b.password().is_some() {
        return Err(usage(
            "credentials do not belong in the URL; set OPENLINEAGE_API_KEY".into(),
        ));
    }
    if b.fragment().is_some() {
        return Err(usage("a #fragment is never sent; leave it out".into()));
    }
    if endpoint.is_empty() {
        return Ok(b.to_string());
    }
    let base_query = b.query().map(str::to_string);
    b.set_query(None);
    if !b.path().ends_with('/') {
        let dir = format!("{}/", b.path());
        b.set_path(&dir);
    }
    let mut u = b.join(endpoint).map_err(|e| {
        usage(format!(
            "endpoint {}: {e}",
            crate::base::text::redact_url(endpoint)
        ))
    })?;
    if let Some(q) = base_query {
        let joined = match u.query() {
            Some(own) if !own.is_empty() => format!("{q}&{own}"),
            _ => q,
        };
        u.set_query(Some(&joined));
    }
    Ok(u.to_string())
}

/// An event that was not delivered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// Its position in the export (0-based).
    pub index: usize,
    /// What it is about (e.g. `run_id=R`).
    pub label: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last answer or error.
    pub reason: String,
}

/// What happened to the events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Events the endpoint accepted (2xx).
    pub delivered: usize,
    /// Attempts over all events.
    pub attempts: u32,
    /// Events it did not accept, in export order.
    pub undelivered: Vec<Undelivered>,
}

impl Delivery {
    /// An error naming every undelivered event, or `Ok` when all were delivered.
    pub fn into_result(self, url: &str) -> Result<Delivery> {
        if self.undelivered.is_empty() {
            return Ok(self);
        }
        let total = self.delivered + self.undelivered.len();
        let list: Vec<String> = self
            .undelivered
            .iter()
            .map(|u| {
                format!(
                    "event {} ({}) after {} attempt(s): {}",
                    u.index + 1,
                    u.label,
                    u.attempts,
                    u.reason
                )
            })
            .collect();
        Err(Error::Delivery {
            url: url.to_string(),
            message: format!(
                "{} of {total} events were NOT delivered (the others were): {}",
                self.undelivered.len(),
                list.join("; ")
            ),
        })
    }
}

enum Attempt {
    Delivered,
    Retry(String, Option<Duration>),
    Final(String),
}

/// Send each `(label, body)` in order; every event gets its own retries, and a failed
/// event does not stop the ones after it.
pub async fn post_all(cfg: &PostConfig, events: &[(String, String)]) -> Result<Delivery> {
    let client = reqwest::Client::builder()
        .timeout(cfg.timeout)
        .redirect(reqwest::redirect::Policy::custom(same_origin_only))
        .user_agent(concat!("lineage-store/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::internal(format!("cannot build an HTTP client: {e}")))?;
    let mut d = Delivery::default();
    // The waits before retries 1, 2, ...: `backoff`, `2·backoff`, `4·backoff`, ... up to
    // MAX_BACKOFF, at most `retries` of them (a Retry-After answer overrides one).
    let delays = ExponentialBuilder::default()
        .with_min_delay(cfg.backoff)
        .with_factor(2.0)
        .with_max_delay(MAX_BACKOFF)
        .with_max_times(cfg.retries as usize);
    for (index, (label, body)) in events.iter().enumerate() {
        let mut attempts = 0;
        let mut waits = delays.build();
        loop {
            attempts += 1;
            d.attempts += 1;
            let outcome = attempt(&client, cfg, body).await;
            let (reason, after) = match outcome {
                Attempt::Delivered => {
                    d.delivered += 1;
                    break;
                }
                Attempt::Final(reason) => {
                    d.undelivered.push(Undelivered {
                        index,
                        label: label.clone(),
                        attempts,
                        reason,
                    });
                    break;
                }
                Attempt::Retry(reason, after) => (reason, after),
            };
            let Some(next) = waits.next() else {
                d.undelivered.push(Undelivered {
                    index,
                    label: label.clone(),
                    attempts,
                    reason,
                });
                break;
            };
            let wait = after.unwrap_or(next).min(MAX_BACKOFF);
            tracing::warn!(event = index + 1, %label, attempt = attempts, %reason, ?wait, "OpenLineage endpoint did not accept the event; retrying");
            tokio::time::sleep(wait).await;
        }
    }
    Ok(d)
}

async fn attempt(client: &reqwest::Client, cfg: &PostConfig, body: &str) -> Attempt {
    let mut req = client
        .post(&cfg.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(k) = &cfg.api_key {
        req = req.bearer_auth(&k.0);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        // No answer: the event may or may not have arrived. Consumers key events by run
        // and event type, so sending it again is safe; losing it is not.
        Err(e) => return Attempt::Retry(transport_error(e), None),
    };
    let status = resp.status();
    if status.is_success() {
        return Attempt::Delivered;
    }
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .map(|v| crate::base::text::redact_url(&String::from_utf8_lossy(v.as_bytes())));
    let text = read_some(resp).await;
    let mut quoted: String = text.trim().chars().take(BODY_QUOTE).collect();
    if quoted.len() < text.trim().len() {
        quoted.push('…');
    }
    let quoted = crate::base::text::printable(&quoted).into_owned();
    let mut reason = if quoted.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {quoted}")
    };
    if let (true, Some(to)) = (status.is_redirection(), location) {
        let to = crate::base::text::printable(&to).into_owned();
        reason.push_str(&format!(
            " (redirect to {to} not followed: the event is sent only within the endpoint's origin)"
        ));
    }
    if matches!(status.as_u16(), 408 | 425 | 429 | 500 | 502 | 503 | 504) {
        Attempt::Retry(reason, retry_after)
    } else {
        Attempt::Final(reason)
    }
}

/// At most [`BODY_READ`] bytes of an answer's body; the rest is left unread (dropping the
/// response closes its connection), so a huge or endless answer costs nothing.
async fn read_some(mut resp: reqwest::Response) -> String {
    let mut got: Vec<u8> = Vec::new();
    while got.len() < BODY_READ {
        match resp.chunk().await {
            Ok(Some(c)) => got.extend_from_slice(&c[..c.len().min(BODY_READ - got.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The redirect policy: follow within the first URL's origin (at most
/// [`MAX_REDIRECTS`]); a redirect elsewhere is not followed, and its answer is returned
/// as the attempt's (an event is never re-posted to another host).
fn same_origin_only(a: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let first = a.previous().first().map(url::Url::origin);
    if first.as_ref() != Some(&a.url().origin()) || a.previous().len() > MAX_REDIRECTS {
        a.stop()
    } else {
        a.follow()
    }
}

fn transport_error(e: reqwest::Error) -> String {
    // Without the URL, whose query may hold a token; reqwest's message never names a
    // header, so the key stays out of it too.
    let e = e.without_url();
    let mut s = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    if e.is_timeout() {
        s.push_str(" (timed out)");
    }
    s
}

//! The TSA's HTTP transport (RFC 3161 §3.4): `POST` of the DER request as
//! `application/timestamp-query`, the DER response back as `application/timestamp-reply`.
//! Bounded: a timeout for the whole exchange, at most
//! [`crate::format::timestamp::MAX_REPLY_BYTES`] of the answer read (the connection is
//! dropped with the rest), no redirect followed.

use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::transport::words as transport;
use crate::format::timestamp::MAX_REPLY_BYTES;

/// Time one request may take, by default.
pub const DEFAULT_TSA_TIMEOUT: Duration = Duration::from_secs(30);

/// A time-stamping authority, by URL.
#[derive(Debug, Clone)]
pub struct Tsa {
    url: url::Url,
    client: reqwest::Client,
}

impl Tsa {
    /// A TSA at `url` (http or https, no credentials in it), each request bounded by
    /// `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Self> {
        let shown = crate::base::text::redact_url(url);
        let bad = |why: &str| Error::invalid(Param::Tsa, text![format!("{shown}: {why}")]);
        let u = url::Url::parse(url.trim()).map_err(|e| bad(&e.to_string()))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(bad("a TSA is an http:// or https:// URL"));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(bad("credentials do not belong in the URL"));
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| bad(&e.to_string()))?;
        Ok(Self { url: u, client })
    }

    /// The URL for messages: query values redacted.
    pub fn shown(&self) -> String {
        crate::base::text::redact_url(self.url.as_str())
    }

    /// Send a DER request; the DER answer, or why there is none.
    pub(crate) async fn ask(&self, query: &[u8]) -> std::result::Result<Vec<u8>, String> {
        let resp = self
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/timestamp-query")
            .header(reqwest::header::ACCEPT, "application/timestamp-reply")
            .body(query.to_vec())
            .send()
            .await
            .map_err(|e| format!("{}: {}", self.shown(), transport(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("{} answered HTTP {status}", self.shown()));
        }
        read_bounded(resp)
            .await
            .map_err(|e| format!("{}: {e}", self.shown()))
    }
}

/// The body, refused past [`MAX_REPLY_BYTES`].
async fn read_bounded(mut resp: reqwest::Response) -> std::result::Result<Vec<u8>, String> {
    if resp.content_length().is_some_and(|n| n > MAX_REPLY_BYTES) {
        return Err(format!("an answer of more than {MAX_REPLY_BYTES} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport(&e))? {
        if (body.len() + chunk.len()) as u64 > MAX_REPLY_BYTES {
            return Err(format!("an answer of more than {MAX_REPLY_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

//! A C2SP tlog witness over HTTP (`c2sp.org/tlog-witness`): `POST <submission
//! prefix>/add-checkpoint`, each answer mapped to what it means. Bounded: a connect
//! timeout, a read timeout and a timeout for the whole exchange, at most
//! [`MAX_ANSWER_BYTES`] of an answer read (the connection is dropped with the rest), no
//! redirect followed.

use std::time::Duration;

use crate::base::cosign::CosignError;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::transport::words as transport;
use crate::format::cosignature::{parse_vkey, Cosigner};
use crate::format::tlog_witness::{parse_size, ADD_CHECKPOINT, MAX_ANSWER_BYTES};

/// Time one request to a witness may take, by default.
pub const DEFAULT_WITNESS_TIMEOUT: Duration = Duration::from_secs(10);

/// A witness: where it takes checkpoints, and the key its cosignatures verify under.
#[derive(Debug, Clone)]
pub struct TlogWitness {
    submit: url::Url,
    shown: String,
    cosigner: Cosigner,
    client: reqwest::Client,
}

/// What an `add-checkpoint` answered, short of a cosignature.
#[derive(Debug)]
pub(crate) enum Answer {
    /// 200: the body (signature lines, unchecked).
    Cosigned(String),
    /// 409: the size the witness last cosigned, when the body states one.
    Conflict(Option<u64>),
    /// Anything else.
    Refused(CosignError),
}

impl TlogWitness {
    /// The witness at submission prefix `url` (http or https, no credentials in it) whose
    /// verifier key is `vkey` (`<name>+<id>+<base64(0x04 || key)>`), each request bounded
    /// by `timeout`.
    pub fn new(url: &str, vkey: &str, timeout: Duration) -> Result<Self> {
        let shown = crate::base::text::redact_url(url);
        let bad = |why: &str| Error::invalid(Param::WitnessUrl, text![format!("{shown}: {why}")]);
        let mut u = url::Url::parse(url.trim()).map_err(|e| bad(&e.to_string()))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(bad("a witness is an http:// or https:// URL"));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(bad("credentials do not belong in the URL"));
        }
        let cosigner = parse_vkey(vkey).map_err(|why| {
            let shown = crate::base::text::printable(vkey.trim()).into_owned();
            Error::invalid(Param::WitnessKey, text![format!("{shown} {why}")])
        })?;
        if !u.path().ends_with('/') {
            u.set_path(&format!("{}/", u.path()));
        }
        let submit = u.join(ADD_CHECKPOINT).map_err(|e| bad(&e.to_string()))?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .read_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| bad(&e.to_string()))?;
        Ok(Self {
            submit,
            shown,
            cosigner,
            client,
        })
    }

    /// The witness for messages: its key name and URL (query values redacted).
    pub fn shown(&self) -> String {
        format!("{} ({})", self.cosigner.name, self.shown)
    }

    /// The key its cosignatures must verify under.
    pub fn cosigner(&self) -> &Cosigner {
        &self.cosigner
    }

    /// POST an `add-checkpoint` body for a checkpoint under `origin` of `tree_size`
    /// leaves, sent with old size `old`.
    pub(crate) async fn add_checkpoint(
        &self,
        body: String,
        origin: &str,
        old: u64,
        tree_size: u64,
    ) -> Answer {
        let sent = self
            .client
            .post(self.submit.clone())
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(body)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => return Answer::Refused(CosignError::Unreachable { why: transport(&e) }),
        };
        let status = resp.status().as_u16();
        let text = match read_bounded(resp).await {
            Ok(t) => t,
            Err(e) => return Answer::Refused(e),
        };
        match status {
            200 => Answer::Cosigned(text),
            409 => Answer::Conflict(parse_size(&text)),
            400 => Answer::Refused(CosignError::BadRequest {
                body: crate::base::text::printable(
                    &text.trim().chars().take(200).collect::<String>(),
                )
                .into_owned(),
            }),
            403 => Answer::Refused(CosignError::Forbidden {
                origin: origin.to_string(),
            }),
            404 => Answer::Refused(CosignError::UnknownOrigin {
                origin: origin.to_string(),
            }),
            422 => Answer::Refused(CosignError::ProofRefused { old, tree_size }),
            status => Answer::Refused(CosignError::Status { status }),
        }
    }
}

/// The body as text, refused past [`MAX_ANSWER_BYTES`] or when it is not UTF-8.
async fn read_bounded(mut resp: reqwest::Response) -> std::result::Result<String, CosignError> {
    let too_large = || CosignError::BadAnswer {
        why: format!("an answer of more than {MAX_ANSWER_BYTES} bytes (not read)"),
    };
    if resp.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if (body.len() + chunk.len()) as u64 > MAX_ANSWER_BYTES {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(CosignError::Unreachable { why: transport(&e) }),
        }
    }
    String::from_utf8(body).map_err(|_| CosignError::BadAnswer {
        why: "an answer that is not UTF-8 text".into(),
    })
}

//! Outside witnesses that speak `c2sp.org/tlog-witness`: after a seal, `lineage seal
//! --witness-url URL --witness-key VKEY` sends the newest seal's C2SP checkpoint to each
//! witness (`add-checkpoint`, with the RFC 6962 consistency proof from the size the
//! witness last cosigned), checks the cosignature it answers (`cosignature/v1`, under
//! the key given) and stores the checkpoint with that cosignature, create-only:
//!
//! ```text
//! _lineage/tlog/cosignatures/<seq, 20 digits>/<sha256 of the witness's vkey>
//! ```
//!
//! a signed note: the checkpoint's text, the log's signature line, the witness's
//! cosignature line. `verify --witness-key VKEY [--witness-quorum K]` checks them
//! ([`crate::audit::cosigners`]).
//!
//! **The old size.** The witness's size is taken from the cosignature stored for the
//! seal before (its tree size), else 0. A witness that cosigned another size answers 409
//! with it; the checkpoint is sent once more with the proof from that size (a size larger
//! than the checkpoint's is named: the witness has seen a larger tree under this origin).
//!
//! **A witness that is down does not stop sealing.** The seal is published before any
//! witness is asked; a witness that does not answer within the timeout, or refuses, is
//! named with why ([`crate::base::cosign::CosignError`]) in [`PushOutcome::failed`]. The
//! next push (the next `seal`, or `seal` with nothing new) sends the newest checkpoint
//! with the proof from the witness's own size, so the witness catches up in one request;
//! the seals in between are not cosigned by it (a witness cosigns only its newest view).

mod http;

use bytes::Bytes;
use serde::Serialize;

use crate::base::cosign::CosignError;
use crate::base::error::Result;
use crate::format::checkpoint::{self as cp, parse_signatures};
use crate::format::cosignature::MAX_COSIGNED_BYTES;
use crate::format::keys;
use crate::format::tlog_witness::request;
use crate::history::cosignature::{check_stored, cosigned, find, Found};
use crate::history::head::read_seal;
use crate::history::tiles::consistency_from_tiles;
use crate::publish::checked::publish_racing;
use crate::publish::AtomicPublisher;

use http::Answer;
pub use http::{TlogWitness, DEFAULT_WITNESS_TIMEOUT};

/// A witness that cosigned (or had cosigned) the checkpoint.
#[derive(Debug, Clone, Serialize)]
pub struct Cosigned {
    /// The witness (key name and URL).
    pub witness: String,
    /// The seal.
    pub seq: u64,
    /// The witness's time of the cosignature (RFC 3339).
    pub cosigned_utc: String,
    /// The size the consistency proof was from (`None`: stored by an earlier push).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_size: Option<u64>,
    /// Where the cosigned checkpoint is stored.
    pub key: String,
}

/// A witness that did not cosign, and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotCosigned {
    /// The witness (key name and URL).
    pub witness: String,
    /// The seal.
    pub seq: u64,
    /// Why, by the protocol's answer.
    pub error: CosignError,
}

/// What one push did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PushOutcome {
    /// The seal pushed.
    pub seq: u64,
    /// Witnesses whose cosignature is stored now (new or from an earlier push).
    pub cosigned: Vec<Cosigned>,
    /// Witnesses that did not cosign.
    pub failed: Vec<NotCosigned>,
    /// Set when the seal carries no checkpoint (an unsigned seal): nothing was sent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_checkpoint: bool,
}

/// Push seal `seq`'s checkpoint to every witness (at once); see the module docs. Store
/// errors are the outer `Result`; a witness's failure is in the outcome.
pub async fn push(
    store: &dyn AtomicPublisher,
    witnesses: &[TlogWitness],
    seq: u64,
) -> Result<PushOutcome> {
    let mut out = PushOutcome {
        seq,
        ..PushOutcome::default()
    };
    let note = match read_seal(store, seq).await? {
        Some(s) => s.seal.ok().and_then(|s| s.checkpoint),
        None => None,
    };
    let Some(note) = note else {
        out.no_checkpoint = true;
        return Ok(out);
    };
    let Ok(checkpoint) = cp::parse(&note) else {
        out.no_checkpoint = true;
        return Ok(out);
    };
    let each = witnesses
        .iter()
        .map(|w| push_one(store, w, seq, &note, &checkpoint));
    for r in futures::future::join_all(each).await {
        match r? {
            Ok(c) => out.cosigned.push(c),
            Err(f) => out.failed.push(f),
        }
    }
    Ok(out)
}

/// One witness: its stored cosignature, or a request (and one resend on 409).
async fn push_one(
    store: &dyn AtomicPublisher,
    w: &TlogWitness,
    seq: u64,
    note: &str,
    c: &cp::Checkpoint,
) -> Result<std::result::Result<Cosigned, NotCosigned>> {
    let key = keys::cosignature_key(seq, &w.cosigner().vkey());
    let fail = |error| NotCosigned {
        witness: w.shown(),
        seq,
        error,
    };
    if let Some(stored) = stored_text(store, &key).await? {
        return Ok(match check_stored(&stored, note, w.cosigner()) {
            Ok(t) => Ok(done(w, seq, t, None, key)),
            Err(why) => Err(fail(CosignError::BadAnswer {
                why: format!("{key} holds a cosignature that does not check ({why}); `lineage verify` names it"),
            })),
        });
    }
    let mut old = previous_size(store, w, seq)
        .await?
        .filter(|&m| m <= c.tree_size)
        .unwrap_or(0);
    let mut resent = false;
    loop {
        let proof = consistency_from_tiles(store, old, c.tree_size).await?;
        let Some(body) = request(old, &proof, note) else {
            return Ok(Err(fail(CosignError::BadAnswer {
                why: format!(
                    "a consistency proof of {} hashes, more than the protocol's 63",
                    proof.len()
                ),
            })));
        };
        match w.add_checkpoint(body, &c.origin, old, c.tree_size).await {
            Answer::Cosigned(lines) => {
                return Ok(match accept(w, c, &lines) {
                    Ok((t, line)) => {
                        publish_racing(store, &key, Bytes::from(cosigned(note, &line))).await?;
                        Ok(done(w, seq, t, Some(old), key))
                    }
                    Err(e) => Err(fail(e)),
                })
            }
            Answer::Conflict(Some(size)) if size > c.tree_size => {
                return Ok(Err(fail(CosignError::AheadOfLog {
                    witness_size: size,
                    tree_size: c.tree_size,
                })))
            }
            Answer::Conflict(Some(size)) if !resent => {
                old = size;
                resent = true;
            }
            Answer::Conflict(witness_size) => {
                return Ok(Err(fail(CosignError::SizeConflict { old, witness_size })))
            }
            Answer::Refused(e) => return Ok(Err(fail(e))),
        }
    }
}

/// The cosignature by the witness's key in a 200 answer, checked over the checkpoint:
/// its timestamp and line (lines by other keys are ignored, as the protocol says).
fn accept(
    w: &TlogWitness,
    c: &cp::Checkpoint,
    lines: &str,
) -> std::result::Result<(u64, String), CosignError> {
    let sigs = parse_signatures(lines).map_err(|why| CosignError::BadAnswer {
        why: format!("the answer is not note signature lines: {why}"),
    })?;
    match find(w.cosigner(), &c.body, &sigs) {
        Found::Valid { timestamp, line } => Ok((timestamp, line)),
        Found::Missing => Err(CosignError::BadAnswer {
            why: format!(
                "the answer holds no cosignature by {} (key id {:08x}), the key given",
                w.cosigner().name,
                w.cosigner().id
            ),
        }),
        Found::Forged(why) => Err(CosignError::BadAnswer { why }),
    }
}

fn done(w: &TlogWitness, seq: u64, t: u64, old: Option<u64>, key: String) -> Cosigned {
    Cosigned {
        witness: w.shown(),
        seq,
        cosigned_utc: crate::base::time::posix_utc(t),
        old_size: old,
        key,
    }
}

/// The size the witness last cosigned, as far as the store knows: the tree size of the
/// cosigned checkpoint stored for the seal before.
async fn previous_size(
    store: &dyn AtomicPublisher,
    w: &TlogWitness,
    seq: u64,
) -> Result<Option<u64>> {
    if seq < 2 {
        return Ok(None);
    }
    let key = keys::cosignature_key(seq - 1, &w.cosigner().vkey());
    Ok(stored_text(store, &key)
        .await?
        .and_then(|t| cp::parse(&t).ok())
        .map(|c| c.tree_size))
}

/// A stored cosigned checkpoint, as text (`None` when absent; unreadable bytes as they are).
async fn stored_text(store: &dyn AtomicPublisher, key: &str) -> Result<Option<String>> {
    let got = store.get_at_most(key, MAX_COSIGNED_BYTES).await?;
    Ok(got.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

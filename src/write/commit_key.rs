//! Commit keys: idempotent appends for jobs that their platform retries.
//!
//! With `--commit-key KEY` every flush's commit id is derived from
//! (run_id, target_crs, KEY, flush index) ([`crate::format::claim::derived_commit_id`]), so a
//! retried job publishes to the same keys and the create-only store turns the retry into
//! read-backs: one part and one pointer per flush, however often the job ran.
//!
//! Derived ids alone cannot refuse a *different* payload under a used key before anything
//! is published (a payload with more flushes would add its extra flushes before the first
//! collision is seen). So the writer first claims the key: in the pass that validates the
//! input it digests the payload (its flushes, their commit ids, row counts and the rows
//! themselves, see [`crate::write::stream`]'s `payload_summary`), creates
//! `_lineage/commit-keys/<sha256(KEY)>.json` recording that digest, and only then, in a
//! second pass, publishes parts. A claim already there for another payload refuses the
//! whole append, naming both digests, with nothing published.
//!
//! Formats: `lineage-commit-key/2` (written now) records the content digest, the number of
//! flushes and rows, and never lists the commits, so it stays small for any input and needs
//! no part encoded before the claim. `lineage-commit-key/1` (written before streaming
//! appends) listed every commit with its part's sha256; it stays readable, and a job
//! retried against such a claim encodes its flushes once without publishing them and
//! compares the format-1 digest before publishing anything.
//!
//! Resuming (`resume`, see [`crate::write::resume`]): a claim standing for another payload
//! is not a refusal; the claim stays as it is and each flush already committed is kept.
//!
//! Encoder settings: a part's bytes depend on them ([`crate::parts::encode::PartEncoding`]). A
//! retry publishes with the settings of the claim that stands (format 1, and format 2
//! without `part_encoding`: part encoding 1), so the parts an earlier attempt
//! published are read back identical instead of conflicting.

use crate::base::error::{Error, Result};
use crate::format::claim::{Claim, CLAIM_FORMAT, CLAIM_FORMAT_V1};
use crate::parts::encode::PartEncoding;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;

/// What claiming found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// The claim is ours: created now, or an earlier attempt of this payload made it; its
    /// parts are encoded with the settings that claim records (an earlier attempt may have
    /// published some of them: the retry must produce the same bytes).
    Ours(crate::publish::checked::Published, PartEncoding),
    /// A format-1 claim is there: the caller must compare its own part digests with it
    /// ([`crate::format::claim::payload_sha256`]) before publishing anything.
    Format1(Claim),
    /// A format-2 claim for another payload digest, handed back (not refused, not
    /// resumed over) because the caller said its payload `may_differ` only in the contract
    /// version it is written as: the caller compares the digest of that other writing and
    /// refuses or resumes itself.
    Other(Claim),
}

/// Claim `key` for a payload (format 2, parts encoded with `encoding`), create-only. Our
/// own earlier claim (same payload digest) counts as success, with that claim's encoding; a format-2 claim for any other payload is a conflict naming
/// both digests; a format-1 claim is returned for the caller to check.
pub(crate) async fn claim(
    store: &dyn AtomicPublisher,
    key: &str,
    payload: &crate::write::stream::payload_summary::PayloadSummary,
    encoding: PartEncoding,
    claimed_utc: String,
    resume: bool,
    may_differ: bool,
) -> Result<Claimed> {
    let claim = Claim {
        format: CLAIM_FORMAT.to_string(),
        commit_key: key.to_string(),
        payload_sha256: payload.payload_sha256.clone(),
        flushes: Some(payload.flushes),
        rows: Some(payload.rows),
        part_encoding: encoding.tag(),
        commits: Vec::new(),
        claimed_utc,
    };
    let mut bytes = serde_json::to_vec_pretty(&claim).map_err(Error::internal_from)?;
    bytes.push(b'\n');
    let object = crate::format::keys::commit_key_claim_key(key);
    let ours = claim.payload_sha256.clone();
    // `found`: the claim standing under the key when it is a format-1 one or our own.
    let kept = publish_checked(store, &object, bytes.into(), |have| {
        let other: Claim = serde_json::from_slice(have)
            .map_err(|e| format!("commit key {key:?} is claimed by an unreadable object: {e}"))?;
        if other.commit_key != key {
            return Err(format!(
                "commit key {key:?} is claimed by an object for key {:?}",
                other.commit_key
            ));
        }
        if other.format != CLAIM_FORMAT_V1 && other.format != CLAIM_FORMAT {
            return Err(format!(
                "commit key {key:?} is claimed in an unknown format {:?}",
                other.format
            ));
        }
        if other.format == CLAIM_FORMAT && other.payload_sha256 != ours {
            if may_differ {
                return Ok(other);
            }
            if !resume {
                return Err(conflict_message(key, &other.payload_sha256, &ours));
            }
            // Resuming: the claim stands; each flush is kept or written
            // ([`crate::write::resume`]), a differing payload reported per flush.
            tracing::warn!(commit_key = key, claimed = %other.payload_sha256, ours = %ours, "resuming a commit key claimed for another payload: committed flushes are kept");
        }
        Ok(other)
    })
    .await?;
    let published = kept.published;
    Ok(match kept.found {
        Some(c) if c.format == CLAIM_FORMAT_V1 => Claimed::Format1(c),
        Some(c) if may_differ && c.payload_sha256 != ours => Claimed::Other(c),
        Some(c) => Claimed::Ours(published, PartEncoding::from_tag(c.part_encoding)?),
        None => Claimed::Ours(published, PartEncoding::from_tag(encoding.tag())?),
    })
}

/// The refusal of a key claimed for another payload.
pub(crate) fn conflict_message(key: &str, existing: &str, ours: &str) -> String {
    format!(
        "commit key {key:?} was already used for a different payload: existing payload sha256 {existing}, this payload sha256 {ours}; nothing was published"
    )
}

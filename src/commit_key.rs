//! Commit keys: idempotent appends for jobs that their platform retries.
//!
//! With `--commit-key KEY` every flush's commit id is derived from
//! (run_id, target_crs, KEY, flush index) ([`crate::writer::derived_commit_id`]), so a
//! retried job publishes to the same keys and the create-only store turns the retry into
//! read-backs: one part and one pointer per flush, however often the job ran.
//!
//! Derived ids alone cannot refuse a *different* payload under a used key before anything
//! is published (a payload with more flushes would add its extra flushes before the first
//! collision is seen). So the writer first claims the key: in the pass that validates the
//! input it digests the payload (its flushes, their commit ids, row counts and the rows
//! themselves, see [`crate::stream`]'s `digest`), creates
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
//! Encoder settings: a part's bytes depend on them ([`crate::encode::PartEncoding`]). A
//! retry publishes with the settings of the claim that stands (format 1, and format 2
//! without `part_encoding`: the settings before issue 8c), so the parts an earlier attempt
//! published are read back identical instead of conflicting.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::encode::PartEncoding;
use crate::error::{Error, Result};
use crate::publish::AtomicPublisher;
use crate::writer::publish_checked;

/// Format tag of the claims written now.
pub const CLAIM_FORMAT: &str = "lineage-commit-key/2";
/// Format tag of the claims written before streaming appends (still read).
pub const CLAIM_FORMAT_V1: &str = "lineage-commit-key/1";

/// One commit a format-1 claim covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedCommit {
    /// Partition value.
    pub run_id: String,
    /// Partition value.
    pub target_crs: String,
    /// The derived commit id.
    pub commit_id: String,
    /// sha256 of the part.
    pub sha256: String,
    /// Rows in the part.
    pub rows: u64,
}

/// What `_lineage/commit-keys/<sha256(KEY)>.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// [`CLAIM_FORMAT`], or [`CLAIM_FORMAT_V1`] for older claims.
    pub format: String,
    /// The key as given.
    pub commit_key: String,
    /// Format 2: the payload's content digest (see [`crate::stream`]'s `digest`); format 1:
    /// sha256 over the commits, see [`payload_sha256`].
    pub payload_sha256: String,
    /// Format 2: flushes (commits) in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes: Option<u64>,
    /// Format 2: rows in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    /// Format 2: the encoder settings its parts are written with
    /// ([`crate::encode::PartEncoding::tag`]); absent in claims written before there was
    /// a choice, which mean [`crate::encode::PartEncoding::V1`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_encoding: Option<u32>,
    /// Format 1 only: every commit of the payload, in flush order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<ClaimedCommit>,
    /// When the key was first claimed (RFC 3339); not part of the comparison.
    pub claimed_utc: String,
}

/// The format-1 digest of a payload: sha256 over one line per commit, in flush order
/// (partitions in order of first appearance, then flush index).
pub fn payload_sha256(commits: &[ClaimedCommit]) -> String {
    let mut h = Sha256::new();
    for c in commits {
        h.update(
            format!(
                "{}\t{}\t{}\t{}\t{}\n",
                c.run_id, c.target_crs, c.commit_id, c.sha256, c.rows
            )
            .as_bytes(),
        );
    }
    hex::encode(h.finalize())
}

/// What claiming found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The claim is ours: created now, or an earlier attempt of this payload made it; its
    /// parts are encoded with the settings that claim records (an earlier attempt may have
    /// published some of them: the retry must produce the same bytes).
    Ours(crate::writer::Published, PartEncoding),
    /// A format-1 claim is there: the caller must compare its own part digests with it
    /// ([`payload_sha256`]) before publishing anything.
    Format1(Claim),
}

/// Claim `key` for a payload (format 2, parts encoded with `encoding`), create-only. Our
/// own earlier claim (same payload digest) counts as success, with that claim's encoding; a format-2 claim for any other payload is a conflict naming
/// both digests; a format-1 claim is returned for the caller to check.
pub async fn claim(
    store: &dyn AtomicPublisher,
    key: &str,
    payload: &crate::stream::append::PayloadSummary,
    encoding: PartEncoding,
    claimed_utc: String,
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
    let mut bytes =
        serde_json::to_vec_pretty(&claim).map_err(|e| Error::Internal(e.to_string()))?;
    bytes.push(b'\n');
    let object = crate::keys::commit_key_claim_key(key);
    let ours = claim.payload_sha256.clone();
    let older = std::sync::Mutex::new(None);
    let standing = std::sync::Mutex::new(encoding.tag());
    let published = publish_checked(store, &object, bytes.into(), |have| {
        let other: Claim = serde_json::from_slice(have)
            .map_err(|e| format!("commit key {key:?} is claimed by an unreadable object: {e}"))?;
        if other.commit_key != key {
            return Err(format!(
                "commit key {key:?} is claimed by an object for key {:?}",
                other.commit_key
            ));
        }
        if other.format == CLAIM_FORMAT_V1 {
            if let Ok(mut g) = older.lock() {
                *g = Some(other);
            }
            return Ok(());
        }
        if other.format != CLAIM_FORMAT {
            return Err(format!(
                "commit key {key:?} is claimed in an unknown format {:?}",
                other.format
            ));
        }
        if other.payload_sha256 == ours {
            if let Ok(mut g) = standing.lock() {
                *g = other.part_encoding;
            }
            Ok(())
        } else {
            Err(conflict_message(key, &other.payload_sha256, &ours))
        }
    })
    .await?;
    Ok(match older.into_inner().ok().flatten() {
        Some(c) => Claimed::Format1(c),
        None => {
            let tag = standing.into_inner().ok().flatten();
            Claimed::Ours(published, PartEncoding::from_tag(tag)?)
        }
    })
}

/// The refusal of a key claimed for another payload.
pub fn conflict_message(key: &str, existing: &str, ours: &str) -> String {
    format!(
        "commit key {key:?} was already used for a different payload: existing payload sha256 {existing}, this payload sha256 {ours}; nothing was published"
    )
}

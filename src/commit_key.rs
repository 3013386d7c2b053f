//! Commit keys: idempotent appends for jobs that their platform retries.
//!
//! With `--commit-key KEY` every flush's commit id is derived from
//! (run_id, target_crs, KEY, flush index) ([`crate::writer::derived_commit_id`]), so a
//! retried job publishes to the same keys and the create-only store turns the retry into
//! read-backs: one part and one pointer per flush, however often the job ran.
//!
//! Derived ids alone cannot refuse a *different* payload under a used key before anything
//! is published (a payload with more flushes would add its extra flushes before the first
//! collision is seen). So the writer first claims the key: it encodes every flush, then
//! creates `_lineage/commit-keys/<sha256(KEY)>.json` recording the payload's digest, and
//! only then publishes parts. A claim already there for another payload refuses the whole
//! append, naming both digests, with nothing published.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::publish::AtomicPublisher;
use crate::writer::{publish_checked, Published};

/// Format tag of claim objects.
pub const CLAIM_FORMAT: &str = "lineage-commit-key/1";

/// One commit a claim covers.
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
    /// Always [`CLAIM_FORMAT`].
    pub format: String,
    /// The key as given.
    pub commit_key: String,
    /// sha256 over the commits, see [`payload_sha256`].
    pub payload_sha256: String,
    /// Every commit of the payload, in flush order.
    pub commits: Vec<ClaimedCommit>,
    /// When the key was first claimed (RFC 3339); not part of the comparison.
    pub claimed_utc: String,
}

/// The digest of a payload: sha256 over one line per commit, in flush order.
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

/// Claim `key` for this payload, create-only. Our own earlier claim (same payload digest)
/// counts as success; a claim for any other payload is a conflict naming both digests.
pub async fn claim(
    store: &dyn AtomicPublisher,
    key: &str,
    commits: Vec<ClaimedCommit>,
    claimed_utc: String,
) -> Result<Published> {
    let claim = Claim {
        format: CLAIM_FORMAT.to_string(),
        commit_key: key.to_string(),
        payload_sha256: payload_sha256(&commits),
        commits,
        claimed_utc,
    };
    let mut bytes =
        serde_json::to_vec_pretty(&claim).map_err(|e| Error::Internal(e.to_string()))?;
    bytes.push(b'\n');
    let object = crate::keys::commit_key_claim_key(key);
    let ours = claim.payload_sha256.clone();
    publish_checked(store, &object, bytes.into(), |have| {
        let other: Claim = serde_json::from_slice(have)
            .map_err(|e| format!("commit key {key:?} is claimed by an unreadable object: {e}"))?;
        if other.commit_key == key && other.payload_sha256 == ours {
            Ok(())
        } else {
            Err(format!(
                "commit key {key:?} was already used for a different payload: existing payload sha256 {}, this payload sha256 {ours}; nothing was published",
                other.payload_sha256
            ))
        }
    })
    .await
}

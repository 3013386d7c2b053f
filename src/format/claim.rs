//! Commit-key claims (`_lineage/commit-keys/<sha256 of the key>.json`) and the commit ids
//! a commit key derives: what a retried job and `verify` agree on (see
//! [`crate::write::commit_key`] for the protocol).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

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
    /// Format 2: the payload's content digest (see [`crate::write::stream`]'s `payload_summary`); format 1:
    /// sha256 over the commits, see [`payload_sha256`].
    pub payload_sha256: String,
    /// Format 2: flushes (commits) in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes: Option<u64>,
    /// Format 2: rows in the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    /// Format 2: the encoder settings its parts are written with
    /// ([`crate::parts::encode::PartEncoding::tag`]); absent in claims written before there was
    /// a choice, which mean [`crate::parts::encode::PartEncoding::V1`].
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

/// The commit id a commit key derives for a flush: a UUIDv8 from
/// sha256(run_id, target_crs, key, flush index). The same job retried with the same key
/// re-publishes the same keys, so it ends with one part and one pointer per flush.
pub fn derived_commit_id(run_id: &str, target_crs: &str, key: &str, index: u64) -> Uuid {
    let mut h = Sha256::new();
    for part in ["lineage-commit-key/1", run_id, target_crs, key] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.update(index.to_be_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(b).into_uuid()
}

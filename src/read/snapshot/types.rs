//! What a snapshot is made of: its seal, and its commits with the seal of each.

use crate::format::pointer::Pointer;

/// The seal a commit was sealed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealRef {
    /// Its sequence number.
    pub seq: u64,
    /// sha256 of its exact bytes: a head digest under which the commit can be proven.
    pub sha256: String,
}

/// The seal a snapshot is "as of".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSeal {
    /// Its sequence number.
    pub seq: u64,
    /// sha256 of its exact bytes (the head digest).
    pub sha256: String,
    /// Commits it covers (every commit of seals 1..=seq).
    pub tree_size: u64,
    /// Its Merkle root.
    pub root: String,
    /// When it was made.
    pub sealed_utc: String,
}

/// One commit of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotPart {
    /// The pointer's key.
    pub pointer_key: String,
    /// sha256 of the pointer's exact bytes (what its seal records).
    pub pointer_sha256: String,
    /// The pointer: the part's key, size and digests the scan checks it against.
    pub pointer: Pointer,
    /// The seal that added it; `None` for an unsealed commit.
    pub sealed_by: Option<SealRef>,
}

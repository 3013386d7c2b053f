//! What a snapshot is made of: its seal, and its commits with the seal of each.

use crate::format::pointer::Pointer;
use crate::history::seal::StoredSeal;

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
    /// The seal that added it; `None` for an unsealed commit. For a compacted part (read
    /// in place of its sources): the seal that put the compaction into effect.
    pub sealed_by: Option<SealRef>,
    /// For a compacted part: the compaction and the original commits its rows are of
    /// (its `pointer` is then the compaction record read as one, whose `commit_id` is the
    /// compaction id: no commit of that id exists, and none can be proved).
    pub compacted: Option<Compacted>,
}

/// The provenance of a compacted part: the compaction, and the commits whose rows it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The compaction's id (its record's and its part's name).
    pub compaction_id: String,
    /// Its record's key.
    pub record: String,
    /// When it was made.
    pub compacted_utc: String,
    /// The seal that put it into effect.
    pub sealed_by: SealRef,
    /// The original commits its rows are of, in seal order.
    pub commits: Vec<CompactedCommit>,
}

/// One original commit of a compacted part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactedCommit {
    /// Its id (what `lineage prove` proves).
    pub commit_id: String,
    /// When it was committed.
    pub committed_utc: String,
    /// The seal that sealed it.
    pub sealed_by: u64,
    /// Its rows.
    pub rows: u64,
    /// `repair` adopted it (its pointer's mark).
    pub adopted: bool,
}

/// The seals a read since a seal ([`super::ReadOptions::since_seal`]) read and checked:
/// `from`..=`to`. Seal `from` (K) was read for its digest and frontier; the commits of
/// `from + 1..=to` are the snapshot's; the seals before `from` were not read (seal K's
/// digest vouches for them: an anchor checked against these seals binds them).
#[derive(Debug, Clone)]
pub struct SealRange {
    /// Seal K.
    pub from: u64,
    /// Seal N, the seal the read is as of.
    pub to: u64,
    /// Seals K..=N as read, in order, each checked.
    pub seals: Vec<StoredSeal>,
    /// N is the store's newest seal (found from the head marker, and no seal N+1 when
    /// read), not a seal the read was asked to be as of: a seal the store's writers once
    /// made after N is gone.
    pub newest: bool,
}

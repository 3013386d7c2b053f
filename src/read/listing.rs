//! What `lineage files --json` (and Python's `Store.files(detail=True)`) says of each part
//! of a snapshot: where it is, what it holds, the commit or compaction it belongs to, the
//! seal that sealed it, and whether `repair` adopted its commit.

use serde::{Deserialize, Serialize};

use crate::publish::AtomicPublisher;
use crate::read::location::part_location;
use crate::read::snapshot::SnapshotPart;

/// One part of a snapshot, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartListing {
    /// Where it is, as DuckDB, Polars and pyarrow take it.
    pub location: String,
    /// Its key.
    pub part_path: String,
    /// Its commit's id; `None` for a compacted part (see [`Self::compaction`]: no commit
    /// of the compaction's id exists, and none can be proved).
    pub commit_id: Option<String>,
    /// Partition value.
    pub run_id: String,
    /// Partition value.
    pub target_crs: String,
    /// Rows in it.
    pub rows: u64,
    /// Its bytes.
    pub size_bytes: u64,
    /// Its sha256.
    pub sha256: String,
    /// Its BLAKE3, when recorded.
    pub blake3: Option<String>,
    /// When its commit was made; for a compacted part, the newest original commit's time.
    pub committed_utc: String,
    /// The pointer (or compaction record) that vouches for it.
    pub pointer: String,
    /// The seal that sealed its commit (`None`: not sealed); for a compacted part, the
    /// newest seal of its original commits.
    pub sealed_by: Option<u64>,
    /// `repair` adopted its commit (or, for a compacted part, one of its original
    /// commits): its pointer was written from an orphan part's own footer, and nothing its
    /// writer wrote vouches for it.
    pub adopted: bool,
    /// The id of the writer key whose signature the part's footer carries, as its sealed
    /// pointer records it (`None`: unsigned; `verify` checks that the signature holds).
    #[serde(default)]
    pub writer_key_id: Option<String>,
    /// A compacted part's provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionListing>,
}

/// A compacted part's provenance: the compaction, and the commits its rows are of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionListing {
    /// The compaction's id.
    pub compaction_id: String,
    /// Its record's key.
    pub record: String,
    /// When it was made.
    pub compacted_utc: String,
    /// The seal that put it into effect.
    pub sealed_by: u64,
    /// The original commits of its rows, each with its seal.
    pub commits: Vec<CommitListing>,
}

/// One original commit of a compacted part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitListing {
    /// Its id (what `lineage prove` proves).
    pub commit_id: String,
    /// When it was committed.
    pub committed_utc: String,
    /// The seal that sealed it.
    pub sealed_by: u64,
    /// Its rows.
    pub rows: u64,
    /// `repair` adopted it.
    pub adopted: bool,
}

/// The listing of part `p` of a snapshot of `store`.
pub fn part_listing(store: &dyn AtomicPublisher, p: &SnapshotPart) -> PartListing {
    let q = &p.pointer;
    let compaction = p.compacted.as_ref().map(|c| CompactionListing {
        compaction_id: c.compaction_id.clone(),
        record: c.record.clone(),
        compacted_utc: c.compacted_utc.clone(),
        sealed_by: c.sealed_by.seq,
        commits: c
            .commits
            .iter()
            .map(|o| CommitListing {
                commit_id: o.commit_id.clone(),
                committed_utc: o.committed_utc.clone(),
                sealed_by: o.sealed_by,
                rows: o.rows,
                adopted: o.adopted,
            })
            .collect(),
    });
    let originals = compaction.as_ref().map(|c| c.commits.as_slice());
    let newest = originals.and_then(|o| {
        o.iter()
            .max_by(|a, b| a.committed_utc.cmp(&b.committed_utc))
    });
    PartListing {
        location: part_location(store, &q.part_path),
        part_path: q.part_path.clone(),
        commit_id: p.compacted.is_none().then(|| q.commit_id.clone()),
        run_id: q.run_id.clone(),
        target_crs: q.target_crs.clone(),
        rows: q.row_count,
        size_bytes: q.size_bytes,
        sha256: q.sha256.clone(),
        blake3: q.blake3.clone(),
        committed_utc: newest.map_or_else(|| q.committed_utc.clone(), |o| o.committed_utc.clone()),
        pointer: p.pointer_key.clone(),
        sealed_by: match originals {
            Some(o) => o.iter().map(|c| c.sealed_by).max(),
            None => p.sealed_by.as_ref().map(|s| s.seq),
        },
        writer_key_id: q.writer.as_ref().and_then(|w| w.writer_key_id.clone()),
        adopted: match originals {
            Some(o) => o.iter().any(|c| c.adopted),
            None => q.adopted,
        },
        compaction,
    }
}

//! Compaction records: `_lineage/compacted/records/<compaction-id>.json`, one per compacted
//! part, create-only and never changed.
//!
//! A compacted part holds exactly the rows of its source commits (sealed commits of one
//! `run_id`, `target_crs` and contract version), ordered by (`event_time_utc`, `sequence`,
//! `event_id`). The originals stay where they are; the compacted part lives at
//! [`crate::format::keys::compacted_part_key`], where no directory glob finds it. The
//! record names every source (commit id, pointer key and digest, part key, size and
//! sha256, rows), the compacted part (key, size, sha256, BLAKE3, rows) and a digest of the
//! multiset of its rows that does not depend on their order ([`ROWS_DIGEST`]): `verify`
//! recomputes it from both sides.
//!
//! A compaction takes effect in the seal that names its record
//! ([`crate::history::seal::Seal::compactions`]): that seal's Delta version removes the
//! sources (`dataChange` false) and adds the compacted part.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::format::keys;

/// Format tag of compaction records.
pub const COMPACTION_FORMAT: &str = "lineage-compaction/1";
/// Name of the order-independent row digest: per row, the BLAKE3 of its canonical
/// encoding (every column of the contract version in order: a null is `0`, a value `1`
/// then its bytes, strings length-prefixed, numbers little-endian, a boolean one byte 0 or
/// 1), read as four 64-bit little-endian lanes; the digest is the lane-wise sum (mod 2^64) over the rows, in hex.
pub const ROWS_DIGEST: &str = "lineage-rows-multiset/1";
/// Parquet footer key naming the compaction a compacted part belongs to.
pub const META_COMPACTION_ID: &str = "lineage_compaction_id";

/// One source commit of a compaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionSource {
    /// The commit's id.
    pub commit_id: String,
    /// Its pointer's key.
    pub pointer_key: String,
    /// sha256 of the pointer's exact bytes (what its seal records).
    pub pointer_sha256: String,
    /// The seal that sealed it.
    pub sealed_by: u64,
    /// The original part's key.
    pub part_path: String,
    /// Its size.
    pub size_bytes: u64,
    /// Its sha256.
    pub sha256: String,
    /// Its rows.
    pub row_count: u64,
}

/// A compaction record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// Always [`COMPACTION_FORMAT`].
    pub format: String,
    /// UUIDv7: the record's and the compacted part's name, also in the part's footer.
    pub compaction_id: String,
    /// Partition value.
    pub run_id: String,
    /// Partition value.
    pub target_crs: String,
    /// Contract version of the sources and of the compacted part.
    pub schema_version: String,
    /// The compacted part's key ([`keys::compacted_part_key`]).
    pub part_path: String,
    /// Its size.
    pub size_bytes: u64,
    /// Lower-case hex sha256 of it.
    pub sha256: String,
    /// Lower-case hex BLAKE3 of it.
    pub blake3: String,
    /// Rows in it: the sum of the sources' rows.
    pub row_count: u64,
    /// [`ROWS_DIGEST`] of its rows (equal to that of the sources' rows together).
    pub rows_digest: String,
    /// Smallest `sequence`.
    pub first_sequence: i64,
    /// Largest `sequence`.
    pub last_sequence: i64,
    /// Earliest `event_time_utc`.
    pub min_event_time_utc: String,
    /// Latest `event_time_utc`.
    pub max_event_time_utc: String,
    /// The newest seal when the compaction was planned: every source is sealed by it.
    pub planned_at_seal: u64,
    /// When the record was made (RFC 3339, UTC).
    pub compacted_utc: String,
    /// The lineage-store that made it.
    pub tool_version: String,
    /// The source commits, in seal order.
    pub sources: Vec<CompactionSource>,
    /// Where the compacted part's tail begins ([`crate::parts::tail`]); absent in records
    /// made before issue 35.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_offset: Option<u64>,
    /// sha256 of the compacted part's tail, checked before pruning skips it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_sha256: Option<String>,
}

impl CompactionRecord {
    /// The exact bytes stored (stable field order, one trailing newline).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(self).map_err(Error::internal_from)?;
        v.push(b'\n');
        Ok(v)
    }

    /// Parse a stored record and check that it agrees with its key and with itself.
    pub fn from_bytes(key: &str, bytes: &[u8]) -> Result<Self> {
        let bad = |m: String| Error::Corrupt {
            what: "compaction record",
            key: key.to_string(),
            message: m.into(),
        };
        let r: CompactionRecord = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if let Some(m) = r.problem(key) {
            return Err(bad(m));
        }
        Ok(r)
    }

    /// What contradicts the record's own key or its own fields, if anything.
    pub fn problem(&self, key: &str) -> Option<String> {
        if self.format != COMPACTION_FORMAT {
            return Some(format!("unknown format {:?}", self.format));
        }
        if key != keys::compaction_record_key(&self.compaction_id) {
            return Some(format!(
                "names compaction {}, which is not its key's",
                self.compaction_id
            ));
        }
        let part = keys::compacted_part_key(&self.run_id, &self.target_crs, &self.compaction_id);
        if self.part_path != part {
            return Some(format!(
                "names part {}, not its layout key {part}",
                self.part_path
            ));
        }
        if self.sources.len() < 2 {
            return Some(format!(
                "has {} source commits (at least 2)",
                self.sources.len()
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for s in &self.sources {
            if !seen.insert(s.commit_id.as_str()) {
                return Some(format!("names commit {} twice", s.commit_id));
            }
        }
        let sum: u64 = self.sources.iter().map(|s| s.row_count).sum();
        if sum != self.row_count {
            return Some(format!(
                "records {} rows, its sources {sum}",
                self.row_count
            ));
        }
        None
    }
}

/// A record as a seal names it: its key and the sha256 of its exact bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionRef {
    /// The record's key.
    pub key: String,
    /// Lower-case hex sha256 of the record's bytes.
    pub sha256: String,
}

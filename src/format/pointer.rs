//! The per-commit sidecar pointer: what was published, where, and its digest.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};

/// Format tag of pointer objects.
pub const POINTER_FORMAT: &str = "lineage-pointer/1";

/// One commit, as recorded in `_lineage/commits/run_id=<r>/<commit-id>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pointer {
    /// Always [`POINTER_FORMAT`].
    pub format: String,
    /// UUIDv7 (or derived from a commit key), also in the part's footer.
    pub commit_id: String,
    /// Partition value.
    pub run_id: String,
    /// Partition value, canonical `EPSG:<code>`.
    pub target_crs: String,
    /// Key of the part relative to the store root.
    pub part_path: String,
    /// Rows in the part.
    pub row_count: u64,
    /// Bytes of the part.
    pub size_bytes: u64,
    /// Contract version of the part.
    pub schema_version: String,
    /// Lower-case hex sha256 of the part.
    pub sha256: String,
    /// Lower-case hex BLAKE3 of the part; absent in pointers written before issue 8f
    /// ([`crate::base::digest`]: what `verify` checks by default where present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
    /// When the part was published (RFC 3339, UTC, microseconds).
    pub committed_utc: String,
    /// Smallest `sequence` in the part.
    pub first_sequence: i64,
    /// Largest `sequence` in the part.
    pub last_sequence: i64,
    /// Earliest `event_time_utc` in the part.
    pub min_event_time_utc: String,
    /// Latest `event_time_utc` in the part.
    pub max_event_time_utc: String,
    /// The lineage-store that wrote it, `lineage-store/<version>`.
    pub tool_version: String,
    /// The idempotency key the commit id was derived from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_key: Option<String>,
    /// True when `lineage repair` wrote this pointer for an orphan part.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
}

impl Pointer {
    /// The JSON stored for this pointer (stable field order, one trailing newline).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(self).map_err(|e| Error::Internal(e.to_string()))?;
        v.push(b'\n');
        Ok(v)
    }

    /// Parse a stored pointer.
    pub fn from_bytes(key: &str, bytes: &[u8]) -> Result<Self> {
        let p: Pointer = serde_json::from_slice(bytes).map_err(|e| Error::Corrupt {
            what: "pointer",
            key: key.to_string(),
            message: e.to_string(),
        })?;
        if p.format != POINTER_FORMAT {
            return Err(Error::Corrupt {
                what: "pointer",
                key: key.to_string(),
                message: format!("unknown format {:?}", p.format),
            });
        }
        Ok(p)
    }
}

/// The crate's tool tag.
pub fn tool_version() -> String {
    format!("lineage-store/{}", env!("CARGO_PKG_VERSION"))
}

/// Parse a pointer and check it agrees with its own key.
pub fn check_pointer(key: &str, bytes: &[u8], run_id: &str, commit_id: &str) -> Result<Pointer> {
    let p = Pointer::from_bytes(key, bytes)?;
    let expect_part = crate::format::keys::part_key(&p.run_id, &p.target_crs, &p.commit_id);
    let bad = if p.run_id != run_id || p.commit_id != commit_id {
        Some(format!(
            "records run_id={} commit {}, but is stored under run_id={run_id} commit {commit_id}",
            p.run_id, p.commit_id
        ))
    } else if p.part_path != expect_part {
        Some(format!(
            "part_path {} is not where commit {} belongs ({expect_part})",
            p.part_path, p.commit_id
        ))
    } else {
        None
    };
    match bad {
        Some(m) => Err(Error::Corrupt {
            what: "pointer",
            key: key.to_string(),
            message: m,
        }),
        None => Ok(p),
    }
}

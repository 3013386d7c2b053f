//! The per-commit sidecar pointer: what was published, where, and its digest.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
    /// ([`crate::digest`]: what `verify` checks by default where present).
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

/// RFC 3339 with microseconds and `Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Microseconds since the epoch as RFC 3339.
pub fn rfc3339_us(us: i64) -> String {
    match Utc.timestamp_micros(us) {
        chrono::LocalResult::Single(t) => rfc3339(t),
        _ => us.to_string(),
    }
}

//! The per-commit sidecar pointer: what was published, where, and its digest.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::format::writer_record::WriterRecord;

/// Format tag of pointer objects.
pub const POINTER_FORMAT: &str = "lineage-pointer/1";

/// Largest pointer any reader parses: every field has a bound ([`Pointer::field_problem`];
/// a real pointer is about 1 KiB, its longest field a commit key), so anything larger is
/// refused before parsing, naming the object.
pub const MAX_POINTER_BYTES: usize = 64 * 1024;

/// Longest a pointer's short text fields (times, versions, the tool) may be.
const MAX_SHORT_FIELD: usize = 256;
/// Longest a pointer's commit key may be.
pub const MAX_COMMIT_KEY_BYTES: usize = 16 * 1024;

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
    /// Lower-case hex BLAKE3 of the part; absent in pointers written before BLAKE3 was recorded
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
    /// Where the part's tail begins: its first bloom filter, or its footer
    /// ([`crate::parts::tail`]); absent in pointers written before issue 35.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_offset: Option<u64>,
    /// Lower-case hex sha256 of the part's bytes from `tail_offset` to its end: what
    /// pruning checks before it skips the part on its footer or bloom filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_sha256: Option<String>,
    /// True when `lineage repair` wrote this pointer for an orphan part.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
    /// Who wrote it, as far as the platform said ([`WriterRecord`]: host, program, writer
    /// key id, platform job and role names; never a secret). Absent in pointers written
    /// before it was recorded, by writers not given an environment, and by `repair`
    /// (which records only the writer key id of a signed part it adopts). Not evidence:
    /// `verify` ignores it for integrity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<WriterRecord>,
    /// Not stored: true when an append found this commit already in the store, committed
    /// by an earlier run (a keyed retry), and published nothing; false as read.
    #[serde(skip)]
    pub existed: bool,
}

impl Pointer {
    /// The JSON stored for this pointer (stable field order, one trailing newline).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(self).map_err(Error::internal_from)?;
        v.push(b'\n');
        Ok(v)
    }

    /// Parse a stored pointer: at most [`MAX_POINTER_BYTES`], of the known format, every
    /// field within the rules input is held to ([`Pointer::field_problem`]). A pointer is
    /// read from a store that a writer can write, so nothing in it is trusted: a
    /// `target_crs` or `run_id` that could name a path outside the store is refused here,
    /// before any key is built from it.
    pub fn from_bytes(key: &str, bytes: &[u8]) -> Result<Self> {
        let corrupt = |message: String| Error::Corrupt {
            what: "pointer",
            key: key.to_string(),
            message: message.into(),
        };
        if bytes.len() > MAX_POINTER_BYTES {
            return Err(corrupt(format!(
                "{} bytes; a pointer is at most {MAX_POINTER_BYTES}",
                bytes.len()
            )));
        }
        let p: Pointer = serde_json::from_slice(bytes)
            .map_err(|e| corrupt(crate::schema::rules::shorten(e.to_string())))?;
        if p.format != POINTER_FORMAT {
            return Err(corrupt(format!(
                "unknown format {}",
                crate::schema::rules::quote(&p.format)
            )));
        }
        if let Some(why) = p.field_problem() {
            return Err(corrupt(why));
        }
        Ok(p)
    }

    /// Why a field is not one lineage-store could have written, or `None`: `run_id` a
    /// safe path segment, `target_crs` canonical `EPSG:<code>`, `commit_id` a lower-case
    /// UUID, `part_path` the key of a part, digests lower-case hex of their length, the
    /// other text fields short.
    pub fn field_problem(&self) -> Option<String> {
        self.name_problem()
            .or_else(|| self.digest_problem())
            .or_else(|| self.text_problem())
            .or_else(|| self.writer.as_ref().and_then(WriterRecord::problem))
    }

    /// Why `run_id`, `target_crs`, `commit_id` or `part_path` is not one lineage-store
    /// could have written, or `None`.
    fn name_problem(&self) -> Option<String> {
        use crate::format::keys;
        use crate::schema::rules::quote;
        if let Some(why) = keys::run_id_segment_problem(&self.run_id) {
            return Some(format!("run_id {} {why}", quote(&self.run_id)));
        }
        if crate::schema::crs::canonicalize(&self.target_crs).as_deref() != Ok(&self.target_crs) {
            return Some(format!(
                "target_crs {} is not a canonical EPSG:<code>",
                quote(&self.target_crs)
            ));
        }
        if !keys::is_commit_id(&self.commit_id) {
            return Some(format!(
                "commit_id {} is not a lower-case UUID",
                quote(&self.commit_id)
            ));
        }
        if !matches!(keys::classify(&self.part_path), keys::KeyKind::Part { .. }) {
            return Some(format!(
                "part_path {} is not the key of a part",
                quote(&self.part_path)
            ));
        }
        None
    }

    /// Why `sha256` or `blake3` is not 64 lower-case hex digits, or `None`.
    fn digest_problem(&self) -> Option<String> {
        use crate::schema::rules::quote;
        let hex =
            |v: &str| v.len() == 64 && v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hex(&self.sha256) {
            return Some(format!(
                "sha256 {} is not 64 lower-case hex digits",
                quote(&self.sha256)
            ));
        }
        if let Some(t) = self.tail_sha256.as_deref().filter(|t| !hex(t)) {
            return Some(format!(
                "tail_sha256 {} is not 64 lower-case hex digits",
                quote(t)
            ));
        }
        if self.tail_offset.is_some_and(|o| o >= self.size_bytes) {
            return Some("tail_offset is not inside the part".to_string());
        }
        let b3 = self.blake3.as_deref().filter(|b| !hex(b))?;
        Some(format!(
            "blake3 {} is not 64 lower-case hex digits",
            quote(b3)
        ))
    }

    /// Why a short text field is too long or holds a control character, the commit key
    /// is too long, or the sequence range is reversed, or `None`.
    fn text_problem(&self) -> Option<String> {
        use crate::schema::rules::quote;
        for (name, v) in [
            ("schema_version", &self.schema_version),
            ("committed_utc", &self.committed_utc),
            ("min_event_time_utc", &self.min_event_time_utc),
            ("max_event_time_utc", &self.max_event_time_utc),
            ("tool_version", &self.tool_version),
        ] {
            if v.len() > MAX_SHORT_FIELD || v.chars().any(char::is_control) {
                return Some(format!(
                    "{name} {} is longer than {MAX_SHORT_FIELD} bytes or holds a control character",
                    quote(v)
                ));
            }
        }
        if self
            .commit_key
            .as_ref()
            .is_some_and(|k| k.len() > MAX_COMMIT_KEY_BYTES)
        {
            return Some(format!(
                "commit_key is longer than {MAX_COMMIT_KEY_BYTES} bytes"
            ));
        }
        if self.first_sequence > self.last_sequence {
            return Some(format!(
                "first_sequence {} is after last_sequence {}",
                self.first_sequence, self.last_sequence
            ));
        }
        None
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
            message: m.into(),
        }),
        None => Ok(p),
    }
}

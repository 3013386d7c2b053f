//! What a key is, by its place in the layout ([`classify`]).

use super::history::parse_history;
use super::iceberg::{classify_iceberg, IcebergKey};
use crate::format::keys::history::HistoryKey;
use crate::format::keys::{
    is_commit_id, parse_delta_checkpoint_key, parse_delta_version_key, run_id_segment_problem,
    COMMITS_PREFIX, COMMIT_KEYS_PREFIX, COMPACTED_PARTS_PREFIX, COMPACTED_PART_SUFFIX,
    COMPACTION_RECORDS_PREFIX, DELTA_LOG_PREFIX, HEADS_PREFIX, IDENTITY_KEY, INDEX_PREFIX,
    LEAVES_PREFIX, META_PREFIX, SEALS_PREFIX, TILES_PREFIX, TIMESTAMPS_PREFIX, TLOG_PREFIX,
    WITNESS_PREFIX,
};

/// What an object key is, by its place in the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyKind {
    /// A data part: run_id, target_crs, commit id.
    Part {
        /// Partition value.
        run_id: String,
        /// Partition value.
        target_crs: String,
        /// From the file name.
        commit_id: String,
    },
    /// A hidden in-flight temp written by the POSIX publisher.
    Temp,
    /// A commit pointer: run_id, commit id.
    Pointer {
        /// From the directory.
        run_id: String,
        /// From the file name.
        commit_id: String,
    },
    /// A seal with its sequence number.
    Seal(u64),
    /// An index entry, head marker, hash tile or leaf locator.
    History(HistoryKey),
    /// The store's identity, `_lineage/store.json`.
    Identity,
    /// A commit-key claim, `_lineage/commit-keys/<64 hex>.json`.
    Claim,
    /// A witness record, `_lineage/witness/<store id>/<seq, 20 digits>.json`.
    Witness,
    /// A Delta version of ours, `_delta_log/<20 digits>.json` ([`crate::format::delta`]).
    DeltaVersion(u64),
    /// A Delta checkpoint of ours, `_delta_log/<20 digits>.checkpoint.parquet`
    /// ([`crate::format::delta_checkpoint`]).
    DeltaCheckpoint(u64),
    /// A compaction record, `_lineage/compacted/records/<compaction-id>.json`.
    CompactionRecord {
        /// From the file name.
        compaction_id: String,
    },
    /// A compacted part,
    /// `_lineage/compacted/parts/run_id=<r>/target_crs=<c>/part-<compaction-id>.compacted`.
    CompactedPart {
        /// From the directory.
        run_id: String,
        /// From the directory.
        target_crs: String,
        /// From the file name.
        compaction_id: String,
    },
    /// An object under `_iceberg/` ([`IcebergKey`]: ours by name, or [`IcebergKey::Other`]).
    Iceberg(IcebergKey),
    /// Anything else under `_delta_log/` (`_last_checkpoint`, a multi-part or V2
    /// checkpoint, a planted file): not ours, and named by `verify`.
    DeltaOther,
    /// Anything else under `_lineage/`: a name lineage-store never writes there (a copy of
    /// a part, notes, a file under a pointer's directory that is not a pointer): reported
    /// by `verify`, never copied by `replicate`.
    Unknown,
    /// Anything else: not written by lineage-store.
    Foreign,
}

/// The prefixes of the history objects ([`HistoryKey`]).
const HISTORY_PREFIXES: [&str; 6] = [
    INDEX_PREFIX,
    HEADS_PREFIX,
    TILES_PREFIX,
    LEAVES_PREFIX,
    TLOG_PREFIX,
    TIMESTAMPS_PREFIX,
];

/// Classify a key of the store.
pub fn classify(key: &str) -> KeyKind {
    let name = key.rsplit('/').next().unwrap_or(key);
    if name.starts_with('.') && name.ends_with(".tmp") {
        return KeyKind::Temp;
    }
    if key == IDENTITY_KEY {
        return KeyKind::Identity;
    }
    if key.starts_with(DELTA_LOG_PREFIX) {
        if let Some(v) = parse_delta_version_key(key) {
            return KeyKind::DeltaVersion(v);
        }
        return parse_delta_checkpoint_key(key)
            .map_or(KeyKind::DeltaOther, KeyKind::DeltaCheckpoint);
    }
    if let Some(k) = classify_iceberg(key) {
        return KeyKind::Iceberg(k);
    }
    if let Some(rest) = key.strip_prefix(COMMITS_PREFIX) {
        return classify_pointer(rest);
    }
    if let Some(rest) = key.strip_prefix(SEALS_PREFIX) {
        return classify_seal(rest);
    }
    if is_claim_key(key) {
        return KeyKind::Claim;
    }
    if is_witness_key(key) {
        return KeyKind::Witness;
    }
    if let Some(rest) = key.strip_prefix(COMPACTION_RECORDS_PREFIX) {
        return classify_compaction_record(rest);
    }
    if let Some(rest) = key.strip_prefix(COMPACTED_PARTS_PREFIX) {
        return match partition_file(rest, "part-", COMPACTED_PART_SUFFIX) {
            Some((run_id, target_crs, compaction_id)) => KeyKind::CompactedPart {
                run_id,
                target_crs,
                compaction_id,
            },
            None => KeyKind::Unknown,
        };
    }
    for p in HISTORY_PREFIXES {
        if key.starts_with(p) {
            // Under a history prefix but not a name lineage-store makes: reported.
            return parse_history(key).map_or(KeyKind::Foreign, KeyKind::History);
        }
    }
    if key.starts_with(META_PREFIX) {
        return KeyKind::Unknown;
    }
    match partition_file(key, "part-", ".parquet") {
        // Only under a CRS directory lineage-store writes: a file named like a commit's
        // part under `target_crs=garbage` (or `EPSG%3A…`, `EPSG:…bak`, empty) is not ours.
        Some((run_id, target_crs, commit_id)) if is_crs_segment(&target_crs) => KeyKind::Part {
            run_id,
            target_crs,
            commit_id,
        },
        _ => KeyKind::Foreign,
    }
}

/// `run_id=<r>/target_crs=<anything>/part-<commit id>.parquet`: the name of a data part,
/// whatever its `target_crs` segment (so `verify` can name a file planted under a
/// commit's part name in a directory lineage-store never writes): (run_id, target_crs
/// segment, commit id).
pub fn part_name(key: &str) -> Option<(String, String, String)> {
    partition_file(key, "part-", ".parquet")
}

/// Whether a `target_crs=` segment is one lineage-store writes: the canonical `EPSG:<n>`
/// ([`crate::schema::crs::canonicalize`]), digits without a leading zero.
pub fn is_crs_segment(segment: &str) -> bool {
    segment.strip_prefix("EPSG:").is_some_and(|n| {
        !n.is_empty()
            && n.len() <= 10
            && !n.starts_with('0')
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// A key under [`COMMITS_PREFIX`] (`rest` is what follows it): a pointer, or unknown.
fn classify_pointer(rest: &str) -> KeyKind {
    if let Some((dir, file)) = rest.split_once('/') {
        if let (Some(run_id), Some(commit_id)) =
            (dir.strip_prefix("run_id="), file.strip_suffix(".json"))
        {
            if !file.contains('/') && is_commit_id(commit_id) && is_run_id(run_id) {
                return KeyKind::Pointer {
                    run_id: run_id.to_string(),
                    commit_id: commit_id.to_string(),
                };
            }
        }
    }
    KeyKind::Unknown
}

/// A key under [`COMPACTION_RECORDS_PREFIX`] (`rest` is what follows it): a compaction
/// record, or unknown.
fn classify_compaction_record(rest: &str) -> KeyKind {
    match rest.strip_suffix(".json") {
        Some(id) if is_commit_id(id) => KeyKind::CompactionRecord {
            compaction_id: id.to_string(),
        },
        _ => KeyKind::Unknown,
    }
}

/// A key under [`SEALS_PREFIX`] (`rest` is what follows it): a seal, or unknown.
fn classify_seal(rest: &str) -> KeyKind {
    if let Some(seq) = rest.strip_suffix(".json") {
        if seq.len() == 20 && seq.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = seq.parse() {
                return KeyKind::Seal(n);
            }
        }
    }
    KeyKind::Unknown
}

/// `run_id=<r>/target_crs=<c>/<prefix><id><suffix>`, exactly three segments, with a
/// commit id (or compaction id) and a `run_id` of ours: (run_id, target_crs, id).
fn partition_file(path: &str, prefix: &str, suffix: &str) -> Option<(String, String, String)> {
    let mut parts = path.split('/');
    let (Some(r), Some(t), Some(f), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let run_id = r.strip_prefix("run_id=")?;
    let target_crs = t.strip_prefix("target_crs=")?;
    let id = f.strip_prefix(prefix)?.strip_suffix(suffix)?;
    (is_commit_id(id) && is_run_id(run_id))
        .then(|| (run_id.to_string(), target_crs.to_string(), id.to_string()))
}

/// A `run_id` lineage-store could have written (so a key whose `run_id` segment is not,
/// e.g. one holding `%`, is foreign, never a part or pointer of ours).
fn is_run_id(run_id: &str) -> bool {
    run_id_segment_problem(run_id).is_none()
}

/// Whether `key` is a commit-key claim: `_lineage/commit-keys/<64 lower-case hex>.json`.
pub fn is_claim_key(key: &str) -> bool {
    key.strip_prefix(COMMIT_KEYS_PREFIX)
        .and_then(|r| r.strip_suffix(".json"))
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// Whether `key` is a witness record: `_lineage/witness/<store id>/<20 digits>.json`, the
/// store id a lower-case hex sha256 or UUID (see [`crate::witness`]).
pub fn is_witness_key(key: &str) -> bool {
    let Some((id, file)) = key
        .strip_prefix(WITNESS_PREFIX)
        .and_then(|r| r.split_once('/'))
    else {
        return false;
    };
    let id_ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'));
    let seq_ok = file
        .strip_suffix(".json")
        .is_some_and(|s| s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()));
    id_ok && seq_ok
}

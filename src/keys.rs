//! Partition keys and the object layout of a store.
//!
//! ```text
//! run_id=<r>/target_crs=EPSG:<n>/part-<commit-id>.parquet     data (Hive layout)
//! run_id=<r>/target_crs=EPSG:<n>/.part-<commit-id>.parquet.<nonce>.tmp   in-flight temp (POSIX)
//! _lineage/commits/run_id=<r>/<commit-id>.json                 one pointer per commit
//! _lineage/seals/<seq, 20 digits>.json                         seals (audit)
//! _lineage/commit-keys/<sha256 of the key>.json                commit-key claims
//! ```
//!
//! Everything under `_lineage/` is skipped by dataset readers (leading `_`), as are hidden
//! temps (leading `.`). All keys are relative, `/`-separated, and built only here.

use crate::error::{Error, Result};

/// Longest accepted `run_id`, in bytes.
pub const MAX_RUN_ID_BYTES: usize = 128;
/// Prefix of everything that is not data.
pub const META_PREFIX: &str = "_lineage/";
/// Prefix of the commit pointers.
pub const COMMITS_PREFIX: &str = "_lineage/commits/";
/// Prefix of the seals.
pub const SEALS_PREFIX: &str = "_lineage/seals/";
/// Prefix of commit-key claims (see [`crate::commit_key`]).
pub const COMMIT_KEYS_PREFIX: &str = "_lineage/commit-keys/";

/// Why a `run_id` is not a safe path segment, or `None` when it is.
pub fn run_id_problem(run_id: &str) -> Option<String> {
    let why = if run_id.is_empty() {
        "is empty"
    } else if run_id.len() > MAX_RUN_ID_BYTES {
        "is longer than 128 bytes"
    } else if run_id == "." || run_id.contains("..") {
        "contains `..`"
    } else if run_id.starts_with('.') {
        "starts with `.` (hidden files are skipped by readers)"
    } else if run_id.starts_with('_') {
        "starts with `_` (reserved for metadata, skipped by readers)"
    } else if run_id.contains('/') || run_id.contains('\\') {
        "contains a path separator"
    } else if run_id.contains('=') {
        "contains `=` (breaks the Hive layout)"
    } else if run_id.chars().any(char::is_control) {
        "contains a control character"
    } else if run_id.contains('%') || run_id.contains('#') || run_id.contains('?') {
        "contains `%`, `#` or `?` (escaped differently by object stores and readers)"
    } else {
        return None;
    };
    Some(format!("run_id {run_id:?} {why}"))
}

/// Check a `run_id` (see [`run_id_problem`]) as a library error.
pub fn check_run_id(run_id: &str) -> Result<()> {
    match run_id_problem(run_id) {
        None => Ok(()),
        Some(m) => Err(Error::Usage(m)),
    }
}

/// The partition directory of a (run_id, target_crs) pair.
pub fn partition_dir(run_id: &str, target_crs: &str) -> String {
    format!("run_id={run_id}/target_crs={target_crs}")
}

/// The data part of a commit.
pub fn part_key(run_id: &str, target_crs: &str, commit_id: &str) -> String {
    format!(
        "{}/part-{commit_id}.parquet",
        partition_dir(run_id, target_crs)
    )
}

/// The pointer of a commit.
pub fn pointer_key(run_id: &str, commit_id: &str) -> String {
    format!("{COMMITS_PREFIX}run_id={run_id}/{commit_id}.json")
}

/// The claim object of a commit key: named by the key's sha256, so any key (any length,
/// any characters) makes a safe object name.
pub fn commit_key_claim_key(commit_key: &str) -> String {
    use sha2::Digest;
    format!(
        "{COMMIT_KEYS_PREFIX}{}.json",
        hex::encode(sha2::Sha256::digest(commit_key.as_bytes()))
    )
}

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
    /// Anything else under `_lineage/`: ours, but not a pointer or seal (e.g. keys).
    Meta,
    /// Anything else: not written by lineage-store.
    Foreign,
}

/// Classify a key of the store.
pub fn classify(key: &str) -> KeyKind {
    let name = key.rsplit('/').next().unwrap_or(key);
    if name.starts_with('.') && name.ends_with(".tmp") {
        return KeyKind::Temp;
    }
    if let Some(rest) = key.strip_prefix(COMMITS_PREFIX) {
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
        return KeyKind::Meta;
    }
    if let Some(rest) = key.strip_prefix(SEALS_PREFIX) {
        if let Some(seq) = rest.strip_suffix(".json") {
            if seq.len() == 20 && seq.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(n) = seq.parse() {
                    return KeyKind::Seal(n);
                }
            }
        }
        return KeyKind::Meta;
    }
    if key.starts_with(META_PREFIX) {
        return KeyKind::Meta;
    }
    let mut parts = key.split('/');
    if let (Some(r), Some(t), Some(f), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    {
        if let (Some(run_id), Some(target_crs), Some(commit_id)) = (
            r.strip_prefix("run_id="),
            t.strip_prefix("target_crs="),
            f.strip_prefix("part-")
                .and_then(|f| f.strip_suffix(".parquet")),
        ) {
            if is_commit_id(commit_id) && is_run_id(run_id) {
                return KeyKind::Part {
                    run_id: run_id.to_string(),
                    target_crs: target_crs.to_string(),
                    commit_id: commit_id.to_string(),
                };
            }
        }
    }
    KeyKind::Foreign
}

/// A `run_id` lineage-store could have written (so a key whose `run_id` segment is not,
/// e.g. one holding `%`, is foreign, never a part or pointer of ours).
fn is_run_id(run_id: &str) -> bool {
    run_id_problem(run_id).is_none()
}

/// A commit id is a hyphenated lower-case UUID.
pub fn is_commit_id(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok() && !s.bytes().any(|b| b.is_ascii_uppercase())
}

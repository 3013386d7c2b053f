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

/// Why a `run_id` is not acceptable in new input, or `None` when it is: a safe path
/// segment ([`run_id_segment_problem`]) of ASCII letters, digits and
/// [`RUN_ID_PUNCTUATION`] only.
pub fn run_id_problem(run_id: &str) -> Option<String> {
    if let Some(why) = run_id_segment_problem(run_id) {
        return Some(format!("run_id {} {why}", crate::rules::quote(run_id)));
    }
    let c = run_id.chars().find(|&c| !is_run_id_char(c))?;
    Some(format!(
        "run_id {} contains {c:?} (U+{:04X}); a run_id holds only ASCII letters, digits and `{RUN_ID_PUNCTUATION}` \
         (other characters, e.g. look-alikes of `/` and `.`, could disguise one run as another)",
        crate::rules::quote(run_id),
        u32::from(c)
    ))
}

/// Why a `run_id` is not a safe path segment, or `None`. This is what every version of
/// lineage-store has required, so it decides which existing keys are ours
/// ([`classify`]): a store written before the ASCII-only rule keeps its non-ASCII runs.
pub fn run_id_segment_problem(run_id: &str) -> Option<&'static str> {
    Some(if run_id.is_empty() {
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
    })
}

/// The punctuation a `run_id` may hold besides ASCII letters and digits: enough for the
/// ids schedulers make (UUIDs, `scheduled__2026-07-13T06:00:00+00:00`, `nightly.42`).
pub const RUN_ID_PUNCTUATION: &str = "-_.:+@~";

fn is_run_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || RUN_ID_PUNCTUATION.contains(c)
}

/// Check a `run_id` to look up (`log --run-id`): a safe path segment, so that runs an
/// older version stored can still be listed.
pub fn check_run_id(run_id: &str) -> Result<()> {
    match run_id_segment_problem(run_id) {
        None => Ok(()),
        Some(why) => Err(Error::Usage(format!(
            "run_id {} {why}",
            crate::rules::quote(run_id)
        ))),
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
    run_id_segment_problem(run_id).is_none()
}

/// A commit id is a hyphenated lower-case UUID.
pub fn is_commit_id(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok() && !s.bytes().any(|b| b.is_ascii_uppercase())
}

/// The hidden temp name a POSIX publish of the object `name` writes first:
/// `.{name}.{nonce}.tmp`. The nonce is a UUIDv7 (32 hex digits): unique per attempt, so
/// concurrent creators of one key never share a temp, and carrying the time the temp was
/// made, so `verify` can tell a temp in flight from a stale or planted one by its name
/// (never by its modification time, which anyone can set).
pub fn temp_name(name: &str) -> String {
    format!(".{name}.{}.tmp", uuid::Uuid::now_v7().simple())
}

/// What a temp's file name says about it (see [`temp_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempName {
    /// The object name the temp would be published as.
    pub target: String,
    /// When the temp was made, from its UUIDv7 nonce; `None` when the nonce is not one
    /// (a temp of an older lineage-store, or not lineage-store's).
    pub created: Option<chrono::DateTime<chrono::Utc>>,
}

/// Parse the last segment of a temp key, `.{name}.{nonce}.tmp`; `None` when it is not of
/// that shape.
pub fn parse_temp_name(file_name: &str) -> Option<TempName> {
    let inner = file_name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (target, nonce) = inner.rsplit_once('.')?;
    if target.is_empty() || nonce.is_empty() {
        return None;
    }
    let created = (nonce.len() == 32)
        .then(|| uuid::Uuid::try_parse(nonce).ok())
        .flatten()
        .and_then(|u| uuid_v7_time(&u));
    Some(TempName {
        target: target.to_string(),
        created,
    })
}

/// The creation time a UUIDv7 carries (its first 48 bits, milliseconds since the epoch);
/// `None` for any other version (commit-key ids are UUIDv8: no time).
pub fn uuid_v7_time(u: &uuid::Uuid) -> Option<chrono::DateTime<chrono::Utc>> {
    if u.get_version_num() != 7 {
        return None;
    }
    let ms = i64::try_from(u.as_u128() >> 80).ok()?;
    chrono::DateTime::from_timestamp_millis(ms)
}

/// Whether `key` is a commit-key claim: `_lineage/commit-keys/<64 lower-case hex>.json`.
pub fn is_claim_key(key: &str) -> bool {
    key.strip_prefix(COMMIT_KEYS_PREFIX)
        .and_then(|r| r.strip_suffix(".json"))
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

//! Partition keys and the object layout of a store.
//!
//! ```text
//! run_id=<r>/target_crs=EPSG:<n>/part-<commit-id>.parquet     data (Hive layout)
//! run_id=<r>/target_crs=EPSG:<n>/.part-<commit-id>.parquet.<nonce>.tmp   in-flight temp (POSIX)
//! _lineage/store.json                                          the store's identity
//! _lineage/commits/run_id=<r>/<commit-id>.json                 one pointer per commit
//! _lineage/seals/<seq, 20 digits>.json                         seals (audit)
//! _lineage/commit-keys/<sha256 of the key>.json                commit-key claims
//! _lineage/index/<YYYY-MM-DD>/<HH>/<MM>/<SS>/T<HHMMSS.ffffff>Z.<commit-id>.run_id=<r>   time index (empty)
//! _lineage/heads/<(2^64-1-seq) / 1000, 17 digits>/<2^64-1-seq, 20 digits>-<seq, 20 digits>   head markers (empty)
//! _lineage/tiles/<level>/[x<NNN>/…]<NNN>[.p/<width>]          Merkle hash tiles
//! _lineage/leaves/<hh>/<gg>/<commit-id>.<leaf index, 20 digits>.run_id=<r>   leaf locators (empty)
//! _lineage/tlog/checkpoints/<seq, 20 digits>                   each signed seal as a C2SP checkpoint
//! _lineage/tlog/cosignatures/<seq, 20 digits>/<sha256 of the witness's vkey>   that checkpoint cosigned by a C2SP witness
//! _lineage/tlog/tile/<level>/[x<NNN>/…]<NNN>[.p/<width>]      hash tiles, C2SP tlog-tiles layout
//! _lineage/tlog/tile/entries/[x<NNN>/…]<NNN>[.p/<width>]      entry bundles (the leaves), likewise
//! _lineage/timestamps/<seq, 20 digits>.tsq                     RFC 3161 request for a seal's time
//! _lineage/timestamps/<seq, 20 digits>.tsr                     the TSA's response (DER TimeStampResp)
//! _lineage/witness/<store id>/<seq, 20 digits>.json            witness records (in a witness store)
//! _lineage/compacted/records/<compaction-id>.json             compaction records
//! _lineage/compacted/parts/run_id=<r>/target_crs=EPSG:<n>/part-<compaction-id>.compacted   compacted parts
//! _delta_log/<version, 20 digits>.json                         Delta Lake versions (one per seal)
//! _iceberg/metadata/v<N>.metadata.json, snap-<N>.avro, manifest-<N>.avro   Iceberg snapshot N = seal N (`seal --iceberg`)
//! ```
//!
//! A compacted part is Parquet, but its name does not end in `.parquet` and it lies under
//! `_lineage/`: no directory glob (`**/*.parquet` in DuckDB or Polars) nor pyarrow's
//! dataset discovery (which skips `_` directories) reads it beside the originals it
//! replaces for Delta readers ([`crate::format::compaction`]).
//!
//! Nothing else under `_lineage/` is ours: any other object there is
//! [`KeyKind::Unknown`], which `verify` reports (`unknown_lineage_object`) and
//! `replicate` does not copy.
//!
//! The index entries, head markers, tiles and locators make the history cheap to read at any age ([`crate::history`]). Each is
//! laid out in bounded directories, so that a local disk, where a listing reads whole
//! directories, also lists only what is new: an index directory holds the commits of one
//! second, a marker directory 1,000 seals, a tile directory 1,000 tiles, and a locator
//! directory 1/65,536 of the commits (`hh`, `gg`: the commit id's last four hex digits).
//!
//! Stores in key layout 1 (earlier versions) hold index entries, head markers and locators in one
//! directory per day, one for all seals and one per 1/256 of the commits:
//! `_lineage/index/<YYYY-MM-DD>/T<…>Z.<id>.run_id=<r>`, `_lineage/heads/<inv>-<seq>` and
//! `_lineage/leaves/<hh>/<id>.<leaf>.run_id=<r>` ([`Layout::V1`]). Those keys are read and
//! classified as they are; every new object is written in the layout above
//! ([`Layout::V2`]). The two index layouts are ordered so that a listing from
//! [`index_bound`] finds every entry of either layout at or after the bound (and, on the
//! day an older writer was still writing, a few earlier V1 entries, which the caller
//! drops by time).
//!
//! Everything under `_lineage/` and `_delta_log/` is skipped by dataset readers (leading
//! `_`), as are hidden temps (leading `.`). The Delta log's contents are
//! [`crate::format::delta`]. All keys are relative, `/`-separated, and built only here.

use crate::base::error::{Error, Result};

pub(crate) mod history;
pub(crate) mod iceberg;
pub(crate) mod kind;
#[cfg(test)]
mod tests;

pub use self::history::{
    canonical_index_key, entry_bundle_key, head_key, head_key_in, index_bound, index_dir,
    index_key, index_key_in, leaf_key, leaf_key_in, leaf_prefix, leaf_prefix_in, tile_key,
    tile_partials_prefix, tlog_tile_key, HistoryKey, Layout,
};
pub use self::iceberg::{
    classify_iceberg, iceberg_manifest_key, iceberg_manifest_list_key, iceberg_metadata_key,
    IcebergKey, ICEBERG_METADATA_PREFIX, ICEBERG_PREFIX,
};
pub use self::kind::{classify, is_claim_key, is_crs_segment, is_witness_key, part_name, KeyKind};

/// Prefix of the Delta log ([`crate::format::delta`]).
pub const DELTA_LOG_PREFIX: &str = "_delta_log/";

/// The key of Delta version `v` (version N is seal N; version 0 creates the table).
pub fn delta_version_key(v: u64) -> String {
    format!("{DELTA_LOG_PREFIX}{v:020}.json")
}

/// The version a key names, when it is exactly a Delta version key of ours.
pub fn parse_delta_version_key(key: &str) -> Option<u64> {
    delta_log_number(key, ".json")
}

/// The 20-digit version of `_delta_log/<version><suffix>`, when the key is exactly that.
fn delta_log_number(key: &str, suffix: &str) -> Option<u64> {
    let digits = key.strip_prefix(DELTA_LOG_PREFIX)?.strip_suffix(suffix)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The key of Delta version `v`'s checkpoint ([`crate::format::delta_checkpoint`]).
pub fn delta_checkpoint_key(v: u64) -> String {
    format!("{DELTA_LOG_PREFIX}{v:020}.checkpoint.parquet")
}

/// The version a key names, when it is exactly a checkpoint key of ours.
pub fn parse_delta_checkpoint_key(key: &str) -> Option<u64> {
    delta_log_number(key, ".checkpoint.parquet")
}

/// Longest accepted `run_id`, in bytes.
pub const MAX_RUN_ID_BYTES: usize = 128;
/// Prefix of everything that is not data.
pub const META_PREFIX: &str = "_lineage/";
/// The store's identity ([`crate::format::identity`]).
pub const IDENTITY_KEY: &str = "_lineage/store.json";
/// Prefix of the commit pointers.
pub const COMMITS_PREFIX: &str = "_lineage/commits/";
/// Prefix of the seals.
pub const SEALS_PREFIX: &str = "_lineage/seals/";
/// Prefix of commit-key claims (see [`crate::write::commit_key`]).
pub const COMMIT_KEYS_PREFIX: &str = "_lineage/commit-keys/";
/// Prefix of the records a witness store holds (see [`crate::witness`]'s `record_key`):
/// `_lineage/witness/<store id>/<seq, 20 digits>.json`.
pub const WITNESS_PREFIX: &str = "_lineage/witness/";

/// Prefix of everything compaction writes ([`crate::format::compaction`]).
pub const COMPACTED_PREFIX: &str = "_lineage/compacted/";
/// Prefix of compaction records.
pub const COMPACTION_RECORDS_PREFIX: &str = "_lineage/compacted/records/";
/// Prefix of compacted parts.
pub const COMPACTED_PARTS_PREFIX: &str = "_lineage/compacted/parts/";
/// File name suffix of a compacted part: not `.parquet`, so globs do not read it.
pub const COMPACTED_PART_SUFFIX: &str = ".compacted";

/// The record of compaction `compaction_id`.
pub fn compaction_record_key(compaction_id: &str) -> String {
    format!("{COMPACTION_RECORDS_PREFIX}{compaction_id}.json")
}

/// The compacted part of compaction `compaction_id`, for one partition.
pub fn compacted_part_key(run_id: &str, target_crs: &str, compaction_id: &str) -> String {
    format!(
        "{COMPACTED_PARTS_PREFIX}{}/part-{compaction_id}{COMPACTED_PART_SUFFIX}",
        partition_dir(run_id, target_crs)
    )
}

/// Prefix of the time-ordered commit index.
pub const INDEX_PREFIX: &str = "_lineage/index/";
/// Prefix of the head markers.
pub const HEADS_PREFIX: &str = "_lineage/heads/";
/// Prefix of the Merkle hash tiles.
pub const TILES_PREFIX: &str = "_lineage/tiles/";
/// Prefix of the leaf locators.
pub const LEAVES_PREFIX: &str = "_lineage/leaves/";
/// Prefix of the objects in open transparency-log formats (C2SP): what a tlog client is
/// given as the log's prefix.
pub const TLOG_PREFIX: &str = "_lineage/tlog/";
/// Prefix of the hash tiles and entry bundles in the C2SP tlog-tiles layout.
pub const TLOG_TILES_PREFIX: &str = "_lineage/tlog/tile/";
/// Prefix of the checkpoints, one per signed seal ([`crate::format::checkpoint`]).
pub const CHECKPOINTS_PREFIX: &str = "_lineage/tlog/checkpoints/";

/// The C2SP checkpoint of seal `seq` (create-only; the mutable `checkpoint` a tlog client
/// reads is served from the newest of these, never stored).
pub fn checkpoint_key(seq: u64) -> String {
    format!("{CHECKPOINTS_PREFIX}{seq:020}")
}
/// Prefix of the checkpoints cosigned by C2SP witnesses ([`crate::format::cosignature`]).
pub const COSIGNATURES_PREFIX: &str = "_lineage/tlog/cosignatures/";

/// Seal `seq`'s checkpoint as the witness with verifier key `vkey` cosigned it: the
/// checkpoint and the witness's cosignature line, one signed note (create-only). The name
/// is the sha256 of the witness's vkey, so witnesses never share a name.
pub fn cosignature_key(seq: u64, vkey: &str) -> String {
    format!(
        "{}{}",
        cosignatures_prefix(seq),
        crate::base::digest::sha256_hex(vkey.as_bytes())
    )
}

/// The prefix of seal `seq`'s cosigned checkpoints.
pub fn cosignatures_prefix(seq: u64) -> String {
    format!("{COSIGNATURES_PREFIX}{seq:020}/")
}

/// Prefix of the RFC 3161 requests and responses backing the seals' times
/// ([`crate::format::timestamp`]).
pub const TIMESTAMPS_PREFIX: &str = "_lineage/timestamps/";

/// The stored RFC 3161 request for seal `seq`'s time (create-only, written before it is sent).
pub fn timestamp_query_key(seq: u64) -> String {
    format!("{TIMESTAMPS_PREFIX}{seq:020}.tsq")
}

/// The TSA's response to [`timestamp_query_key`] (create-only, DER `TimeStampResp`).
pub fn timestamp_reply_key(seq: u64) -> String {
    format!("{TIMESTAMPS_PREFIX}{seq:020}.tsr")
}
/// Hashes in a full tile (tiles are 8 levels of the tree high).
pub const TILE_WIDTH: u64 = 256;

/// Whether every key under the area of `key` has names of fixed widths, so that S3's
/// byte order and a directory-by-directory order agree on them: the index (dates, hours,
/// minutes, seconds, then `T<time>Z.` and a 36-character id), head markers, tiles and leaf
/// locators. Not the runs (a `run_id` may be a prefix of another followed by `-`, `.` or
/// `+`, which sort before `/`), nor pointers, nor anything foreign.
pub fn orders_agree_under(key: &str) -> bool {
    [
        INDEX_PREFIX,
        HEADS_PREFIX,
        TILES_PREFIX,
        LEAVES_PREFIX,
        TLOG_PREFIX,
        TIMESTAMPS_PREFIX,
    ]
    .iter()
    .any(|p| key.starts_with(p))
}

/// Why a `run_id` is not acceptable in new input, or `None` when it is: a safe path
/// segment ([`run_id_segment_problem`]) of ASCII letters, digits and
/// [`RUN_ID_PUNCTUATION`] only.
pub fn run_id_problem(run_id: &str) -> Option<String> {
    if let Some(why) = run_id_segment_problem(run_id) {
        return Some(format!(
            "run_id {} {why}",
            crate::schema::rules::quote(run_id)
        ));
    }
    let c = run_id.chars().find(|&c| !is_run_id_char(c))?;
    Some(format!(
        "run_id {} contains {c:?} (U+{:04X}); a run_id holds only ASCII letters, digits and `{RUN_ID_PUNCTUATION}` \
         (other characters, e.g. look-alikes of `/` and `.`, could disguise one run as another)",
        crate::schema::rules::quote(run_id),
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
        Some(why) => Err(Error::usage(format!(
            "run_id {} {why}",
            crate::schema::rules::quote(run_id)
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

/// The key of seal `seq`.
pub fn seal_key(seq: u64) -> String {
    format!("{}{seq:020}.json", SEALS_PREFIX)
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
    format!(
        ".{name}.{}.tmp",
        crate::base::clock::IdGen::commit_id(&crate::base::clock::V7Ids).simple()
    )
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

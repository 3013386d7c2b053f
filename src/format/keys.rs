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
//! _lineage/witness/<store id>/<seq, 20 digits>.json            witness records (in a witness store)
//! _lineage/compacted/records/<compaction-id>.json             compaction records
//! _lineage/compacted/parts/run_id=<r>/target_crs=EPSG:<n>/part-<compaction-id>.compacted   compacted parts
//! _delta_log/<version, 20 digits>.json                         Delta Lake versions (one per seal)
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
//! Stores written before issue 23 hold index entries, head markers and locators in one
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

use chrono::{DateTime, Utc};

use crate::base::error::{Error, Result};

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

/// The key of Delta version `v`'s checkpoint ([`crate::format::checkpoint`]).
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
/// Hashes in a full tile (tiles are 8 levels of the tree high).
pub const TILE_WIDTH: u64 = 256;

/// Whether every key under the area of `key` has names of fixed widths, so that S3's
/// byte order and a directory-by-directory order agree on them: the index (dates, hours,
/// minutes, seconds, then `T<time>Z.` and a 36-character id), head markers, tiles and leaf
/// locators. Not the runs (a `run_id` may be a prefix of another followed by `-`, `.` or
/// `+`, which sort before `/`), nor pointers, nor anything foreign.
pub fn orders_agree_under(key: &str) -> bool {
    [INDEX_PREFIX, HEADS_PREFIX, TILES_PREFIX, LEAVES_PREFIX]
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
        Some(why) => Err(Error::Usage(format!(
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

/// How history objects are laid out (see the module docs): what this version writes, and
/// what stores written before hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One directory per day (index), for all seals (markers), per 1/256 of the commits
    /// (locators): written by versions before issue 23, read as it is.
    V1,
    /// Bounded directories: written by this version.
    V2,
}

/// The index entry of a commit: its key orders commits by `committed_utc` (then commit id)
/// across every run, so a listing that starts after a time finds exactly the commits made
/// since. Everything it says is in the key; the object is empty. One directory per second.
pub fn index_key(committed: DateTime<Utc>, commit_id: &str, run_id: &str) -> String {
    index_key_in(Layout::V2, committed, commit_id, run_id)
}

/// [`index_key`] in a given layout.
pub fn index_key_in(
    layout: Layout,
    committed: DateTime<Utc>,
    commit_id: &str,
    run_id: &str,
) -> String {
    format!(
        "{}.{commit_id}.run_id={run_id}",
        index_bound_in(layout, committed)
    )
}

/// The index key every entry of time `t` or later sorts after, and every earlier one
/// before: a `start-after` offset. It ends inside the directory of `t`'s second, with part
/// of a file name (never a directory's name, which some servers' `start-after` would skip:
/// docs/object-stores.md). Entries of the older layout ([`Layout::V1`]) of `t`'s day and
/// later also sort after it (their day directory holds `T…` files after the `<HH>/`
/// directories); a caller keeps those at or after `t` by their time.
pub fn index_bound(t: DateTime<Utc>) -> String {
    index_bound_in(Layout::V2, t)
}

fn index_bound_in(layout: Layout, t: DateTime<Utc>) -> String {
    match layout {
        Layout::V1 => format!("{INDEX_PREFIX}{}", t.format("%Y-%m-%d/T%H%M%S.%6fZ")),
        Layout::V2 => format!(
            "{INDEX_PREFIX}{}",
            t.format("%Y-%m-%d/%H/%M/%S/T%H%M%S.%6fZ")
        ),
    }
}

/// The index key of an entry in this version's layout, whichever layout `key` is in: what
/// two index keys are compared by (a seal's `ahead` list, made by any version, against the
/// listed entries). `None` when `key` is not an index key.
pub fn canonical_index_key(key: &str) -> Option<String> {
    match parse_history(key)? {
        HistoryKey::Index {
            committed,
            commit_id,
            run_id,
        } => Some(index_key(committed, &commit_id, &run_id)),
        _ => None,
    }
}

/// The head marker of seal `seq`: named by 2^64-1-seq, so the newest seal's marker is the
/// first key of a listing (one request finds the head, however many seals there are); a
/// directory holds the markers of 1,000 seals.
pub fn head_key(seq: u64) -> String {
    head_key_in(Layout::V2, seq)
}

/// [`head_key`] in a given layout.
pub fn head_key_in(layout: Layout, seq: u64) -> String {
    let inv = u64::MAX - seq;
    match layout {
        Layout::V1 => format!("{HEADS_PREFIX}{inv:020}-{seq:020}"),
        Layout::V2 => format!("{HEADS_PREFIX}{:017}/{inv:020}-{seq:020}", inv / 1000),
    }
}

/// A hash tile: level `level`, tile `index`, `width` hashes (a full tile is stored without a
/// width; a partial one under `.p/<width>`, as tiled transparency logs name them). The index
/// is written in groups of three digits, all but the last prefixed `x`, so no directory
/// holds more than 1000 entries.
pub fn tile_key(level: u8, index: u64, width: u64) -> String {
    let digits = format!("{index:03}");
    let mut groups: Vec<String> = Vec::new();
    let lead = digits.len() % 3;
    if lead != 0 {
        groups.push(format!("{:0>3}", &digits[..lead]));
    }
    for i in (lead..digits.len()).step_by(3) {
        groups.push(digits[i..i + 3].to_string());
    }
    let last = groups.pop().unwrap_or_default();
    let mut path: String = groups.iter().map(|g| format!("x{g}/")).collect();
    path.push_str(&last);
    if width < TILE_WIDTH {
        path.push_str(&format!(".p/{width}"));
    }
    format!("{TILES_PREFIX}{level}/{path}")
}

/// The directory holding every partial version of a tile (`<N>.p/`).
pub fn tile_partials_prefix(level: u8, index: u64) -> String {
    format!("{}.p/", tile_key(level, index, TILE_WIDTH))
}

/// The locator of a sealed commit: its leaf index in the Merkle tree and its run, found by
/// commit id alone (bucketed by the id's last four hex digits, which are random or hashed).
pub fn leaf_key(commit_id: &str, leaf_index: u64, run_id: &str) -> String {
    leaf_key_in(Layout::V2, commit_id, leaf_index, run_id)
}

/// [`leaf_key`] in a given layout.
pub fn leaf_key_in(layout: Layout, commit_id: &str, leaf_index: u64, run_id: &str) -> String {
    format!(
        "{}{leaf_index:020}.run_id={run_id}",
        leaf_prefix_in(layout, commit_id)
    )
}

/// Every locator of a commit id written by this version starts with this.
pub fn leaf_prefix(commit_id: &str) -> String {
    leaf_prefix_in(Layout::V2, commit_id)
}

/// Every locator of a commit id in `layout` starts with this. The first directory (`hh`,
/// the id's last two hex digits) is the same in both layouts.
pub fn leaf_prefix_in(layout: Layout, commit_id: &str) -> String {
    let tail = |from: usize, to: usize| {
        commit_id
            .get(commit_id.len().saturating_sub(from)..commit_id.len().saturating_sub(to))
            .unwrap_or("")
    };
    match layout {
        Layout::V1 => format!("{LEAVES_PREFIX}{}/{commit_id}.", tail(2, 0)),
        Layout::V2 => format!("{LEAVES_PREFIX}{}/{}/{commit_id}.", tail(2, 0), tail(4, 2)),
    }
}

/// The history objects (see [`crate::history`]), parsed from their keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryKey {
    /// A commit's index entry.
    Index {
        /// The commit's `committed_utc`.
        committed: DateTime<Utc>,
        /// Its id.
        commit_id: String,
        /// Its run.
        run_id: String,
    },
    /// The marker of a complete seal.
    Head(u64),
    /// A hash tile.
    Tile {
        /// Level: a tile of level L holds nodes 8L levels above the leaves.
        level: u8,
        /// Position within its level.
        index: u64,
        /// Hashes it holds (256 when full).
        width: u64,
    },
    /// A sealed commit's leaf locator.
    Leaf {
        /// The commit.
        commit_id: String,
        /// Its position in the Merkle tree.
        leaf_index: u64,
        /// Its run.
        run_id: String,
    },
}

impl HistoryKey {
    /// The pointer key an index entry or locator names.
    pub fn pointer_key(&self) -> Option<String> {
        match self {
            HistoryKey::Index {
                commit_id, run_id, ..
            }
            | HistoryKey::Leaf {
                commit_id, run_id, ..
            } => Some(pointer_key(run_id, commit_id)),
            _ => None,
        }
    }
}

fn parse_history(key: &str) -> Option<HistoryKey> {
    if let Some(rest) = key.strip_prefix(INDEX_PREFIX) {
        // <YYYY-MM-DD>/[<HH>/<MM>/<SS>/]T<HHMMSS.ffffff>Z.<36-char id>.run_id=<r>
        let (day, _) = rest.split_once('/')?;
        let (_, name) = rest.rsplit_once('/')?;
        let time = name.get(..15)?;
        let stamp = format!("{day}{time}");
        let committed = chrono::NaiveDateTime::parse_from_str(&stamp, "%Y-%m-%dT%H%M%S%.6fZ")
            .ok()?
            .and_utc();
        let commit_id = name.get(16..52)?;
        let run_id = name.get(52..)?.strip_prefix(".run_id=")?;
        let ok = day.len() == 10
            && name.as_bytes().get(15) == Some(&b'.')
            && is_commit_id(commit_id)
            && run_id_segment_problem(run_id).is_none()
            && [Layout::V2, Layout::V1]
                .iter()
                .any(|&l| index_key_in(l, committed, commit_id, run_id) == key);
        return ok.then(|| HistoryKey::Index {
            committed,
            commit_id: commit_id.to_string(),
            run_id: run_id.to_string(),
        });
    }
    if let Some(rest) = key.strip_prefix(HEADS_PREFIX) {
        let (_, name) = rest.rsplit_once('/').unwrap_or(("", rest));
        let seq: u64 = name.get(21..)?.parse().ok()?;
        let ok = [Layout::V2, Layout::V1]
            .iter()
            .any(|&l| head_key_in(l, seq) == key);
        return ok.then_some(HistoryKey::Head(seq));
    }
    if let Some(rest) = key.strip_prefix(TILES_PREFIX) {
        let (level, path) = rest.split_once('/')?;
        let level: u8 = level.parse().ok()?;
        let (path, width) = match path.split_once(".p/") {
            Some((p, w)) => (p, w.parse().ok()?),
            None => (path, TILE_WIDTH),
        };
        let index: u64 = path.replace(['x', '/'], "").parse().ok()?;
        let ok = level <= 8 && (1..=TILE_WIDTH).contains(&width);
        return (ok && tile_key(level, index, width) == key).then_some(HistoryKey::Tile {
            level,
            index,
            width,
        });
    }
    if let Some(rest) = key.strip_prefix(LEAVES_PREFIX) {
        // <hh>/[<gg>/]<36-char id>.<20 digits>.run_id=<r>
        let (_, name) = rest.rsplit_once('/')?;
        let commit_id = name.get(..36)?;
        let leaf_index: u64 = name.get(37..57)?.parse().ok()?;
        let run_id = name.get(57..)?.strip_prefix(".run_id=")?;
        let ok = is_commit_id(commit_id)
            && run_id_segment_problem(run_id).is_none()
            && [Layout::V2, Layout::V1]
                .iter()
                .any(|&l| leaf_key_in(l, commit_id, leaf_index, run_id) == key);
        return ok.then(|| HistoryKey::Leaf {
            commit_id: commit_id.to_string(),
            leaf_index,
            run_id: run_id.to_string(),
        });
    }
    None
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
    /// ([`crate::format::checkpoint`]).
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
        return KeyKind::Unknown;
    }
    if let Some(rest) = key.strip_prefix(SEALS_PREFIX) {
        if let Some(seq) = rest.strip_suffix(".json") {
            if seq.len() == 20 && seq.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(n) = seq.parse() {
                    return KeyKind::Seal(n);
                }
            }
        }
        return KeyKind::Unknown;
    }
    if is_claim_key(key) {
        return KeyKind::Claim;
    }
    if is_witness_key(key) {
        return KeyKind::Witness;
    }
    if let Some(rest) = key.strip_prefix(COMPACTION_RECORDS_PREFIX) {
        return match rest.strip_suffix(".json") {
            Some(id) if is_commit_id(id) => KeyKind::CompactionRecord {
                compaction_id: id.to_string(),
            },
            _ => KeyKind::Unknown,
        };
    }
    if let Some(rest) = key.strip_prefix(COMPACTED_PARTS_PREFIX) {
        let mut parts = rest.split('/');
        if let (Some(r), Some(t), Some(f), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        {
            if let (Some(run_id), Some(target_crs), Some(id)) = (
                r.strip_prefix("run_id="),
                t.strip_prefix("target_crs="),
                f.strip_prefix("part-")
                    .and_then(|f| f.strip_suffix(COMPACTED_PART_SUFFIX)),
            ) {
                if is_commit_id(id) && is_run_id(run_id) {
                    return KeyKind::CompactedPart {
                        run_id: run_id.to_string(),
                        target_crs: target_crs.to_string(),
                        compaction_id: id.to_string(),
                    };
                }
            }
        }
        return KeyKind::Unknown;
    }
    for p in [INDEX_PREFIX, HEADS_PREFIX, TILES_PREFIX, LEAVES_PREFIX] {
        if key.starts_with(p) {
            // Under a history prefix but not a name lineage-store makes: reported.
            return parse_history(key).map_or(KeyKind::Foreign, KeyKind::History);
        }
    }
    if key.starts_with(META_PREFIX) {
        return KeyKind::Unknown;
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
    use crate::base::clock::IdGen;
    format!(
        ".{name}.{}.tmp",
        crate::base::clock::V7Ids.commit_id().simple()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_must_be_a_safe_path_segment() {
        assert!(run_id_problem("run-2026-07-13-abc123").is_none());
        assert!(run_id_problem(&"r".repeat(128)).is_none());
        for bad in [
            "", "a/b", "a\\b", "a=b", "..", "a..b", ".hidden", "_meta", "a\nb", "a\u{7f}b", "x%2F",
        ] {
            assert!(run_id_problem(bad).is_some(), "{bad:?} must be refused");
        }
        assert!(run_id_problem(&"r".repeat(129))
            .unwrap()
            .contains("128 bytes"));
    }

    #[test]
    fn layout_keys_round_trip_through_classify() {
        let id = "0190b2f3-0000-7000-8000-000000000001";
        let part = part_key("run-a", "EPSG:4326", id);
        assert_eq!(
            part,
            format!("run_id=run-a/target_crs=EPSG:4326/part-{id}.parquet")
        );
        assert!(matches!(classify(&part), KeyKind::Part { commit_id, .. } if commit_id == id));
        let ptr = pointer_key("run-a", id);
        assert_eq!(ptr, format!("_lineage/commits/run_id=run-a/{id}.json"));
        assert!(matches!(classify(&ptr), KeyKind::Pointer { run_id, .. } if run_id == "run-a"));
        assert_eq!(
            classify("run_id=run-a/target_crs=EPSG:4326/.part-x.parquet.abc.tmp"),
            KeyKind::Temp
        );
        assert_eq!(
            classify("run_id=run-a/target_crs=EPSG:4326/other.parquet"),
            KeyKind::Foreign
        );
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn history_keys_of_both_layouts_classify_alike() {
        let id = "0190b2f3-0000-7000-8000-00000000ab12";
        let t = at("2026-07-13T14:30:12.123456Z");
        let v2 = index_key(t, id, "run-a");
        assert_eq!(
            v2,
            format!("_lineage/index/2026-07-13/14/30/12/T143012.123456Z.{id}.run_id=run-a")
        );
        let v1 = index_key_in(Layout::V1, t, id, "run-a");
        assert_eq!(
            v1,
            format!("_lineage/index/2026-07-13/T143012.123456Z.{id}.run_id=run-a")
        );
        let want = KeyKind::History(HistoryKey::Index {
            committed: t,
            commit_id: id.into(),
            run_id: "run-a".into(),
        });
        assert_eq!(classify(&v2), want);
        assert_eq!(classify(&v1), want);
        assert_eq!(canonical_index_key(&v1).as_deref(), Some(v2.as_str()));
        // A V2 file name in the wrong second's directory is not ours.
        let moved = v2.replace("/12/T", "/13/T");
        assert_eq!(classify(&moved), KeyKind::Foreign);

        assert_eq!(
            head_key(7),
            format!(
                "_lineage/heads/{:017}/{:020}-{:020}",
                (u64::MAX - 7) / 1000,
                u64::MAX - 7,
                7
            )
        );
        for l in [Layout::V1, Layout::V2] {
            assert_eq!(
                classify(&head_key_in(l, 7)),
                KeyKind::History(HistoryKey::Head(7))
            );
            let k = leaf_key_in(l, id, 42, "run-a");
            assert_eq!(
                classify(&k),
                KeyKind::History(HistoryKey::Leaf {
                    commit_id: id.into(),
                    leaf_index: 42,
                    run_id: "run-a".into()
                }),
                "{k}"
            );
            assert!(k.starts_with(&leaf_prefix_in(l, id)));
        }
        assert_eq!(leaf_prefix(id), format!("_lineage/leaves/12/ab/{id}."));
        assert_eq!(
            leaf_prefix_in(Layout::V1, id),
            format!("_lineage/leaves/12/{id}.")
        );
    }

    #[test]
    fn a_listing_from_an_index_bound_finds_both_layouts_from_then_on() {
        let id = "0190b2f3-0000-7000-8000-000000000001";
        let bound = index_bound(at("2026-07-13T14:30:12.5Z"));
        let key = |l, s: &str| index_key_in(l, at(s), id, "r");
        for (l, t, after) in [
            (Layout::V2, "2026-07-13T14:30:12.5Z", true),
            (Layout::V2, "2026-07-13T14:30:12.6Z", true),
            (Layout::V2, "2026-07-13T14:31:00Z", true),
            (Layout::V2, "2026-07-14T00:00:00Z", true),
            (Layout::V2, "2026-07-13T14:30:12.4Z", false),
            (Layout::V2, "2026-07-13T09:00:00Z", false),
            (Layout::V1, "2026-07-13T14:30:12.6Z", true),
            (Layout::V1, "2026-07-14T00:00:00Z", true),
            (Layout::V1, "2026-07-12T23:59:59Z", false),
            // The bound's day in the older layout: listed, and dropped by time.
            (Layout::V1, "2026-07-13T09:00:00Z", true),
        ] {
            assert_eq!(key(l, t) > bound, after, "{l:?} {t}");
        }
        // Newest marker first, across layouts and directories.
        let mut heads: Vec<String> = [1u64, 999, 1000, 1001, 5000]
            .iter()
            .map(|&n| head_key(n))
            .chain([head_key_in(Layout::V1, 3)])
            .collect();
        heads.sort();
        assert_eq!(heads[0], head_key(5000));
    }

    #[test]
    fn only_our_names_under_lineage_are_ours() {
        let claim = commit_key_claim_key("job-1");
        assert_eq!(classify(&claim), KeyKind::Claim);
        assert_eq!(
            classify(&format!(
                "_lineage/witness/{}/{:020}.json",
                "ab".repeat(32),
                3
            )),
            KeyKind::Witness
        );
        assert_eq!(classify(IDENTITY_KEY), KeyKind::Identity);
        for planted in [
            "_lineage/stash.parquet",
            "_lineage/notes.txt",
            "_lineage/commits/run_id=X/x.parquet",
            "_lineage/commit-keys/short.json",
            "_lineage/seals/1.json",
            "_lineage/witness/notes.txt",
            "_lineage/keys/seal.pub",
        ] {
            assert_eq!(classify(planted), KeyKind::Unknown, "{planted}");
        }
    }
}

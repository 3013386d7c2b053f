//! The keys of the history objects: index entries, head markers, hash tiles and leaf
//! locators, in both layouts ([`Layout`]).

use chrono::{DateTime, Utc};

use super::{
    is_commit_id, pointer_key, run_id_segment_problem, CHECKPOINTS_PREFIX, HEADS_PREFIX,
    INDEX_PREFIX, LEAVES_PREFIX, TILES_PREFIX, TILE_WIDTH, TIMESTAMPS_PREFIX, TLOG_TILES_PREFIX,
};

/// How history objects are laid out (see the module docs): what this version writes, and
/// what stores written before hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One directory per day (index), for all seals (markers), per 1/256 of the commits
    /// (locators): key layout 1, written by earlier versions, read as it is.
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

/// The directory of this version's index that holds the entries of `t`'s second
/// (`_lineage/index/<YYYY-MM-DD>/<HH>/<MM>/<SS>/`): a `start-after` listing from it sees
/// that whole directory and everything after it.
pub fn index_dir(t: DateTime<Utc>) -> String {
    format!("{INDEX_PREFIX}{}", t.format("%Y-%m-%d/%H/%M/%S/"))
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
    format!("{TILES_PREFIX}{level}/{}", tile_path(index, width))
}

/// `<N>[.p/<W>]` of tlog-tiles: the index in groups of three digits, all but the last
/// prefixed `x`, and the width of a partial tile.
fn tile_path(index: u64, width: u64) -> String {
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
    path
}

/// A hash tile in the C2SP tlog-tiles layout, `_lineage/tlog/tile/<L>/<N>[.p/<W>]`: the
/// same bytes as [`tile_key`]'s, where a tlog client given `_lineage/tlog/` reads them.
pub fn tlog_tile_key(level: u8, index: u64, width: u64) -> String {
    format!("{TLOG_TILES_PREFIX}{level}/{}", tile_path(index, width))
}

/// An entry bundle in the C2SP tlog-tiles layout, `_lineage/tlog/tile/entries/<N>[.p/<W>]`:
/// leaves `256 N ..` of the tree ([`crate::format::checkpoint`] says what a leaf is).
pub fn entry_bundle_key(index: u64, width: u64) -> String {
    format!("{TLOG_TILES_PREFIX}entries/{}", tile_path(index, width))
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
    /// A signed seal's C2SP checkpoint ([`crate::format::checkpoint`]).
    Checkpoint(u64),
    /// A hash tile in the C2SP layout ([`tlog_tile_key`]).
    TlogTile {
        /// Level.
        level: u8,
        /// Position within its level.
        index: u64,
        /// Hashes it holds (256 when full).
        width: u64,
    },
    /// An entry bundle in the C2SP layout ([`entry_bundle_key`]).
    EntryBundle {
        /// Position (leaves `256 index ..`).
        index: u64,
        /// Entries it holds (256 when full).
        width: u64,
    },
    /// A seal's checkpoint cosigned by a C2SP witness ([`super::cosignature_key`]).
    Cosignature {
        /// The seal.
        seq: u64,
        /// The sha256 (hex) of the witness's verifier key.
        witness: String,
    },
    /// The RFC 3161 request for a seal's time ([`super::timestamp_query_key`]).
    TimestampQuery(u64),
    /// The TSA's response to it ([`super::timestamp_reply_key`]).
    TimestampReply(u64),
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

/// A history object's key parsed, when it is exactly one lineage-store writes (in either
/// layout).
pub(super) fn parse_history(key: &str) -> Option<HistoryKey> {
    if let Some(rest) = key.strip_prefix(INDEX_PREFIX) {
        return parse_index(key, rest);
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
        return parse_tile(key, rest);
    }
    if let Some(rest) = key.strip_prefix(LEAVES_PREFIX) {
        return parse_leaf(key, rest);
    }
    if let Some(rest) = key.strip_prefix(TLOG_TILES_PREFIX) {
        return parse_tlog_tile(key, rest);
    }
    if let Some(rest) = key.strip_prefix(TIMESTAMPS_PREFIX) {
        let (seq, ext) = rest.split_once('.')?;
        let seq: u64 = seq.parse().ok()?;
        let h = match ext {
            "tsq" => HistoryKey::TimestampQuery(seq),
            "tsr" => HistoryKey::TimestampReply(seq),
            _ => return None,
        };
        let canonical = match h {
            HistoryKey::TimestampQuery(_) => super::timestamp_query_key(seq),
            _ => super::timestamp_reply_key(seq),
        };
        return (canonical == key).then_some(h);
    }
    if let Some(rest) = key.strip_prefix(super::COSIGNATURES_PREFIX) {
        let (seq, witness) = rest.split_once('/')?;
        let seq: u64 = seq.parse().ok()?;
        let hex = witness.len() == 64
            && witness
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let ok = hex && format!("{}{witness}", super::cosignatures_prefix(seq)) == key;
        return ok.then(|| HistoryKey::Cosignature {
            seq,
            witness: witness.to_string(),
        });
    }
    if let Some(rest) = key.strip_prefix(CHECKPOINTS_PREFIX) {
        let seq: u64 = rest.parse().ok()?;
        return (super::checkpoint_key(seq) == key).then_some(HistoryKey::Checkpoint(seq));
    }
    None
}

/// An index entry: `rest` is `key` after [`INDEX_PREFIX`].
fn parse_index(key: &str, rest: &str) -> Option<HistoryKey> {
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
    ok.then(|| HistoryKey::Index {
        committed,
        commit_id: commit_id.to_string(),
        run_id: run_id.to_string(),
    })
}

/// A hash tile: `rest` is `key` after [`TILES_PREFIX`].
fn parse_tile(key: &str, rest: &str) -> Option<HistoryKey> {
    let (level, path) = rest.split_once('/')?;
    let level: u8 = level.parse().ok()?;
    let (path, width) = match path.split_once(".p/") {
        Some((p, w)) => (p, w.parse().ok()?),
        None => (path, TILE_WIDTH),
    };
    let index: u64 = path.replace(['x', '/'], "").parse().ok()?;
    let ok = level <= 8 && (1..=TILE_WIDTH).contains(&width);
    (ok && tile_key(level, index, width) == key).then_some(HistoryKey::Tile {
        level,
        index,
        width,
    })
}

/// `<N>[.p/<W>]` parsed: (index, width).
fn parse_tile_path(path: &str) -> Option<(u64, u64)> {
    let (path, width) = match path.split_once(".p/") {
        Some((p, w)) => (p, w.parse().ok()?),
        None => (path, TILE_WIDTH),
    };
    let index: u64 = path.replace(['x', '/'], "").parse().ok()?;
    (1..=TILE_WIDTH).contains(&width).then_some((index, width))
}

/// A C2SP hash tile or entry bundle: `rest` is `key` after [`TLOG_TILES_PREFIX`].
fn parse_tlog_tile(key: &str, rest: &str) -> Option<HistoryKey> {
    let (level, path) = rest.split_once('/')?;
    let (index, width) = parse_tile_path(path)?;
    if level == "entries" {
        return (entry_bundle_key(index, width) == key)
            .then_some(HistoryKey::EntryBundle { index, width });
    }
    let level: u8 = level.parse().ok()?;
    (level <= 8 && tlog_tile_key(level, index, width) == key).then_some(HistoryKey::TlogTile {
        level,
        index,
        width,
    })
}

/// A leaf locator: `rest` is `key` after [`LEAVES_PREFIX`].
fn parse_leaf(key: &str, rest: &str) -> Option<HistoryKey> {
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
    ok.then(|| HistoryKey::Leaf {
        commit_id: commit_id.to_string(),
        leaf_index,
        run_id: run_id.to_string(),
    })
}

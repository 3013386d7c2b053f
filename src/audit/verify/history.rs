//! What a full `verify` checks of the history objects, and of the fields a
//! `lineage-seal/2` adds. Every check names the object it is about:
//!
//! - `bad_index_entry`: an index entry that holds bytes, names a pointer that is not in the
//!   store (the pointer was removed after its entry was written), or records another commit
//!   time than its pointer;
//! - `missed_by_seals`: a commit no seal covers that incremental seals will never find (no
//!   index entry, or one older than the newest seal's watermark);
//! - `bad_locator`: a locator that holds bytes or names another leaf than the seals give,
//!   or a missing locator of a sealed commit;
//! - `bad_head_marker`: a marker that holds bytes or marks a seal that does not exist (the
//!   newest seal without a marker is not a problem: `unfinished_seal` in the report);
//! - `bad_tile`: a tile whose hashes are not the tree's, or a tile the tree needs missing;
//! - a seal whose frontier, watermark or `ahead` is wrong: `seal_root_mismatch` /
//!   `seal_corrupt`, reported by the chain walk.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;

use crate::audit::chain::Chain;
use crate::audit::report::{Problem, ProblemKind};
use crate::audit::verify::shard::Scope;
use crate::base::error::Result;
use crate::format::keys::{self, HistoryKey, KeyKind, TILE_WIDTH};
use crate::format::pointer::Pointer;
use crate::history::index;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::Seal;
use crate::history::tiles::{self, width_in};
use crate::publish::{exists, AtomicPublisher, ObjectInfo};

/// What the history checks look at.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    /// The walked chain.
    pub chain: &'a Chain,
    /// Pointers read by this verify (this shard's), parsed.
    pub pointers: HashMap<&'a str, &'a Pointer>,
    /// Every pointer key listed by this verify, parseable or not.
    pub pointer_keys: HashSet<&'a str>,
    /// "Now", for the grace period.
    pub now: DateTime<Utc>,
    /// Younger commits and seals are in flight.
    pub grace: Duration,
    /// The shard, when verifying one.
    pub scope: Option<&'a Scope>,
}

impl Context<'_> {
    fn owns_pointer(&self, k: &str) -> bool {
        self.scope.is_none_or(|s| s.owns_pointer(k))
    }
    fn first(&self) -> bool {
        self.scope.is_none_or(Scope::first)
    }
    fn old(&self, t: Option<DateTime<Utc>>) -> bool {
        t.is_none_or(|t| t <= self.now - self.grace)
    }
}

/// Check the listed history objects (this shard's) against the chain and the pointers.
pub(crate) async fn check(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    objects: &[&ObjectInfo],
) -> Result<Checked> {
    let mut out = Vec::new();
    let mut index_keys: HashSet<String> = HashSet::new();
    let mut locators: HashSet<u64> = HashSet::new();
    let mut heads: Vec<(u64, &ObjectInfo)> = Vec::new();
    let mut tile_objs: Vec<(u8, u64, u64, &ObjectInfo)> = Vec::new();
    let mut beyond: Vec<(u64, &ObjectInfo)> = Vec::new();
    for o in objects {
        let KeyKind::History(h) = keys::classify(&o.key) else {
            continue;
        };
        if cx.scope.is_some_and(|s| !s.owns_history(&h)) {
            continue;
        }
        match h {
            HistoryKey::Index { .. } => {
                index_keys.extend(keys::canonical_index_key(&o.key));
                if let Some(p) = check_index_entry(store, cx, o, &h).await? {
                    out.push(p);
                }
            }
            HistoryKey::Leaf {
                leaf_index,
                ref commit_id,
                ref run_id,
            } => {
                let pk = keys::pointer_key(run_id, commit_id);
                let misplaced = if cx.chain.broken {
                    None
                } else {
                    match cx.chain.leaves.get(leaf_index as usize) {
                        // Judged below, against seals that landed after the walk.
                        None => {
                            beyond.push((leaf_index, o));
                            None
                        }
                        Some(l) if l.key != pk => Some(format!(
                            "places {pk} at leaf {leaf_index}, which the seals give to {}",
                            l.key
                        )),
                        Some(_) => None,
                    }
                };
                match misplaced {
                    Some(w) => out.push(Problem::new(ProblemKind::BadLocator, &o.key, w)),
                    None => {
                        locators.insert(leaf_index);
                    }
                }
                if o.size != 0 {
                    out.push(Problem::new(
                        ProblemKind::BadLocator,
                        &o.key,
                        format!("holds {} bytes; a locator is empty", o.size),
                    ));
                }
            }
            HistoryKey::Head(seq) => heads.push((seq, o)),
            HistoryKey::Tile {
                level,
                index,
                width,
            } => tile_objs.push((level, index, width, o)),
        }
    }
    let walked = cx.chain.leaves.len() as u64;
    let head_seq = cx.chain.head().map_or(0, |(n, _)| n);
    let later = if !beyond.is_empty()
        || heads.iter().any(|(seq, _)| *seq > head_seq)
        || tile_objs
            .iter()
            .any(|&(level, index, width, _)| !tile_within(walked, level, index, width))
    {
        later_seals(store, cx).await?
    } else {
        Later {
            seq: head_seq,
            tree_size: walked,
        }
    };
    for (leaf_index, o) in beyond {
        if leaf_index >= later.tree_size {
            out.push(Problem::new(
                ProblemKind::BadLocator,
                &o.key,
                format!("names leaf {leaf_index}, but the seals hold {walked} leaves"),
            ));
        }
    }
    out.extend(missed(store, cx, &index_keys).await?);
    let complete = complete_size(store, cx).await?;
    out.extend(missing_locators(store, cx, &locators, complete).await?);
    let mut unfinished_seal = None;
    if cx.first() {
        out.extend(check_heads(cx, &heads, later.seq));
        out.extend(check_tiles(store, cx, &tile_objs, complete, later.tree_size).await?);
        unfinished_seal = unfinished(cx, &heads);
    }
    Ok(Checked {
        problems: out,
        unfinished_seal,
    })
}

/// The newest seal and tree size including seals that landed after the chain was walked.
/// The listing is made after the walk (so that every sealed pointer is in it), so it can
/// hold the locators, tiles and head marker of a seal the walk did not see: those are not
/// judged by this verify (the next one walks that seal), while anything beyond even the
/// seals that exist now is a problem.
#[derive(Debug)]
struct Later {
    seq: u64,
    tree_size: u64,
}

/// Read the seals after the walked head (one GET of an absent key when none landed).
async fn later_seals(store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<Later> {
    let mut later = Later {
        seq: cx.chain.head().map_or(0, |(n, _)| n),
        tree_size: cx.chain.leaves.len() as u64,
    };
    while let Some(s) = crate::history::head::read_seal(store, later.seq + 1).await? {
        later.seq += 1;
        if let Ok(seal) = &s.seal {
            later.tree_size = later.tree_size.max(seal.tree_size);
        }
    }
    Ok(later)
}

/// Why a tile's bytes `have` are not the tree's `width` hashes.
fn changed(size: u64, width: u64) -> String {
    format!(
        "{size} bytes that are not the tree's {width} hashes (the tile was changed); proofs from it would fail"
    )
}

/// Whether tile (`level`, `index`) of `width` lies within a tree of `size` leaves.
fn tile_within(size: u64, level: u8, index: u64, width: u64) -> bool {
    index * TILE_WIDTH + width <= tiles::nodes_at(size, level)
}

/// What the history checks found.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Problems, each naming its object.
    pub problems: Vec<Problem>,
    /// The newest seal, when it has no head marker yet (see [`unfinished`]).
    pub unfinished_seal: Option<u64>,
}

async fn check_index_entry(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    o: &ObjectInfo,
    h: &HistoryKey,
) -> Result<Option<Problem>> {
    let (
        HistoryKey::Index {
            committed,
            commit_id,
            ..
        },
        Some(pk),
    ) = (h, h.pointer_key())
    else {
        return Ok(None);
    };
    let read;
    let pointer = match cx.pointers.get(pk.as_str()) {
        Some(p) => Some(*p),
        // Listed but not parseable: reported as a corrupt pointer.
        None if cx.pointer_keys.contains(pk.as_str()) => return Ok(None),
        // Another shard's pointer: sealed ones are that shard's to check.
        None if !cx.owns_pointer(&pk) && cx.chain.by_key.contains_key(&pk) => return Ok(None),
        // Not in the listing: look again, the pointer may have landed since (a listing is
        // not a snapshot: the index sorts after the pointers).
        None => {
            read = match crate::history::pointers::get_pointer_or_none(store, &pk).await? {
                Some(b) => Pointer::from_bytes(&pk, &b).ok(),
                None => None,
            };
            read.as_ref()
        }
    };
    // A sealed pointer that is gone is named by the chain (`sealed_pointer_missing`).
    if pointer.is_none() && o.size == 0 && cx.chain.by_key.contains_key(&pk) {
        return Ok(None);
    }
    Ok(index_entry_problem(
        &o.key, o.size, *committed, commit_id, &pk, pointer,
    ))
}

/// Whether `pointer` is the commit an index entry recording `committed` and `commit_id`
/// stands for.
pub(crate) fn entry_matches(pointer: &Pointer, committed: DateTime<Utc>, commit_id: &str) -> bool {
    index::committed(pointer) == Some(committed) && pointer.commit_id == commit_id
}

/// What is wrong with an index entry of `size` bytes recording `committed` and
/// `commit_id` for the pointer `pk`, given that pointer as read (`None`: not in the
/// store), if anything. A disagreement with the pointer is named before a wrong size, so
/// a tampered pointer is never hidden behind a non-empty entry.
pub(crate) fn index_entry_problem(
    key: &str,
    size: u64,
    committed: DateTime<Utc>,
    commit_id: &str,
    pk: &str,
    pointer: Option<&Pointer>,
) -> Option<Problem> {
    let why = match pointer {
        Some(p) if !entry_matches(p, committed, commit_id) => format!(
            "records commit {commit_id} at {}, but {pk} records commit {} at {}",
            crate::base::time::rfc3339(committed),
            p.commit_id,
            p.committed_utc
        ),
        _ if size != 0 => format!("holds {size} bytes; an index entry is empty (its key says everything)"),
        None => format!("names {pk}, which is not in the store: the commit's pointer was removed after its index entry was written; `lineage repair --from <replica or backup>` restores it"),
        Some(_) => return None,
    };
    Some(Problem::new(ProblemKind::BadIndexEntry, key, why))
}

/// Unsealed commits (older than the grace period) that incremental seals will not find.
async fn missed(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    listed_index: &HashSet<String>,
) -> Result<Vec<Problem>> {
    // Only a newest seal of the new format seals from the index; after an older one the
    // next seal reads every pointer anyway. A broken chain does not say what is sealed.
    if cx.chain.broken {
        return Ok(Vec::new());
    }
    let Some((newest_seq, newest)) = cx
        .chain
        .seals
        .last()
        .and_then(|s| s.seal.as_ref().ok().map(|p| (s.key_seq, p)))
        .filter(|(_, s)| s.is_v2())
    else {
        return Ok(Vec::new());
    };
    let watermark = newest
        .watermark_utc
        .as_deref()
        .and_then(|w| DateTime::parse_from_rfc3339(w).ok())
        .map(|t| t.with_timezone(&Utc));
    let ahead: HashSet<String> = newest
        .ahead
        .iter()
        .flatten()
        .map(|k| keys::canonical_index_key(k).unwrap_or_else(|| k.clone()))
        .collect();
    let candidates: Vec<(&str, &Pointer)> = cx
        .pointers
        .iter()
        .filter(|(k, p)| !cx.chain.by_key.contains_key(**k) && cx.old(index::committed(p)))
        .map(|(k, p)| (*k, *p))
        .collect();
    let found: Vec<Option<Problem>> = futures::stream::iter(candidates)
        .map(|(k, p)| {
            let ahead = &ahead;
            async move {
                let Some(ik) = index::key_of(p) else {
                    return Ok::<_, crate::base::error::Error>(Some(Problem::new(
                        ProblemKind::MissedBySeals,
                        k,
                        format!("committed_utc {:?} is not a time, so no index entry can name it; `lineage seal --rescan` seals it", p.committed_utc),
                    )));
                };
                // Not listed (or another shard's range): look it up, it may have landed since.
                let present = listed_index.contains(ik.as_str())
                    || exists(store, &ik).await?
                    || match index::committed(p) {
                        // An entry an older version wrote, in its layout.
                        Some(t) => {
                            let v1 = keys::index_key_in(keys::Layout::V1, t, &p.commit_id, &p.run_id);
                            exists(store, &v1).await?
                        }
                        None => false,
                    };
                let late = watermark.is_some_and(|w| index::committed(p).is_some_and(|t| t < w));
                Ok(if !present {
                    Some(Problem::new(
                        ProblemKind::MissedBySeals,
                        k,
                        format!("not sealed, and without its index entry {ik} (a crash between pointer and index entry, an adopted orphan, or a writer of an earlier version): incremental seals will not find it; `lineage seal --rescan` seals it"),
                    ))
                } else if late || ahead.contains(ik.as_str()) {
                    Some(Problem::new(
                        ProblemKind::MissedBySeals,
                        k,
                        format!("not sealed, and its index entry {ik} is older than seal {newest_seq}'s watermark {} (it landed later than the lookback allows): `lineage seal --rescan` seals it", newest.watermark_utc.as_deref().unwrap_or("")),
                    ))
                } else {
                    None
                })
            }
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect::<Vec<Result<Option<Problem>>>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    Ok(found.into_iter().flatten().collect())
}

/// The tree size every tile and locator should exist for: that of the newest seal with a
/// head marker, when some seal of the new format completed (0 otherwise).
async fn complete_size(store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<u64> {
    if !cx
        .chain
        .seals
        .iter()
        .any(|s| s.seal.as_ref().is_ok_and(Seal::is_v2))
    {
        return Ok(0);
    }
    let Some(marked) = crate::history::head::newest_marker(store).await? else {
        return Ok(0);
    };
    Ok(cx
        .chain
        .seals
        .iter()
        .filter(|s| s.key_seq <= marked)
        .filter_map(|s| s.seal.as_ref().ok())
        .map(|s| s.tree_size)
        .max()
        .unwrap_or(0)
        .min(cx.chain.leaves.len() as u64))
}

/// Locators the newest complete seal's tree needs that the listing lacks, each looked up
/// again before it is named: the head marker is read after the listing, so a seal finished
/// in between has a marker but locators the listing missed.
async fn missing_locators(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    present: &HashSet<u64>,
    complete: u64,
) -> Result<Vec<Problem>> {
    if cx.chain.broken {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, l) in cx.chain.leaves.iter().enumerate().take(complete as usize) {
        if present.contains(&(i as u64)) {
            continue;
        }
        let KeyKind::Pointer { run_id, commit_id } = keys::classify(&l.key) else {
            continue;
        };
        if cx.scope.is_some_and(|s| !s.owns_locator(&commit_id)) {
            continue;
        }
        let key = keys::leaf_key(&commit_id, i as u64, &run_id);
        let v1 = keys::leaf_key_in(keys::Layout::V1, &commit_id, i as u64, &run_id);
        if exists(store, &key).await? || exists(store, &v1).await? {
            continue;
        }
        out.push(Problem::new(
            ProblemKind::BadLocator,
            &key,
            format!(
                "missing: {} is sealed at leaf {i}; `lineage seal --rescan` writes it",
                l.key
            ),
        ));
    }
    Ok(out)
}

/// Head markers: empty, each of a seal that exists (`later`: the newest seal now, which
/// may have landed after the walk).
fn check_heads(cx: &Context<'_>, heads: &[(u64, &ObjectInfo)], later: u64) -> Vec<Problem> {
    let mut out = Vec::new();
    let seqs: HashSet<u64> = cx.chain.seals.iter().map(|s| s.key_seq).collect();
    for (seq, o) in heads {
        if o.size != 0 {
            out.push(Problem::new(
                ProblemKind::BadHeadMarker,
                &o.key,
                format!("holds {} bytes; a head marker is empty", o.size),
            ));
        } else if !seqs.contains(seq)
            && cx.chain.head().is_none_or(|(n, _)| *seq > n)
            && *seq > later
        {
            // (A missing seal below the newest is named by the chain: seal_missing.)
            out.push(Problem::new(
                ProblemKind::BadHeadMarker,
                &o.key,
                format!("marks seal {seq}, which is not in the store"),
            ));
        }
    }
    out
}

/// The newest seal, when it has no head marker: a sealer (or a replication) stopped
/// between the seal and its marker. Not a problem (every seal, pointer and part is still
/// checked; what the marker vouches for is checked up to the newest marked seal), but
/// said, since `lineage seal` (or the next `lineage replicate`) finishes it.
fn unfinished(cx: &Context<'_>, heads: &[(u64, &ObjectInfo)]) -> Option<u64> {
    let newest = cx.chain.seals.last()?;
    let marked = heads.iter().any(|(s, _)| *s == newest.key_seq);
    let seal = newest.seal.as_ref().ok()?;
    (seal.is_v2() && !marked).then_some(newest.key_seq)
}

async fn check_tiles(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    listed: &[(u8, u64, u64, &ObjectInfo)],
    complete: u64,
    later: u64,
) -> Result<Vec<Problem>> {
    if cx.chain.broken {
        return Ok(Vec::new());
    }
    let levels = tiles::all_levels(&cx.chain.leaf_hashes(cx.chain.leaves.len()));
    let mut out = Vec::new();
    let mut widest: HashMap<(u8, u64), u64> = HashMap::new();
    let read: Vec<Result<Option<Problem>>> = futures::stream::iter(listed)
        .map(|&(level, index, width, o)| {
            let levels = &levels;
            async move {
                let from = (index * TILE_WIDTH) as usize;
                let want = levels
                    .get(level as usize)
                    .and_then(|l| l.get(from..from + width as usize));
                let Some(want) = want else {
                    // Of a seal that landed after the walk: the next verify judges it.
                    if tile_within(later, level, index, width) {
                        return Ok(None);
                    }
                    return Ok(Some(Problem::new(
                        ProblemKind::BadTile,
                        &o.key,
                        "lies beyond the tree the seals give",
                    )));
                };
                // Not the size of its width (as listed, or when read): changed, not read.
                let max = width * 32;
                let have = if o.size != max {
                    Err(o.size)
                } else {
                    match store.get_at_most(&o.key, max).await {
                        Ok(have) => Ok(have.unwrap_or_default()),
                        Err(crate::base::error::Error::TooLarge { size, .. }) => Err(size),
                        Err(e) => return Err(e),
                    }
                };
                let size = match &have {
                    Ok(h) if tiles::parse_tile(h).as_deref() == Some(want) => return Ok(None),
                    Ok(h) => h.len() as u64,
                    Err(size) => *size,
                };
                Ok(Some(Problem::new(
                    ProblemKind::BadTile,
                    &o.key,
                    changed(size, width),
                )))
            }
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    for r in read {
        out.extend(r?);
    }
    for &(level, index, width, _) in listed {
        let w = widest.entry((level, index)).or_insert(0);
        *w = (*w).max(width);
    }
    for (level, nodes) in levels.iter().enumerate() {
        let level = level as u8;
        let n = tiles::nodes_at(complete, level);
        if n == 0 {
            continue;
        }
        for index in 0..n.div_ceil(TILE_WIDTH) {
            let need = width_in(complete, level, index);
            if widest.get(&(level, index)).copied().unwrap_or(0) < need && nodes.len() as u64 >= n {
                // Looked up again: the seal may have been finished after the listing.
                let key = keys::tile_key(level, index, need);
                let from = (index * TILE_WIDTH) as usize;
                let want = nodes.get(from..from + need as usize);
                let why = match store.get_at_most(&key, need * 32).await {
                    Ok(None) => "missing: the newest complete seal's tree needs it; `lineage seal --rescan` writes it".to_string(),
                    Ok(Some(have)) if tiles::parse_tile(&have).as_deref() == want => continue,
                    Ok(Some(have)) => changed(have.len() as u64, need),
                    Err(crate::base::error::Error::TooLarge { size, .. }) => changed(size, need),
                    Err(e) => return Err(e),
                };
                out.push(Problem::new(ProblemKind::BadTile, &key, why));
            }
        }
    }
    Ok(out)
}

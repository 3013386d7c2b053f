//! Drafting a seal: what it adds, read incrementally from the index after a seal of the
//! new format, or in full from every seal and every pointer (see the [module
//! documentation](super)).

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;

use crate::base::clock::Clock;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, ErrorKind, Result};
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::Pointer;
use crate::history::complete::SealedLeaf;
use crate::history::frontier::Frontier;
use crate::history::head::Heads;
use crate::history::index;
use crate::history::merkle::{self, Hash};
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::{read_seals, IndexWindow, Seal, SealEntry, StoredSeal};
use crate::history::window;
use crate::publish::AtomicPublisher;

/// A pointer a seal left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotSealed {
    /// The pointer's key.
    pub key: String,
    /// Why it is not a pointer of ours.
    pub reason: String,
}

/// One commit about to be sealed.
pub(super) struct NewCommit {
    pub(super) entry: SealEntry,
    pub(super) committed: Option<DateTime<Utc>>,
    pub(super) commit_id: String,
    pub(super) index_key: Option<String>,
}

/// What a seal adds, before it is signed and published.
pub(super) struct Draft {
    pub(super) prev: Option<StoredSeal>,
    /// Every leaf of the tree so far (full seals only; for the completion).
    pub(super) all_leaves: Option<Vec<SealedLeaf>>,
    pub(super) frontier: Frontier,
    pub(super) new: Vec<NewCommit>,
    pub(super) watermark: DateTime<Utc>,
    pub(super) ahead: Vec<String>,
    /// The index window it records (incremental seals).
    pub(super) window: Option<IndexWindow>,
    /// Pointers read and left out: not pointers of ours (see [`taken`]).
    pub(super) refused: Vec<NotSealed>,
}

/// A pointer read for sealing: the commit, or the pointer left out when its object is not
/// a pointer of ours (unparseable, too large, contradicting its key, a symlink): one object
/// a writer planted must not stop the sealing of every other commit. Other errors (the
/// store failing) stop it.
fn taken(key: &str, read: Result<NewCommit>) -> Result<std::result::Result<NewCommit, NotSealed>> {
    match read {
        Ok(c) => Ok(Ok(c)),
        Err(e) if e.kind() == ErrorKind::Integrity || matches!(e, Error::Symlink { .. }) => {
            tracing::warn!(pointer = %key, error = %e, "not a pointer of ours: left out of the seal (see `lineage verify`)");
            Ok(Err(NotSealed {
                key: key.to_string(),
                reason: e.to_string(),
            }))
        }
        Err(e) => Err(e),
    }
}

/// Commits and pointers left out, apart; the latter sorted by key.
fn split(
    read: impl IntoIterator<Item = std::result::Result<NewCommit, NotSealed>>,
) -> (Vec<NewCommit>, Vec<NotSealed>) {
    let (mut new, mut refused) = (Vec::new(), Vec::new());
    for r in read {
        match r {
            Ok(c) => new.push(c),
            Err(n) => refused.push(n),
        }
    }
    refused.sort_by(|a: &NotSealed, b| a.key.cmp(&b.key));
    (new, refused)
}

/// The draft of the next seal: incremental after a seal of the new format (unless
/// `rescan`), full otherwise; `lookback`: how far behind the sealer's clock a writer's
/// index entry may still land.
pub(super) async fn draft(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    lookback: Duration,
    rescan: bool,
    heads: Heads,
    newest: Option<StoredSeal>,
) -> Result<Draft> {
    let incremental = match &newest {
        Some(s) if !rescan => s.seal.as_ref().is_ok_and(Seal::is_v2),
        _ => false,
    };
    if incremental {
        let base = newest.ok_or_else(|| Error::internal("no base seal"))?;
        draft_incremental(store, clock, lookback, base).await
    } else {
        let all = match heads.legacy {
            Some(all) => all,
            None => read_seals(store).await?,
        };
        draft_full(store, clock, lookback, all).await
    }
}

/// The time `s` (an RFC 3339 field of seal `key`).
fn time_of(s: &str, key: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| Error::Corrupt {
            what: "seal",
            key: key.to_string(),
            message: format!("watermark {s:?} is not a time: {e}").into(),
        })
}

/// The time an index key records.
fn index_time(key: &str) -> Option<DateTime<Utc>> {
    match keys::classify(key) {
        KeyKind::History(HistoryKey::Index { committed, .. }) => Some(committed),
        _ => None,
    }
}

/// The draft after seal `base` (of the new format): the index from its watermark on, and
/// the late entries of its window ([`window::unsealed`]).
async fn draft_incremental(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    lookback: Duration,
    base: StoredSeal,
) -> Result<Draft> {
    let listed_at = clock.now();
    let s = base
        .seal
        .as_ref()
        .map_err(|m| Error::internal(m.to_string()))?;
    let corrupt = |m: &str| Error::Corrupt {
        what: "seal",
        key: base.key.clone(),
        message: format!("{m}; run `lineage verify`").into(),
    };
    let frontier = Frontier::from_hex(s.tree_size, s.frontier.as_deref().unwrap_or_default())
        .ok_or_else(|| corrupt("its frontier does not fit its tree size"))?;
    // Checks the watermark is a time, naming the seal.
    time_of(s.watermark_utc.as_deref().unwrap_or_default(), &base.key)?;
    let mark = window::Mark::of(s).ok_or_else(|| corrupt("its watermark is not a time"))?;
    let from = mark.window_start().max(listed_at - lookback);
    // The file system's clock before the listing: a directory whose stamp is older was
    // listed whole ([`window::stamps_for`]).
    let stamp_clock = store.stamp_clock(keys::INDEX_PREFIX).await?;
    let listed = window::unsealed(store, &mark, Some(from)).await?;
    let entries = listed.entries.clone();
    let read: Vec<Option<std::result::Result<NewCommit, NotSealed>>> =
        futures::stream::iter(entries)
            .map(|e| async move { read_indexed(store, &e).await })
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
    let (mut new, refused) = split(read.into_iter().flatten());
    sort_commits(&mut new);
    let watermark = next_watermark(&mark, &listed, &new, listed_at, lookback);
    let ahead = ahead_keys(
        mark.ahead
            .iter()
            .cloned()
            .chain(new.iter().filter_map(|c| c.index_key.clone())),
        watermark,
    );
    let mut win = window::window_of(&listed, from, watermark);
    let bound = keys::index_bound(watermark);
    win.stamps = window::stamps_for(store, &win, &listed, &bound, stamp_clock).await?;
    win.fs_clock_ns = stamp_clock.map(|c| c.to_string());
    Ok(Draft {
        prev: Some(base),
        all_leaves: None,
        frontier,
        new,
        watermark,
        ahead,
        window: Some(win),
        refused,
    })
}

/// The next seal's watermark: never before the previous one nor more than the lookback
/// behind the clock, and up to the second of the newest commit sealed (not past the
/// clock's second, nor past an entry listed but not sealed, so that one is listed again
/// until the lookback passes it, as before). Entries before it that land late are found
/// by the window's counts.
fn next_watermark(
    mark: &window::Mark,
    listed: &window::Unsealed,
    new: &[NewCommit],
    listed_at: DateTime<Utc>,
    lookback: Duration,
) -> DateTime<Utc> {
    let second = |t: DateTime<Utc>| DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t);
    let floor = mark.watermark.max(listed_at - lookback);
    let sealed: HashSet<&str> = new.iter().map(|c| c.entry.key.as_str()).collect();
    let newest = mark
        .ahead
        .iter()
        .filter_map(|k| index_time(k))
        .chain(new.iter().filter_map(|c| c.committed))
        .max();
    let held = listed
        .entries
        .iter()
        .filter(|e| !sealed.contains(e.pointer_key.as_str()))
        .map(|e| e.committed)
        .min();
    let Some(newest) = newest else {
        return floor;
    };
    let mut up_to = second(newest).min(second(listed_at));
    if let Some(h) = held {
        up_to = up_to.min(second(h));
    }
    floor.max(up_to)
}

/// The commit an index entry names: `None` when its pointer is missing or disagrees with
/// it (`verify` names both), the pointer left out when it is not one of ours.
async fn read_indexed(
    store: &dyn AtomicPublisher,
    e: &index::Entry,
) -> Result<Option<std::result::Result<NewCommit, NotSealed>>> {
    let bytes = match crate::history::pointers::get_pointer(store, &e.pointer_key).await {
        Ok(Some(b)) => b,
        Ok(None) => {
            tracing::warn!(index = %e.key, "index entry names a missing pointer; not sealed (see `lineage verify`)");
            return Ok(None);
        }
        Err(err) => return taken(&e.pointer_key, Err(err)).map(Some),
    };
    let c = match taken(&e.pointer_key, read_commit(&e.pointer_key, &bytes))? {
        Ok(c) => c,
        Err(refused) => return Ok(Some(Err(refused))),
    };
    if c.committed != Some(e.committed) || c.commit_id != e.commit_id {
        tracing::warn!(index = %e.key, "index entry disagrees with its pointer; not sealed from it (see `lineage verify`)");
        return Ok(None);
    }
    Ok(Some(Ok(c)))
}

/// Keys at or after the watermark, sorted, without repeats.
fn ahead_keys(keys: impl Iterator<Item = String>, watermark: DateTime<Utc>) -> Vec<String> {
    // In this version's layout, so that an entry named by an older seal in the older
    // layout is listed once.
    let mut v: Vec<String> = keys
        .filter(|k| index_time(k).is_some_and(|t| t >= watermark))
        .map(|k| keys::canonical_index_key(&k).unwrap_or(k))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Commits in index order: commit time, then commit id, then pointer key; a pointer
/// without a valid time (none written by this version) sorts first.
fn sort_commits(v: &mut [NewCommit]) {
    v.sort_by(|a, b| {
        (a.committed, &a.commit_id, &a.entry.key).cmp(&(b.committed, &b.commit_id, &b.entry.key))
    });
}

/// Parse a pointer read for sealing; one that contradicts its key is refused (as before).
fn read_commit(key: &str, bytes: &[u8]) -> Result<NewCommit> {
    let p = Pointer::from_bytes(key, bytes)?;
    if keys::pointer_key(&p.run_id, &p.commit_id) != key {
        return Err(Error::Corrupt {
            what: "pointer",
            key: key.to_string(),
            message: "its content contradicts its key; refusing to seal it (see `lineage verify`)"
                .into(),
        });
    }
    Ok(NewCommit {
        entry: SealEntry {
            key: key.to_string(),
            sha256: sha256_hex(bytes),
            adopted: p.adopted,
        },
        committed: index::committed(&p),
        index_key: index::key_of(&p),
        commit_id: p.commit_id,
    })
}

/// The draft from every seal (`seals`) and every pointer listed.
async fn draft_full(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    lookback: Duration,
    seals: Vec<StoredSeal>,
) -> Result<Draft> {
    let listed_at = clock.now();
    let so_far = SoFar::of(&seals)?;
    let watermark = so_far
        .watermark
        .map_or(listed_at - lookback, |w| w.max(listed_at - lookback));
    let (mut new, refused) = read_unsealed(store, &so_far.sealed).await?;
    sort_commits(&mut new);
    let recent_keys = recent_index_keys(store, &seals, watermark - lookback).await?;
    let ahead = ahead_keys(
        so_far
            .ahead
            .into_iter()
            .chain(recent_keys.into_iter().flatten())
            .chain(new.iter().filter_map(|c| c.index_key.clone())),
        watermark,
    );
    let leaves = so_far.leaves;
    let hashes: Vec<Hash> = leaves
        .iter()
        .filter_map(|(_, d)| merkle::parse_hash(d).map(|d| merkle::leaf_hash(&d)))
        .collect();
    Ok(Draft {
        prev: seals.last().cloned(),
        frontier: Frontier::of_leaves(&hashes),
        all_leaves: Some(leaves),
        new,
        watermark,
        ahead,
        window: None,
        refused,
    })
}

/// What every seal so far records, for a full seal.
struct SoFar {
    /// Every leaf, in order.
    leaves: Vec<SealedLeaf>,
    /// Every sealed pointer key.
    sealed: HashSet<String>,
    /// The newest seal's watermark.
    watermark: Option<DateTime<Utc>>,
    /// The newest seal's `ahead`.
    ahead: Vec<String>,
}

impl SoFar {
    /// Read from `seals`; a seal that is corrupt stops the sealing.
    fn of(seals: &[StoredSeal]) -> Result<Self> {
        let mut out = SoFar {
            leaves: Vec::new(),
            sealed: HashSet::new(),
            watermark: None,
            ahead: Vec::new(),
        };
        for s in seals {
            let seal = s.seal.as_ref().map_err(|m| Error::Corrupt {
                what: "seal",
                key: s.key.clone(),
                message: format!("{m}; run `lineage verify` before sealing again").into(),
            })?;
            for e in &seal.entries {
                merkle::parse_hash(&e.sha256).ok_or_else(|| Error::Corrupt {
                    what: "seal",
                    key: s.key.clone(),
                    message: format!("entry {} has no valid sha256", e.key).into(),
                })?;
                out.leaves.push((e.key.clone(), e.sha256.to_lowercase()));
                out.sealed.insert(e.key.clone());
            }
            if let Some(w) = &seal.watermark_utc {
                out.watermark = Some(time_of(w, &s.key)?);
                out.ahead = seal.ahead.clone().unwrap_or_default();
            }
        }
        Ok(out)
    }
}

/// Every listed pointer not in `sealed`, read; those not ours apart.
async fn read_unsealed(
    store: &dyn AtomicPublisher,
    sealed: &HashSet<String>,
) -> Result<(Vec<NewCommit>, Vec<NotSealed>)> {
    let listed = store.list(keys::COMMITS_PREFIX).await?;
    let unsealed = listed.into_iter().filter(|o| {
        matches!(keys::classify(&o.key), KeyKind::Pointer { .. }) && !sealed.contains(&o.key)
    });
    let read: Vec<std::result::Result<NewCommit, NotSealed>> = futures::stream::iter(unsealed)
        .map(|o| async move {
            let read = match crate::history::pointers::get_pointer(store, &o.key).await {
                Ok(Some(bytes)) => read_commit(&o.key, &bytes),
                // Listed, but not there to read: gone since (or never a file).
                Ok(None) => {
                    return Ok(Err(NotSealed {
                        key: o.key.clone(),
                        reason: "listed, but not there to read".into(),
                    }))
                }
                Err(e) => Err(e),
            };
            taken(&o.key, read)
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    Ok(split(read))
}

/// The index keys of commits sealed earlier but committed at or after the watermark: their
/// index entries will be listed by the next seal, which must skip them. Only seals made
/// since `since` (the watermark less the lookback) can hold such commits; their pointers
/// are read for their times.
async fn recent_index_keys(
    store: &dyn AtomicPublisher,
    seals: &[StoredSeal],
    since: DateTime<Utc>,
) -> Result<Vec<Option<String>>> {
    let recent: Vec<String> = seals
        .iter()
        .filter_map(|s| s.seal.as_ref().ok())
        .filter(|s| {
            DateTime::parse_from_rfc3339(&s.sealed_utc)
                .map_or(true, |t| t.with_timezone(&Utc) >= since)
        })
        .flat_map(|s| s.entries.iter().map(|e| e.key.clone()))
        .collect();
    futures::stream::iter(recent)
        .map(|k| async move {
            Ok::<_, Error>(
                match crate::history::pointers::get_pointer_or_none(store, &k).await? {
                    Some(b) => Pointer::from_bytes(&k, &b)
                        .ok()
                        .and_then(|p| index::key_of(&p)),
                    None => None,
                },
            )
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await
}

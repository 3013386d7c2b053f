//! The commits not sealed yet, in O(new + one second of commits) however many commits the
//! lookback holds: what `seal`, `log --since-seal` and `verify --since-seal` list.
//!
//! A seal's watermark is at most its lookback behind the sealer's clock, and up to the
//! second of the newest commit it sealed ([`crate::history::sealer`]); `ahead` names the
//! sealed entries at or after it (about one second of commits). The index from the
//! watermark on is listed as before (`start-after`, one request per 1,000 keys, a stat per
//! key on local disk). The lookback before the watermark, where a writer whose clock is
//! behind may still land an entry, is not listed entry by entry: the seal records how
//! many keys each index directory there held ([`IndexWindow`]), and a later reader lists
//! only those names (one listing from the window's first directory on:
//! [`AtomicPublisher::list_after_sized_from`], names and `d_type` on local disk and no
//! file's metadata before the watermark; the same listing pages on an object store) and re-examines a
//! directory whose count changed, asking each of its entries' leaf locators whether it is
//! sealed. So an entry that lands late, within the lookback, is still found; the cost of
//! a busy lookback is its names, not a stat, a key parse and an `ahead` key per commit.
//!
//! On a local disk not even the names: the seal records the change stamp of each
//! per-second directory it listed whole (read after the listing, older than the file
//! system's clock read before it: [`stamps_for`]), and a later reader stats those
//! directories and does not read one whose stamp is unchanged ([`unchanged_dirs`]): an
//! entry created in it since would have changed its stamp
//! ([`AtomicPublisher::dir_stamps`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::{DateTime, Utc};

use crate::base::error::Result;
use crate::format::keys::{self, HistoryKey, KeyKind, Layout, INDEX_PREFIX};
use crate::history::index::{self, Entry};
use crate::history::seal::{IndexWindow, Seal};
use crate::publish::dirs::DirStamp;
use crate::publish::{dir_of, list_pages, AtomicPublisher, ObjectInfo};

/// What a seal says of the index it sealed from.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    /// Its watermark.
    pub watermark: DateTime<Utc>,
    /// The entries at or after the watermark it records as sealed (canonical keys).
    pub ahead: HashSet<String>,
    /// Its window's start and counts, when it records them.
    pub window: Option<(DateTime<Utc>, BTreeMap<String, u64>)>,
    /// The change stamps its window records (local disk), by directory.
    pub stamps: BTreeMap<String, DirStamp>,
}

impl Mark {
    /// The mark of a `lineage-seal/2`; `None` when its watermark is not a time.
    pub(crate) fn of(seal: &Seal) -> Option<Self> {
        let watermark = time(seal.watermark_utc.as_deref()?)?;
        let ahead = seal
            .ahead
            .iter()
            .flatten()
            .map(|k| keys::canonical_index_key(k).unwrap_or_else(|| k.clone()))
            .collect();
        let window = seal
            .index_window
            .as_ref()
            .and_then(|w| Some((time(&w.from_utc)?, w.counts.clone())));
        let stamps = seal
            .index_window
            .iter()
            .flat_map(|w| &w.stamps)
            .filter_map(|(d, t)| Some((d.clone(), DirStamp::from_text(t)?)))
            .collect();
        Some(Mark {
            watermark,
            ahead,
            window,
            stamps,
        })
    }

    /// Where the window it records starts (its watermark when it records none): entries
    /// committed before it that land late are not looked for.
    pub(crate) fn window_start(&self) -> DateTime<Utc> {
        self.window.as_ref().map_or(self.watermark, |(f, _)| *f)
    }
}

fn time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// What the index holds after a seal.
#[derive(Debug, Default)]
pub(crate) struct Unsealed {
    /// The entries not sealed yet, in commit-time order: those at or after the watermark
    /// not in `ahead`, and those that landed late in the window.
    pub entries: Vec<Entry>,
    /// The keys of the window (from the first directory of `from` to the watermark's
    /// bound) by directory, as listed now.
    pub counts: BTreeMap<String, u64>,
    /// Every key listed at or after the watermark's bound.
    pub after: Vec<String>,
    /// Directories of the window re-examined because their count changed.
    pub reexamined: usize,
    /// Directories of the window not read: their stamp is the one the mark recorded, so
    /// their count is the recorded one.
    pub unchanged: BTreeMap<String, DirStamp>,
}

/// The entries not sealed after `mark`, looking for late ones in the window from `from`
/// (not before the mark's own window start; `None`: not at all) to the watermark. Only
/// directories the mark counted are compared: after a seal that records no window, the
/// window is listed (for the next seal's counts) but trusted.
pub(crate) async fn unsealed(
    store: &dyn AtomicPublisher,
    mark: &Mark,
    from: Option<DateTime<Utc>>,
) -> Result<Unsealed> {
    let bound = keys::index_bound(mark.watermark);
    let lo = from.filter(|f| *f <= mark.watermark).map_or_else(
        || bound.clone(),
        |f| keys::index_dir(f.max(mark.window_start())),
    );
    // The window's directories whose stamp is the recorded one are not read.
    let unchanged = unchanged_dirs(store, mark, &lo, &bound).await?;
    let skip: BTreeSet<String> = unchanged.keys().cloned().collect();
    // One listing from the window's first directory: its names (no metadata before the
    // bound, on local disk), then every object from the watermark on.
    let listed = list_sized_from(store, &lo, &bound, &skip).await?;
    let (window, after): (Vec<ObjectInfo>, Vec<ObjectInfo>) = listed
        .into_iter()
        .partition(|o| o.key.as_str() < bound.as_str());
    let mut counts = count_by_dir(window.iter().map(|o| o.key.as_str()));
    if let Some((_, recorded)) = &mark.window {
        for dir in &skip {
            if let Some(n) = recorded.get(dir) {
                counts.insert(dir.clone(), *n);
            }
        }
    }
    let mut out = Unsealed {
        counts,
        unchanged,
        ..Unsealed::default()
    };
    if let Some((_, recorded)) = &mark.window {
        for (dir, n) in &out.counts {
            if recorded.get(dir) != Some(n) {
                out.reexamined += 1;
                out.entries
                    .extend(late_in(store, dir, &bound, &mark.ahead).await?);
            }
        }
    }
    out.after = after.iter().map(|o| o.key.clone()).collect();
    out.entries.extend(
        after
            .into_iter()
            .filter_map(index::entry_of)
            .filter(|e| e.committed >= mark.watermark && !mark.ahead.contains(&canonical(e))),
    );
    index::sort_entries(&mut out.entries);
    out.entries.dedup_by(|a, b| a.key == b.key);
    Ok(out)
}

/// The entries not sealed after `seal` (the newest), for a reader (`log`, `verify
/// --since-seal`): late ones in its window included. A seal whose watermark is not a time
/// (`verify` names it) gives every entry of the index.
pub(crate) async fn unsealed_after(store: &dyn AtomicPublisher, seal: &Seal) -> Result<Vec<Entry>> {
    let Some(mark) = Mark::of(seal) else {
        let listed = list_pages(store, INDEX_PREFIX, "", None).await?;
        let mut all: Vec<Entry> = listed.into_iter().filter_map(index::entry_of).collect();
        index::sort_entries(&mut all);
        return Ok(all);
    };
    // A seal that records no window promises nothing before its watermark: nothing to
    // compare there.
    let from = mark.window.as_ref().map(|(f, _)| *f);
    Ok(unsealed(store, &mark, from).await?.entries)
}

/// The window a seal records: from `from` to `watermark`, counted from what `listed`
/// (the listing after the previous seal, from `from`) saw.
pub(crate) fn window_of(
    listed: &Unsealed,
    from: DateTime<Utc>,
    watermark: DateTime<Utc>,
) -> IndexWindow {
    let lo = keys::index_dir(from);
    let hi = keys::index_bound(watermark);
    let mut counts: BTreeMap<String, u64> = listed
        .counts
        .iter()
        .filter(|(d, _)| d.as_str() >= lo.as_str() || lo.starts_with(d.as_str()))
        .map(|(d, n)| (d.clone(), *n))
        .collect();
    for k in listed
        .after
        .iter()
        .filter(|k| k.as_str() >= lo.as_str() && k.as_str() < hi.as_str())
    {
        *counts.entry(dir_of(k).to_string()).or_default() += 1;
    }
    IndexWindow {
        from_utc: crate::base::time::rfc3339(from),
        counts,
        stamps: BTreeMap::new(),
        fs_clock_ns: None,
    }
}

/// The window directories of `mark` (from `lo` to `bound`) whose stamp now is the one it
/// recorded: per-second directories only (a stamp says nothing of the directories below),
/// never the one `bound` is in (it holds entries after the watermark), none with a counted
/// directory below it. Empty where the store has no stamps (object stores).
async fn unchanged_dirs(
    store: &dyn AtomicPublisher,
    mark: &Mark,
    lo: &str,
    bound: &str,
) -> Result<BTreeMap<String, DirStamp>> {
    let Some((_, recorded)) = &mark.window else {
        return Ok(BTreeMap::new());
    };
    let candidates: Vec<(&String, &DirStamp)> = mark
        .stamps
        .iter()
        .filter(|(d, _)| {
            stampable(d, recorded, bound) && (d.as_str() >= lo || lo.starts_with(d.as_str()))
        })
        .collect();
    let dirs: Vec<String> = candidates.iter().map(|(d, _)| (*d).clone()).collect();
    let Some(now) = store.dir_stamps(&dirs).await? else {
        return Ok(BTreeMap::new());
    };
    Ok(candidates
        .into_iter()
        .zip(now)
        .filter(|((_, was), now)| now.as_ref() == Some(*was))
        .map(|((d, was), _)| (d.clone(), *was))
        .collect())
}

/// Whether a seal may record (and a reader trust) the stamp of window directory `dir`: a
/// per-second index directory (`_lineage/index/<day>/<HH>/<MM>/<SS>/`) of the window's
/// counts, not the one `bound` is in, with no counted directory below it.
fn stampable(dir: &str, counts: &BTreeMap<String, u64>, bound: &str) -> bool {
    let Some(rest) = dir.strip_prefix(INDEX_PREFIX) else {
        return false;
    };
    let second = rest.split('/').filter(|c| !c.is_empty()).count() == 4;
    let below = counts
        .range::<str, _>((std::ops::Bound::Excluded(dir), std::ops::Bound::Unbounded))
        .next()
        .is_some_and(|(d, _)| d.starts_with(dir));
    second && counts.contains_key(dir) && !bound.starts_with(dir) && !below
}

/// The stamps `window` records (a seal about to be written): a directory not read this
/// time keeps the stamp it was found with (`listed.unchanged`), each other one gets its
/// stamp now when that is older than `clock` (the file system's clock, read before the
/// listing): its last change came before the listing, which so saw all of it. A stamp at
/// or after `clock` (a change during the listing, or in the clock's last tick) is not
/// recorded: that directory is read again next time.
pub(crate) async fn stamps_for(
    store: &dyn AtomicPublisher,
    window: &IndexWindow,
    listed: &Unsealed,
    bound: &str,
    clock: Option<i128>,
) -> Result<BTreeMap<String, String>> {
    let Some(clock) = clock else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    let mut fresh = Vec::new();
    for dir in window
        .counts
        .keys()
        .filter(|d| stampable(d, &window.counts, bound))
    {
        match listed.unchanged.get(dir) {
            Some(st) => {
                out.insert(dir.clone(), st.to_text());
            }
            None => fresh.push(dir.clone()),
        }
    }
    let Some(now) = store.dir_stamps(&fresh).await? else {
        return Ok(BTreeMap::new());
    };
    for (dir, st) in fresh.into_iter().zip(now) {
        if let Some(st) = st.filter(|st| st.changed_ns < clock) {
            out.insert(dir, st.to_text());
        }
    }
    Ok(out)
}

/// How many of `keys` (in key order) each directory holds: one map entry per directory,
/// not an allocation per key.
fn count_by_dir<'a>(keys: impl Iterator<Item = &'a str>) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut run: Option<(&str, u64)> = None;
    for k in keys {
        let d = dir_of(k);
        match &mut run {
            Some((dir, n)) if *dir == d => *n += 1,
            _ => {
                if let Some((dir, n)) = run.replace((d, 1)) {
                    *counts.entry(dir.to_string()).or_default() += n;
                }
            }
        }
    }
    if let Some((dir, n)) = run {
        *counts.entry(dir.to_string()).or_default() += n;
    }
    counts
}

fn canonical(e: &Entry) -> String {
    keys::index_key(e.committed, &e.commit_id, &e.run_id)
}

/// Every object under the index after `after`, in key order, those before `sized_from`
/// possibly without their metadata: one [`AtomicPublisher::list_after_sized_from`] call
/// for the whole range (an object store pages it, 1,000 keys a request, as
/// [`list_pages`] does; the local disk reads each directory once, where pages of 1,000
/// would read the directories a page ends in again from the root), checked as
/// [`list_pages`] checks its pages (under the prefix, strictly ascending, after the
/// offset); an answer that is not is never used, and the range is read with
/// [`list_pages`] instead (the same answer, every key with its metadata).
async fn list_sized_from(
    store: &dyn AtomicPublisher,
    after: &str,
    sized_from: &str,
    skip: &BTreeSet<String>,
) -> Result<Vec<ObjectInfo>> {
    let listed = store
        .list_after_sized_skipping(INDEX_PREFIX, after, usize::MAX, sized_from, skip)
        .await?;
    let mut prev = after;
    for o in &listed {
        if !o.key.starts_with(INDEX_PREFIX) || o.key.as_str() <= prev {
            return list_pages(store, INDEX_PREFIX, after, None).await;
        }
        prev = o.key.as_str();
    }
    Ok(listed)
}

/// The entries of window directory `dir` (before `bound`) that no seal has sealed: not in
/// `ahead`, and without a leaf locator.
async fn late_in(
    store: &dyn AtomicPublisher,
    dir: &str,
    bound: &str,
    ahead: &HashSet<String>,
) -> Result<Vec<Entry>> {
    let listed = list_pages(store, dir, dir, Some(bound)).await?;
    let mut out = Vec::new();
    for e in listed.into_iter().filter_map(index::entry_of) {
        if !ahead.contains(&canonical(&e)) && !sealed(store, &e).await? {
            tracing::info!(index = %e.key, "an index entry landed late, within the lookback");
            out.push(e);
        }
    }
    Ok(out)
}

/// Whether a seal has sealed the commit of `e`: a leaf locator of its commit and run (in
/// either layout).
async fn sealed(store: &dyn AtomicPublisher, e: &Entry) -> Result<bool> {
    for layout in [Layout::V2, Layout::V1] {
        let listed = store
            .list(&keys::leaf_prefix_in(layout, &e.commit_id))
            .await?;
        let found = listed.iter().any(|o| {
            matches!(keys::classify(&o.key), KeyKind::History(HistoryKey::Leaf { commit_id, run_id, .. })
                if commit_id == e.commit_id && run_id == e.run_id)
        });
        if found {
            return Ok(true);
        }
    }
    Ok(false)
}

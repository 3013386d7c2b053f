//! The time-ordered commit index: one empty object per commit, named by its
//! `committed_utc`, commit id and run (see [`keys::index_key`]).
//!
//! Pointers are grouped by run, so "the commits since the last seal" cannot be listed from
//! them without listing every run. The index orders every commit of every run by commit
//! time, so a seal lists it from its predecessor's watermark on (`start-after`) and reads
//! only the commits made since. The writer publishes the entry right after the pointer;
//! the key is a function of the pointer alone, so a retried commit (a commit key, a lost
//! response) publishes the same key again, which create-only turns into a no-op.

use std::collections::HashSet;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::Pointer;
use crate::publish::{list_pages, AtomicPublisher};

/// `committed_utc` of a pointer as a time, when it is one.
pub fn committed(p: &Pointer) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(&p.committed_utc)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The index key of a pointer, when its `committed_utc` is a valid time.
pub fn key_of(p: &Pointer) -> Option<String> {
    committed(p).map(|t| keys::index_key(t, &p.commit_id, &p.run_id))
}

/// Publish a pointer's index entry (create-only, empty). An entry already there is the
/// same entry (the key says everything), so "already exists" is success. A failure is
/// logged, not returned: the commit itself is complete, and `verify` reports a commit the
/// index misses (`lineage seal --rescan` seals it).
pub async fn publish_entry(store: &dyn AtomicPublisher, p: &Pointer) {
    let Some(key) = key_of(p) else {
        tracing::warn!(commit = %p.commit_id, committed_utc = %p.committed_utc, "no index entry: committed_utc is not a time");
        return;
    };
    if let Err(e) = store.put_create(&key, Bytes::new()).await {
        tracing::warn!(commit = %p.commit_id, key, error = %e, "index entry not written; `lineage seal --rescan` will seal this commit");
    }
}

/// One listed index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its key.
    pub key: String,
    /// The commit time it records.
    pub committed: DateTime<Utc>,
    /// The commit.
    pub commit_id: String,
    /// The commit's run.
    pub run_id: String,
    /// The pointer it names.
    pub pointer_key: String,
    /// Size of the object (an entry is empty; anything else was written by someone else).
    pub size: u64,
}

/// Index entries at or after `since` (every entry when `None`), in commit-time order
/// (time, commit id, key), except those in `skip` (index keys of either layout: compared
/// as [`keys::canonical_index_key`]). Objects under the index prefix that are not entries
/// are left to `verify`.
///
/// One `start-after` listing from [`keys::index_bound`]: it also returns the older
/// layout's entries of `since`'s day, which are dropped here by their time.
pub async fn list_since(
    store: &dyn AtomicPublisher,
    since: Option<DateTime<Utc>>,
    skip: &HashSet<String>,
) -> Result<Vec<Entry>> {
    let after = since.map(keys::index_bound).unwrap_or_default();
    let skip: HashSet<String> = skip
        .iter()
        .map(|k| keys::canonical_index_key(k).unwrap_or_else(|| k.clone()))
        .collect();
    let listed = list_pages(store, keys::INDEX_PREFIX, &after, None).await?;
    let mut out: Vec<Entry> = listed
        .into_iter()
        .filter_map(|o| match keys::classify(&o.key) {
            KeyKind::History(h @ HistoryKey::Index { .. }) => {
                let pointer_key = h.pointer_key()?;
                let HistoryKey::Index {
                    committed,
                    commit_id,
                    run_id,
                } = h
                else {
                    return None;
                };
                let canonical = keys::index_key(committed, &commit_id, &run_id);
                if since.is_some_and(|t| committed < t) || skip.contains(&canonical) {
                    return None;
                }
                Some(Entry {
                    key: o.key,
                    committed,
                    commit_id,
                    run_id,
                    pointer_key,
                    size: o.size,
                })
            }
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| {
        (a.committed, &a.commit_id, &a.key).cmp(&(b.committed, &b.commit_id, &b.key))
    });
    Ok(out)
}

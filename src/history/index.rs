//! The time-ordered commit index: one empty object per commit, named by its
//! `committed_utc`, commit id and run (see [`keys::index_key`]).
//!
//! Pointers are grouped by run, so "the commits since the last seal" cannot be listed from
//! them without listing every run. The index orders every commit of every run by commit
//! time, so a seal lists it from its predecessor's watermark on (`start-after`) and reads
//! only the commits made since. The writer publishes the entry right after the pointer;
//! the key is a function of the pointer alone, so a retried commit (a commit key, a lost
//! response) publishes the same key again, which create-only turns into a no-op.

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::Pointer;
use crate::publish::{AtomicPublisher, ObjectInfo};

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

/// The index entry a listed object is, when it is one (in either layout); anything else
/// under the index prefix is left to `verify`.
pub fn entry_of(o: ObjectInfo) -> Option<Entry> {
    let KeyKind::History(h @ HistoryKey::Index { .. }) = keys::classify(&o.key) else {
        return None;
    };
    let pointer_key = h.pointer_key()?;
    let HistoryKey::Index {
        committed,
        commit_id,
        run_id,
    } = h
    else {
        return None;
    };
    Some(Entry {
        key: o.key,
        committed,
        commit_id,
        run_id,
        pointer_key,
        size: o.size,
    })
}

/// Entries in commit-time order (time, commit id, key).
pub fn sort_entries(v: &mut [Entry]) {
    v.sort_by(|a, b| (a.committed, &a.commit_id, &a.key).cmp(&(b.committed, &b.commit_id, &b.key)));
}

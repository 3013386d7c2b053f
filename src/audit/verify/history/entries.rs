//! The index entries of a full `verify`, and the commits incremental seals will miss.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use futures::StreamExt;

use crate::audit::findings::{Problem, ProblemKind};
use crate::audit::verify::history::context::Context;
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::pointer::Pointer;
use crate::history::index;
use crate::history::pointers::READ_CONCURRENCY;
use crate::publish::{exists, AtomicPublisher, ObjectInfo};

/// Index entry `o` (key `h`) against its pointer.
pub(super) async fn check_index_entry(
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
            read = match crate::history::pointers::get_pointer_or_none(store, &pk).await {
                Ok(Some(b)) => Pointer::from_bytes(&pk, &b).ok(),
                // A symlink is no pointer (never followed; named as a symlink): the entry
                // names none.
                Ok(None) | Err(Error::Symlink { .. }) => None,
                Err(e) => return Err(e),
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
pub(super) async fn missed(
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
    // Incremental seals look for late entries from the start of the newest seal's index
    // window (its watermark when it records none).
    let start = newest
        .index_window
        .as_ref()
        .map(|w| w.from_utc.as_str())
        .or(newest.watermark_utc.as_deref());
    let mark = Watermark {
        seq: newest_seq,
        text: start.unwrap_or(""),
        at: start
            .and_then(|w| DateTime::parse_from_rfc3339(w).ok())
            .map(|t| t.with_timezone(&Utc)),
        ahead: newest
            .ahead
            .iter()
            .flatten()
            .map(|k| keys::canonical_index_key(k).unwrap_or_else(|| k.clone()))
            .collect(),
    };
    let candidates: Vec<(&str, &Pointer)> = cx
        .pointers
        .iter()
        .filter(|(k, p)| !cx.chain.by_key.contains_key(**k) && cx.old(index::committed(p)))
        .map(|(k, p)| (*k, *p))
        .collect();
    let found: Vec<Option<Problem>> = futures::stream::iter(candidates)
        .map(|(k, p)| missed_one(store, listed_index, &mark, k, p))
        .buffer_unordered(READ_CONCURRENCY)
        .collect::<Vec<Result<Option<Problem>>>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    Ok(found.into_iter().flatten().collect())
}

/// What the newest seal records of the index it sealed from.
struct Watermark<'a> {
    /// The newest seal.
    seq: u64,
    /// Its window's start (its watermark when it records no window) as recorded.
    text: &'a str,
    /// The same as a time.
    at: Option<DateTime<Utc>>,
    /// The index entries it records as ahead of the watermark (canonical keys).
    ahead: HashSet<String>,
}

/// Whether unsealed pointer `p` (key `k`) is one incremental seals will not find.
async fn missed_one(
    store: &dyn AtomicPublisher,
    listed_index: &HashSet<String>,
    mark: &Watermark<'_>,
    k: &str,
    p: &Pointer,
) -> Result<Option<Problem>> {
    let Some(ik) = index::key_of(p) else {
        return Ok(Some(Problem::new(
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
    let late = mark
        .at
        .is_some_and(|w| index::committed(p).is_some_and(|t| t < w));
    Ok(if !present {
        Some(Problem::new(
            ProblemKind::MissedBySeals,
            k,
            format!("not sealed, and without its index entry {ik} (a crash between pointer and index entry, an adopted orphan, or a writer of an earlier version): incremental seals will not find it; `lineage seal --rescan` seals it"),
        ))
    } else if late || mark.ahead.contains(ik.as_str()) {
        Some(Problem::new(
            ProblemKind::MissedBySeals,
            k,
            format!("not sealed, and its index entry {ik} is older than the start of seal {}'s lookback, {} (it landed later than the lookback allows): `lineage seal --rescan` seals it", mark.seq, mark.text),
        ))
    } else {
        None
    })
}

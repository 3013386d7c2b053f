//! Reading the commit pointers.

use futures::{StreamExt, TryStreamExt};

use bytes::Bytes;

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::{Pointer, MAX_POINTER_BYTES};
use crate::publish::AtomicPublisher;

/// Parallel reads of small objects.
pub(crate) const READ_CONCURRENCY: usize = 16;

/// A pointer as read, with its key and the sha256 of its exact bytes (what a seal records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPointer {
    /// The pointer's key.
    pub key: String,
    /// Lower-case hex sha256 of the stored bytes.
    pub sha256: String,
    /// The parsed pointer.
    pub pointer: Pointer,
}

/// The bytes of the pointer under `key`, at most [`MAX_POINTER_BYTES`] of them: `None`
/// when it does not exist; a larger one is refused unread ([`Error::Corrupt`] naming it),
/// its size learnt before its content ([`AtomicPublisher::get_at_most`]).
pub(crate) async fn get_pointer(store: &dyn AtomicPublisher, key: &str) -> Result<Option<Bytes>> {
    store
        .get_at_most(key, MAX_POINTER_BYTES as u64)
        .await
        .map_err(|e| match e {
            Error::TooLarge { size, .. } => Error::Corrupt {
                what: "pointer",
                key: key.to_string(),
                message: format!(
                    "{size} bytes; a pointer is at most {MAX_POINTER_BYTES} (not read)"
                )
                .into(),
            },
            e => e,
        })
}

/// [`get_pointer`], a pointer too large to be one read as absent (`verify` names it).
pub(crate) async fn get_pointer_or_none(
    store: &dyn AtomicPublisher,
    key: &str,
) -> Result<Option<Bytes>> {
    match get_pointer(store, key).await {
        Err(Error::Corrupt { .. }) => Ok(None),
        got => got,
    }
}

/// Every pointer (of one run, if given), in commit-time order ([`commit_order`]).
/// An unparseable pointer is an error here; `verify` reports it instead.
pub async fn read_pointers(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
) -> Result<Vec<Pointer>> {
    Ok(read_stored_pointers(store, run_id)
        .await?
        .into_iter()
        .map(|p| p.pointer)
        .collect())
}

/// A pointer that cannot be read (too large) or parsed: its key and why.
#[derive(Debug)]
pub(crate) struct Unreadable {
    /// The pointer's key.
    pub(crate) key: String,
    /// Why ([`Error::Corrupt`]).
    pub(crate) error: Error,
}

/// [`read_pointers`] that goes on past a pointer it cannot read or parse (`log`): the
/// pointers it could read, in commit-time order, and the others by key.
pub(crate) async fn read_pointers_past_corrupt(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
) -> Result<(Vec<Pointer>, Vec<Unreadable>)> {
    let (ok, bad) = read_all(store, run_id).await?;
    Ok((ok.into_iter().map(|p| p.pointer).collect(), bad))
}

/// [`read_pointers`], keeping each pointer's key and digest.
pub(crate) async fn read_stored_pointers(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
) -> Result<Vec<StoredPointer>> {
    let (ok, bad) = read_all(store, run_id).await?;
    match bad.into_iter().next() {
        Some(u) => Err(u.error),
        None => Ok(ok),
    }
}

/// Every pointer (of one run), read and parsed: those that are, in commit-time order, and
/// those that are not (too large or corrupt), by key. Other errors end the read.
async fn read_all(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
) -> Result<(Vec<StoredPointer>, Vec<Unreadable>)> {
    let prefix = match run_id {
        Some(r) => {
            keys::check_run_id(r)?;
            format!("{}run_id={r}/", keys::COMMITS_PREFIX)
        }
        None => keys::COMMITS_PREFIX.to_string(),
    };
    let listed = store.list(&prefix).await?;
    let read: Vec<std::result::Result<StoredPointer, Unreadable>> = futures::stream::iter(
        listed
            .into_iter()
            .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. })),
    )
    .map(|o| async move {
        let parsed = match get_pointer(store, &o.key).await {
            Ok(Some(bytes)) => Pointer::from_bytes(&o.key, &bytes).map(|pointer| StoredPointer {
                sha256: sha256_hex(&bytes),
                key: o.key.clone(),
                pointer,
            }),
            Ok(None) => return Err(Error::NotFound(o.key)),
            Err(e) => Err(e),
        };
        Ok::<_, Error>(parsed.map_err(|error| Unreadable { key: o.key, error }))
    })
    .buffer_unordered(READ_CONCURRENCY)
    .try_collect()
    .await?;
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    for r in read {
        match r {
            Ok(p) => ok.push(p),
            Err(u) if matches!(u.error, Error::Corrupt { .. }) => bad.push(u),
            Err(u) => return Err(u.error),
        }
    }
    ok.sort_by(|a, b| commit_order(&a.pointer, &b.pointer));
    bad.sort_by(|a, b| a.key.cmp(&b.key));
    Ok((ok, bad))
}

/// Commit-time order: `committed_utc` (RFC 3339 in UTC with microseconds, so text order is
/// time order), then commit id. Keyed (UUIDv8) commits sort by when they were made, not by
/// their hashed ids.
pub(crate) fn commit_order(a: &Pointer, b: &Pointer) -> std::cmp::Ordering {
    (&a.committed_utc, &a.commit_id).cmp(&(&b.committed_utc, &b.commit_id))
}

/// Sort pointers in [`commit_order`].
pub(crate) fn sort_in_commit_order(pointers: &mut [Pointer]) {
    pointers.sort_by(commit_order);
}

//! Reading the commit pointers.

use futures::{StreamExt, TryStreamExt};

use crate::error::Result;
use crate::keys::{self, KeyKind};
use crate::pointer::Pointer;
use crate::publish::AtomicPublisher;

/// Parallel reads of small objects.
pub const READ_CONCURRENCY: usize = 16;

/// Every pointer (of one run, if given), in commit-time order ([`sort_in_commit_order`]).
/// An unparseable pointer is an error here; `verify` reports it instead.
pub async fn read_pointers(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
) -> Result<Vec<Pointer>> {
    let prefix = match run_id {
        Some(r) => {
            keys::check_run_id(r)?;
            format!("{}run_id={r}/", keys::COMMITS_PREFIX)
        }
        None => keys::COMMITS_PREFIX.to_string(),
    };
    let listed = store.list(&prefix).await?;
    let mut pointers: Vec<Pointer> = futures::stream::iter(
        listed
            .into_iter()
            .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. })),
    )
    .map(|o| async move {
        let bytes = store
            .get(&o.key)
            .await?
            .ok_or_else(|| crate::error::Error::NotFound(o.key.clone()))?;
        Pointer::from_bytes(&o.key, &bytes)
    })
    .buffer_unordered(READ_CONCURRENCY)
    .try_collect()
    .await?;
    sort_in_commit_order(&mut pointers);
    Ok(pointers)
}

/// Commit-time order: `committed_utc` (RFC 3339 in UTC with microseconds, so text order is
/// time order), then commit id. Keyed (UUIDv8) commits sort by when they were made, not by
/// their hashed ids.
pub fn sort_in_commit_order(pointers: &mut [Pointer]) {
    pointers
        .sort_by(|a, b| (&a.committed_utc, &a.commit_id).cmp(&(&b.committed_utc, &b.commit_id)));
}

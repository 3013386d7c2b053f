//! Writing Delta checkpoints ([`crate::format::delta_checkpoint`]): after seal N is complete
//! (its Delta version written), the sealer writes `N.checkpoint.parquet` when
//! [`due`] says so: every `interval` versions and for a
//! version that removes files (a compaction's).
//!
//! The checkpoint is built by replaying the JSON versions 0..=N, never from an earlier
//! checkpoint: an existing checkpoint is not trusted (a planted or edited one would be
//! carried forward), so what the sealer writes depends only on the versions, which
//! `verify` holds to the seals. It is published create-only; one already there is accepted
//! when it holds the same rows (a lineage-store of another version may encode the same
//! rows in other bytes). A checkpoint is an optimisation: one a crash cut off is simply
//! not there (readers replay the JSON versions), and the next due version gets one.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::base::error::{Error, Result};
use crate::format::delta::parse_actions;
use crate::format::delta_checkpoint::{decode_rows, due, Snapshot};
use crate::format::keys::delta_checkpoint_key as checkpoint_key;
use crate::format::keys::delta_version_key as version_key;
use crate::history::delta::read_version;
use crate::history::pointers::READ_CONCURRENCY;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;

/// Write version `v`'s checkpoint if it is due (see the module docs): `removes` says
/// whether the version removes files, which the sealer knows from its seal (one carrying
/// compactions), so nothing is read to decide. Returns its key when one was written (or
/// found already there, holding the same rows).
pub async fn write_if_due(
    store: &dyn AtomicPublisher,
    v: u64,
    interval: u64,
    removes: bool,
) -> Result<Option<String>> {
    if !due(v, interval, removes) {
        return Ok(None);
    }
    write(store, v).await.map(Some)
}

/// Write version `v`'s checkpoint (create-only; see the module docs).
pub async fn write(store: &dyn AtomicPublisher, v: u64) -> Result<String> {
    let snapshot = replay(store, v).await?;
    let want = Bytes::from(snapshot.encode()?);
    let key = checkpoint_key(v);
    let (k, ours, limits) = (key.clone(), want.clone(), store.read_limits());
    publish_checked(store, &key, want, move |have| {
        // Decoded only when the bytes differ (another build's encoding of the same rows),
        // and only within the store's decoded-size bound (a planted checkpoint can repeat
        // one long value for every row).
        let same_rows = || -> Result<bool> {
            let have = Bytes::copy_from_slice(have);
            if crate::parts::decoded::check_bytes(&have, limits).is_err() {
                return Ok(false);
            }
            Ok(decode_rows(&k, have)? == decode_rows(&k, ours.clone())?)
        };
        if have == ours.as_ref() || same_rows().unwrap_or(false) {
            Ok(())
        } else {
            Err(format!(
                "holds other rows than the replay of Delta versions 0..={v} (a foreign Delta \
                 writer, or an edit); run `lineage verify`"
            ))
        }
    })
    .await?;
    tracing::info!(
        version = v,
        files = snapshot.files(),
        "Delta checkpoint written"
    );
    Ok(key)
}

/// The table as of version `v`: versions 0..=`v` replayed in order.
pub(crate) async fn replay(store: &dyn AtomicPublisher, v: u64) -> Result<Snapshot> {
    let mut snapshot = Snapshot::default();
    let mut versions = futures::stream::iter(0..=v)
        .map(|i| async move { read_version(store, i).await.map(|b| (i, b)) })
        .buffered(READ_CONCURRENCY);
    while let Some((i, bytes)) = versions.try_next().await? {
        let bytes = bytes.ok_or_else(|| Error::Corrupt {
            what: "Delta version",
            key: version_key(i),
            message: format!(
                "missing: the table as of version {v} cannot be replayed; run `lineage verify`"
            )
            .into(),
        })?;
        snapshot.apply(i, &parse_actions(&version_key(i), &bytes)?)?;
    }
    Ok(snapshot)
}

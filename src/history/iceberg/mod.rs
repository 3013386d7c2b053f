//! Writing each seal's Iceberg snapshot ([`crate::format::iceberg`]) under
//! `_iceberg/metadata/`, when the sealer is asked to (`seal --iceberg`).
//!
//! [`complete_table`] makes `v<k>.metadata.json` (and its manifest list and manifest)
//! exist for every seal k ≤ N. Usually `v<N-1>` is there (two reads: it and its manifest
//! list) and only seal N's objects are written; otherwise (a store sealed without
//! `--iceberg`) every seal's objects from the first missing metadata file on are built
//! and written, in order. Each object is a pure function of the store id, the location
//! and the seals ([`build::Table::step`]), published create-only; one already there is
//! accepted only when its bytes are exactly these.

pub(crate) mod build;
pub(crate) mod locate;

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::base::clock::SystemClock;
use crate::base::error::{Error, ErrorKind, Result};
use crate::format::iceberg::manifest::manifest_list_entries;
use crate::format::iceberg::metadata::{table_uuid, TableMetadata, SEAL_SEQ, SEAL_SHA256};
use crate::format::keys::kind::KeyKind;
use crate::format::keys::{
    iceberg_manifest_list_key, iceberg_metadata_key, IcebergKey, ICEBERG_METADATA_PREFIX,
};
use crate::history::head::read_seal;
use crate::history::identity::ensure_identity;
use crate::history::seal::StoredSeal;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;
pub(crate) use build::max_object_bytes;
use build::Table;
use locate::table_location;

/// What [`complete_table`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IcebergOutcome {
    /// The newest metadata file's key (`_iceberg/metadata/v<N>.metadata.json`).
    pub metadata_key: String,
    /// Its absolute location: what `StaticTable.from_metadata`, `iceberg_scan` and a
    /// catalog's `metadata_location` are given.
    pub metadata_location: String,
    /// Seals whose objects were written (or found written by another sealer) now.
    pub seals_written: u64,
}

/// The table as of seal `prev`, from its stored metadata file and manifest list, once
/// they are known to be ours, at `location`, and seal `prev` with the digest seal
/// `prev + 1` (`next`) names as its predecessor.
async fn stored_table(
    store: &dyn AtomicPublisher,
    prev: u64,
    location: &str,
    next: &StoredSeal,
) -> Result<Table> {
    let key = iceberg_metadata_key(prev);
    let bytes = store
        .get_at_most(&key, max_object_bytes(store))
        .await?
        .ok_or_else(|| Error::NotFound(key.clone()))?;
    let not_ours = |why: String| Error::Conflict {
        key: key.clone(),
        message: format!(
            "{why}: no Iceberg snapshot is written on top of it; run `lineage verify`"
        ),
    };
    let meta = TableMetadata::parse(&bytes).map_err(not_ours)?;
    if meta.location != location {
        return Err(not_ours(format!(
            "its table is at {}, not at {location} where this store is opened (Iceberg paths are absolute: seal with --iceberg where the table was first written)",
            meta.location
        )));
    }
    let summary = meta.current().map(|s| &s.summary);
    let seq = summary.and_then(|s| s.get(SEAL_SEQ)).map(String::as_str);
    let sha = summary.and_then(|s| s.get(SEAL_SHA256)).map(String::as_str);
    let want = next
        .seal
        .as_ref()
        .ok()
        .and_then(|s| s.prev_sha256.as_deref());
    if seq != Some(prev.to_string().as_str())
        || sha.is_none()
        || sha != want.map(str::to_lowercase).as_deref()
    {
        return Err(not_ours(format!(
            "its current snapshot records seal {} with sha256 {}, not seal {prev} with {}",
            seq.unwrap_or("none"),
            sha.unwrap_or("none"),
            want.unwrap_or("none")
        )));
    }
    let lkey = iceberg_manifest_list_key(prev);
    let lbytes = store
        .get_at_most(&lkey, max_object_bytes(store))
        .await?
        .ok_or_else(|| Error::NotFound(lkey.clone()))?;
    let list = manifest_list_entries(&lbytes).map_err(|m| Error::Corrupt {
        what: "Iceberg manifest list",
        key: lkey.clone(),
        message: m.into(),
    })?;
    let table = Table::stored(meta, list);
    if table.list_bytes() != lbytes.as_ref() {
        return Err(Error::Conflict {
            key: lkey,
            message: "not the manifest list lineage-store writes: no Iceberg snapshot is written on top of it; run `lineage verify`".into(),
        });
    }
    Ok(table)
}

/// Publish `objects` create-only, in order; an object already there must hold exactly
/// those bytes.
async fn publish(store: &dyn AtomicPublisher, objects: build::Objects) -> Result<()> {
    for (key, bytes) in objects.objects {
        let want = Bytes::from(bytes);
        let cmp = want.clone();
        publish_checked(store, &key, want, move |have| {
            if have == cmp.as_ref() {
                Ok(())
            } else {
                Err("holds other bytes than the seals give (a plant, an edit, or a table written at another location); nothing is written on top of it; run `lineage verify`".to_string())
            }
        })
        .await?;
    }
    Ok(())
}

/// The metadata files listed under `_iceberg/metadata/`, by seal number.
async fn listed_metadata(store: &dyn AtomicPublisher) -> Result<BTreeSet<u64>> {
    Ok(store
        .list(ICEBERG_METADATA_PREFIX)
        .await?
        .into_iter()
        .filter_map(|o| match crate::format::keys::classify(&o.key) {
            KeyKind::Iceberg(IcebergKey::Metadata(n)) => Some(n),
            _ => None,
        })
        .collect())
}

/// Make the Iceberg table's objects exist for seals 1..=`seq` at `store`'s
/// [`table_location`] (see the module docs). `None` when there is no seal `seq`.
pub async fn complete_table(
    store: &dyn AtomicPublisher,
    seq: u64,
) -> Result<Option<IcebergOutcome>> {
    if seq == 0 {
        return Ok(None);
    }
    let Some(seal) = read_seal(store, seq).await? else {
        return Ok(None);
    };
    let location = table_location(store);
    let outcome = |written| IcebergOutcome {
        metadata_key: iceberg_metadata_key(seq),
        metadata_location: build::at(&location, &iceberg_metadata_key(seq)),
        seals_written: written,
    };
    let key = iceberg_metadata_key(seq);
    if let Some(have) = store.get_at_most(&key, max_object_bytes(store)).await? {
        // Written already (a re-seal with nothing new): here, or for another location.
        let at = TableMetadata::parse(&have).map(|m| m.location);
        if at.as_deref() != Ok(location.as_str()) {
            return Err(Error::Conflict {
                key,
                message: format!(
                    "not the table at {location} (its location: {}); run `lineage verify`",
                    at.unwrap_or_else(|e| e)
                ),
            });
        }
        return Ok(Some(outcome(0)));
    }
    let id = ensure_identity(store, &SystemClock).await?;
    if seq > 1 {
        match stored_table(store, seq - 1, &location, &seal).await {
            Ok(mut t) => {
                publish(store, t.step(store, &seal).await?).await?;
                return Ok(Some(outcome(1)));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    let listed = listed_metadata(store).await?;
    let first = (1..=seq).find(|k| !listed.contains(k)).unwrap_or(seq);
    tracing::info!(
        from = first,
        to = seq,
        "writing the Iceberg snapshots the table lacks"
    );
    let mut t = if first == 1 {
        Table::start(table_uuid(&id.store_id), location.clone())?
    } else {
        let next = read_seal(store, first)
            .await?
            .ok_or_else(|| Error::NotFound(crate::format::keys::seal_key(first)))?;
        stored_table(store, first - 1, &location, &next).await?
    };
    for k in first..=seq {
        let s = read_seal(store, k)
            .await?
            .ok_or_else(|| Error::NotFound(crate::format::keys::seal_key(k)))?;
        publish(store, t.step(store, &s).await?).await?;
    }
    Ok(Some(outcome(seq + 1 - first)))
}

/// Every object of the table at `location` for seals 1..=`seq`, rebuilt from the seals
/// (what `verify` compares the stored ones with), in seal order.
pub(crate) async fn expected_objects(
    store: &dyn AtomicPublisher,
    store_id: &str,
    location: &str,
    seq: u64,
) -> Result<Vec<(String, Vec<u8>)>> {
    let mut t = Table::start(table_uuid(store_id), location.to_string())?;
    let mut out = Vec::new();
    for k in 1..=seq {
        let s = read_seal(store, k)
            .await?
            .ok_or_else(|| Error::NotFound(crate::format::keys::seal_key(k)))?;
        out.extend(t.step(store, &s).await?.objects);
    }
    Ok(out)
}

/// The objects of the table at `location` for seals `since..=seq` (what `verify
/// --since-seal` compares the new ones with): built on the stored table of seal
/// `since - 1`, as the sealer builds on it, when that is there in the form written here;
/// otherwise (missing, not ours, or `since` 1) rebuilt from seal 1 and the objects of
/// seals before `since` left out.
pub(crate) async fn expected_objects_since(
    store: &dyn AtomicPublisher,
    store_id: &str,
    location: &str,
    since: u64,
    seq: u64,
) -> Result<Vec<(String, Vec<u8>)>> {
    let seal_of = |k: u64| async move {
        read_seal(store, k)
            .await?
            .ok_or_else(|| Error::NotFound(crate::format::keys::seal_key(k)))
    };
    let built_on = if since > 1 && since <= seq {
        let first = seal_of(since).await?;
        match stored_table(store, since - 1, location, &first).await {
            Ok(t) => Some((t, first)),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::NotFound | ErrorKind::Conflict | ErrorKind::Integrity
                ) =>
            {
                tracing::info!(error = %e, "rebuilding the Iceberg table from seal 1");
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let Some((mut t, first)) = built_on else {
        let all = expected_objects(store, store_id, location, seq).await?;
        return Ok(all
            .into_iter()
            .filter(|(k, _)| iceberg_seal_of(k).is_some_and(|n| n >= since))
            .collect());
    };
    let mut out = t.step(store, &first).await?.objects;
    for k in since + 1..=seq {
        out.extend(t.step(store, &seal_of(k).await?).await?.objects);
    }
    Ok(out)
}

/// The seal an Iceberg object of ours belongs to, by its key.
pub(crate) fn iceberg_seal_of(key: &str) -> Option<u64> {
    match crate::format::keys::classify(key) {
        KeyKind::Iceberg(
            IcebergKey::Metadata(n) | IcebergKey::ManifestList(n) | IcebergKey::Manifest(n),
        ) => Some(n),
        _ => None,
    }
}

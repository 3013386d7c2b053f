//! Restoring the store's own metadata beside its history: the identity object and the
//! compaction records (with their compacted parts), from a replica or backup, each checked
//! before it is published. A store that lost `_lineage/` whole needs them as much as its
//! seals and pointers: without the identity every part's footer names a store this one is
//! not, and without the records the seals that put compactions into effect do not verify.

use std::collections::HashSet;

use bytes::Bytes;

use crate::audit::repair::options::{RepairOptions, RepairOutcome};
use crate::base::digest::{blake3_hex, sha256_hex, Want};
use crate::base::error::Result;
use crate::format::compaction::{CompactionRecord, CompactionRef};
use crate::format::identity::StoreIdentity;
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::history::seal::{read_seals, Seal};
use crate::publish::AtomicPublisher;

/// Restore the identity and the compaction records (and compacted parts) the seals name
/// that the store lacks, from `src`. `restored_seals`: the seals just restored (with
/// `dry_run`, not yet in the store: read from `src`, where they were checked).
pub(super) async fn restore_metadata(
    store: &dyn AtomicPublisher,
    src: &dyn AtomicPublisher,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    identity(store, src, opts, out).await?;
    for r in compaction_refs(store, src, out).await? {
        record(store, src, &r, opts, out).await?;
    }
    Ok(())
}

/// Whether the store holds `key`.
async fn exists(store: &dyn AtomicPublisher, key: &str) -> Result<bool> {
    Ok(store.list(key).await?.iter().any(|o| o.key == key))
}

/// Publish (unless a dry run) and note `key` restored.
async fn put(
    store: &dyn AtomicPublisher,
    key: &str,
    bytes: Bytes,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    if !opts.dry_run {
        super::restore::put_back(store, key, bytes).await?;
    }
    out.restored.push(key.to_string());
    Ok(())
}

/// The identity object, when the store has none: the one `src` holds, if the store's
/// parts' footers name its id (or no part names any).
async fn identity(
    store: &dyn AtomicPublisher,
    src: &dyn AtomicPublisher,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    if exists(store, keys::IDENTITY_KEY).await? {
        return Ok(());
    }
    let Some(bytes) = src.get(keys::IDENTITY_KEY).await? else {
        return Ok(());
    };
    let Ok(theirs) = StoreIdentity::from_bytes(keys::IDENTITY_KEY, &bytes) else {
        out.missing.push((
            keys::IDENTITY_KEY.to_string(),
            format!("gone, and {} holds no readable identity", src.describe()),
        ));
        return Ok(());
    };
    if let Some(named) = named_by_parts(store).await? {
        if named != theirs.store_id {
            out.missing.push((
                keys::IDENTITY_KEY.to_string(),
                format!(
                    "gone; {} holds identity {}, but this store's parts name store {named}",
                    src.describe(),
                    theirs.store_id
                ),
            ));
            return Ok(());
        }
    }
    put(store, keys::IDENTITY_KEY, bytes, opts, out).await
}

/// The store id the footer of the store's first data part names, if any.
async fn named_by_parts(store: &dyn AtomicPublisher) -> Result<Option<String>> {
    for o in store.list("").await? {
        if matches!(keys::classify(&o.key), KeyKind::Part { .. }) {
            let (_, facts) = crate::parts::read::facts::hash_and_facts(
                store,
                &o.key,
                o.size,
                Want::SHA256,
                false,
                &|_| {},
            )
            .await;
            if let Some(id) = facts.ok().and_then(|f| f.store_id) {
                return Ok(Some(id));
            }
        }
    }
    Ok(None)
}

/// Every compaction the seals put into effect: the store's seals, and (on a dry run) the
/// ones just restored, read from `src`.
async fn compaction_refs(
    store: &dyn AtomicPublisher,
    src: &dyn AtomicPublisher,
    out: &RepairOutcome,
) -> Result<Vec<CompactionRef>> {
    let mut refs = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for s in read_seals(store).await? {
        seen.insert(s.key.clone());
        if let Ok(seal) = s.seal {
            refs.extend(seal.compactions.into_iter().flatten());
        }
    }
    for key in out.restored.iter().filter(|k| !seen.contains(k.as_str())) {
        if !matches!(keys::classify(key), KeyKind::Seal(_)) {
            continue;
        }
        if let Some(b) = crate::history::seal::get_bytes(src, key).await? {
            if let Ok(seal) = Seal::from_bytes(key, &b) {
                refs.extend(seal.compactions.into_iter().flatten());
            }
        }
    }
    Ok(refs)
}

/// The record `r` names (checked against the sha256 its seal records) when gone, and its
/// compacted part (checked against the record's size and digests) when gone.
async fn record(
    store: &dyn AtomicPublisher,
    src: &dyn AtomicPublisher,
    r: &CompactionRef,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    let bytes = match store.get(&r.key).await? {
        Some(b) => b,
        None => {
            let Some(b) = src.get(&r.key).await? else {
                let why = format!(
                    "a seal records it, but it is gone and {} does not hold it",
                    src.describe()
                );
                out.missing.push((r.key.clone(), why));
                return Ok(());
            };
            if !sha256_hex(&b).eq_ignore_ascii_case(&r.sha256) {
                let why = format!(
                    "gone, and {} holds other bytes than its seal records",
                    src.describe()
                );
                out.missing.push((r.key.clone(), why));
                return Ok(());
            }
            put(store, &r.key, b.clone(), opts, out).await?;
            b
        }
    };
    let Ok(rec) = CompactionRecord::from_bytes(&r.key, &bytes) else {
        return Ok(()); // verify names it
    };
    if exists(store, &rec.part_path).await? {
        return Ok(());
    }
    let Some(part) = src.get(&rec.part_path).await? else {
        let why = format!(
            "record {} names it, but it is gone and {} does not hold it",
            r.key,
            src.describe()
        );
        out.missing.push((rec.part_path.clone(), why));
        return Ok(());
    };
    if part.len() as u64 != rec.size_bytes
        || sha256_hex(&part) != rec.sha256
        || blake3_hex(&part) != rec.blake3
    {
        let why = format!(
            "gone, and {} holds other bytes than record {} names",
            src.describe(),
            r.key
        );
        out.missing.push((rec.part_path.clone(), why));
        return Ok(());
    }
    put(store, &rec.part_path, part, opts, out).await
}

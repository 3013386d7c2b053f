//! `log --since-seal [SEQ]`: the commits made after seal SEQ (default: the newest), in
//! commit-time order, in O(commits since + log n) requests: the entries of the seals after
//! SEQ (read by number) and the index after the newest seal's watermark.

use std::collections::HashSet;

use futures::StreamExt;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::keys;
use crate::format::pointer::Pointer;
use crate::history::head::{self, read_seal};
use crate::history::pointers::{
    read_pointers_past_corrupt, sort_in_commit_order, Unreadable, READ_CONCURRENCY,
};
use crate::history::seal::StoredSeal;
use crate::publish::AtomicPublisher;

/// The commits after seal `since` (the newest when `None`), of one run if given. A store
/// without a seal of the current format is read whole (every pointer). A pointer that
/// cannot be read or parsed is an error here (`lineage log` lists it and goes on).
pub async fn since_seal(
    store: &dyn AtomicPublisher,
    since: Option<u64>,
    run_id: Option<&str>,
) -> Result<Vec<Pointer>> {
    let (pointers, unreadable) = since_seal_past_corrupt(store, since, run_id).await?;
    match unreadable.into_iter().next() {
        Some(u) => Err(u.error),
        None => Ok(pointers),
    }
}

/// [`since_seal`], going on past a pointer it cannot read or parse: those, by key.
pub(crate) async fn since_seal_past_corrupt(
    store: &dyn AtomicPublisher,
    since: Option<u64>,
    run_id: Option<&str>,
) -> Result<(Vec<Pointer>, Vec<Unreadable>)> {
    if let Some(r) = run_id {
        keys::check_run_id(r)?;
    }
    let heads = head::find(store).await?;
    let newest = match heads.newest() {
        Some(n) if heads.legacy.is_none() => n.clone(),
        _ => {
            let all = heads.legacy.unwrap_or_default();
            return whole_store(store, &all, since, run_id).await;
        }
    };
    let since = since.unwrap_or(newest.key_seq);
    if since == 0 || since > newest.key_seq {
        return Err(Error::invalid(
            Param::SinceSeal,
            text![format!(
                "{since}: the store has no seal {since} (the newest is {})",
                newest.key_seq
            )],
        ));
    }
    let keys_after = keys_after(store, since, newest).await?;
    let prefix = run_id.map(|r| keys::pointer_key(r, ""));
    let prefix = prefix.as_deref().map(|p| p.trim_end_matches(".json"));
    let wanted: Vec<String> = keys_after
        .into_iter()
        .filter(|k| prefix.is_none_or(|p| k.starts_with(p)))
        .collect();
    let (mut v, mut bad) = read_wanted(store, wanted).await?;
    sort_in_commit_order(&mut v);
    v.dedup_by(|a, b| a.commit_id == b.commit_id && a.run_id == b.run_id);
    bad.sort_by(|a, b| a.key.cmp(&b.key));
    bad.dedup_by(|a, b| a.key == b.key);
    Ok((v, bad))
}

/// A store without a seal of the current format (seals `all`): the sealed set comes from
/// every seal up to `since`, the rest from every pointer.
async fn whole_store(
    store: &dyn AtomicPublisher,
    all: &[StoredSeal],
    since: Option<u64>,
    run_id: Option<&str>,
) -> Result<(Vec<Pointer>, Vec<Unreadable>)> {
    if let Some(n) = since {
        if !all.iter().any(|s| s.key_seq == n) {
            return Err(Error::invalid(
                Param::SinceSeal,
                text![format!("{n}: the store has no seal {n}")],
            ));
        }
    }
    let sealed: HashSet<String> = all
        .iter()
        .filter(|s| since.is_none_or(|n| s.key_seq <= n))
        .filter_map(|s| s.seal.as_ref().ok())
        .flat_map(|s| s.entries.iter().map(|e| e.key.clone()))
        .collect();
    let (mut v, mut bad) = read_pointers_past_corrupt(store, run_id).await?;
    v.retain(|p| !sealed.contains(&keys::pointer_key(&p.run_id, &p.commit_id)));
    bad.retain(|u| !sealed.contains(&u.key));
    Ok((v, bad))
}

/// The pointer keys after seal `since`: the entries of the seals after it up to `newest`,
/// then the index after `newest`'s watermark (less what it records as `ahead`).
async fn keys_after(
    store: &dyn AtomicPublisher,
    since: u64,
    newest: StoredSeal,
) -> Result<Vec<String>> {
    let mut keys_after: Vec<String> = Vec::new();
    for n in since + 1..=newest.key_seq {
        let s = read_seal(store, n)
            .await?
            .ok_or_else(|| Error::NotFound(crate::format::keys::seal_key(n)))?;
        let seal = s.seal.map_err(|m| Error::Corrupt {
            what: "seal",
            key: s.key.clone(),
            message: m,
        })?;
        keys_after.extend(seal.entries.into_iter().map(|e| e.key));
    }
    let head_seal = newest.seal.map_err(|m| Error::Corrupt {
        what: "seal",
        key: newest.key.clone(),
        message: m,
    })?;
    if head_seal.watermark_utc.is_some() {
        keys_after.extend(
            crate::history::window::unsealed_after(store, &head_seal)
                .await?
                .into_iter()
                .map(|e| e.pointer_key),
        );
    }
    Ok(keys_after)
}

/// The pointers `wanted`, read (those gone since left out), and those that cannot be
/// parsed.
async fn read_wanted(
    store: &dyn AtomicPublisher,
    wanted: Vec<String>,
) -> Result<(Vec<Pointer>, Vec<Unreadable>)> {
    let read: Vec<(String, Result<Option<Pointer>>)> = futures::stream::iter(wanted)
        .map(|k| async move {
            let got = match crate::history::pointers::get_pointer(store, &k).await {
                Ok(Some(b)) => Pointer::from_bytes(&k, &b).map(Some),
                // Removed since it was sealed or indexed: `verify` names it.
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            (k, got)
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    let (mut v, mut bad) = (Vec::new(), Vec::new());
    for (key, got) in read {
        match got {
            Ok(p) => v.extend(p),
            Err(error @ Error::Corrupt { .. }) => bad.push(Unreadable { key, error }),
            Err(e) => return Err(e),
        }
    }
    Ok((v, bad))
}

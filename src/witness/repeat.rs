//! A repeat record: `lineage witness` of a store the witness recorded before, in
//! O(seals since its newest record + log n) reads of the store, not a walk of every seal.
//!
//! **What vouches for the store.** The records of a store are kept under its id, the
//! sha256 of its seal 1, which only reading seal 1 gives. The witness keeps the binding
//! instead: the newest record of each store names the location (URL) it was reached at.
//! For this location, each store whose newest record names it is a candidate; its record
//! (seal k, head digest d) is checked against this store's seal k: sha256(seal k's bytes)
//! = d. Seal k records the sha256 of seal k-1 (`prev_sha256`), which records seal k-2's,
//! down to seal 1; every record was made only after that chain was checked (the first
//! one by a walk of every seal, each later one from the record before it, as here). So
//! matching bytes mean seals 1..k are the very history the witness accepted, seal 1
//! included (a second preimage of sha256 aside): the candidate's id is this store's id,
//! and seal 1 need not be read again to know it. A store replaced, or rewritten from any
//! seal up to k, has another seal k (or none), matches no candidate, and gets the full
//! walk, which reports it as before (another store at the location, a witnessed seal
//! missing or rewritten).
//!
//! **What a repeat record checks.** Exactly one candidate matches; no other store's
//! newest record names the location but those its first record replaces (else another
//! store is at the location); the newest record parses, and the record its `prev` names
//! exists with that sha256. The seals after k are listed (names only, from seal k's key
//! on) and must be k+1..m with no gap; each is read and checked against the one before it
//! as `verify --since-seal` checks them ([`crate::audit::links`]: sequence, `prev_sha256`,
//! time, frontier against its root and against the predecessor's frontier plus its
//! entries, watermark and `ahead`, signature against the key it names), and none seals a
//! commit that seal k, or a newer one, sealed already. Seal k and every newer seal must
//! carry a frontier (`lineage-seal/2`). Then seal m is recorded, naming record k.
//!
//! **On any doubt, the full walk.** No candidate, more than one, a record that does not
//! parse, a broken `prev` link, a seal missing, out of order, without a frontier, or with
//! any problem of its own: [`super::witness_with`] then walks every seal and checks every
//! record, so what is reported (and refused) is exactly what the full walk finds.
//!
//! **Not re-read.** Seals 1..k-1 and the records before the newest one's predecessor: a
//! seal among them edited or removed since is found by `verify` (the chain's links) and
//! `verify --witness` (every record), not by a repeat record, which vouches only that
//! seals k+1..m extend the head the witness accepted.

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};

use super::location::{at_location, AtLocation};
use super::{
    new_record, parse_record, publish_record, record_key, PrevRecord, WitnessOutcome,
    WitnessRecord, HEADS_PREFIX, MAX_RECORD_BYTES,
};
use crate::audit::links::check_one;
use crate::base::clock::Clock;
use crate::base::digest::sha256_hex;
use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::history::head::read_seal;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::{fetch, StoredSeal, Trust};
use crate::publish::checked::Published;
use crate::publish::{list_pages, AtomicPublisher};

/// The newest record of this store, and the store's seal it names (matching it).
struct Known {
    /// The store's id.
    id: String,
    /// The record.
    record: WitnessRecord,
    /// sha256 of the record's bytes (the next record names it).
    digest: String,
    /// The store's seal `record.seq`, whose sha256 is `record.head`.
    seal: StoredSeal,
}

/// Record the store's newest seal from the witness's newest record of it on: `None` when
/// the witness holds no record of a store at this location that this one continues, or
/// on any doubt (then the caller walks the whole chain).
pub(super) async fn repeat(
    store: &dyn AtomicPublisher,
    witness: &dyn AtomicPublisher,
    clock: &dyn Clock,
) -> Result<Option<WitnessOutcome>> {
    let Some(known) = newest_known(store, witness).await? else {
        return Ok(None);
    };
    let Some(new) = new_seals(store, &known.seal).await? else {
        return Ok(None);
    };
    record(store, witness, clock, known, new).await.map(Some)
}

/// The newest record of the one store at this location that this store continues.
async fn newest_known(
    store: &dyn AtomicPublisher,
    witness: &dyn AtomicPublisher,
) -> Result<Option<Known>> {
    let here = at_location(witness, &store.describe(), None).await?;
    let mut matched = Vec::new();
    for a in &here {
        if let Some(k) = continued(store, a).await? {
            matched.push(k);
        }
    }
    let Ok([known]) = <[Known; 1]>::try_from(matched) else {
        return Ok(None);
    };
    let alone = alone_here(witness, &known.id, &here).await?;
    Ok((alone && prev_link_holds(witness, &known).await?).then_some(known))
}

/// Store `a.id`'s newest record, when it parses and this store's seal it names has the
/// head it recorded.
async fn continued(store: &dyn AtomicPublisher, a: &AtLocation) -> Result<Option<Known>> {
    if a.key != record_key(&a.id, a.seq) {
        return Ok(None);
    }
    let Ok(record) = parse_record(&a.bytes, &a.id, a.seq) else {
        return Ok(None);
    };
    let Some(seal) = read_seal(store, record.seq).await? else {
        return Ok(None);
    };
    Ok((seal.digest == record.head).then(|| Known {
        id: a.id.clone(),
        digest: sha256_hex(&a.bytes),
        record,
        seal,
    }))
}

/// Whether no other store is recorded at this location (`here`) but those store `id`'s
/// first record replaces.
async fn alone_here(witness: &dyn AtomicPublisher, id: &str, here: &[AtLocation]) -> Result<bool> {
    let others: Vec<&str> = here
        .iter()
        .map(|a| a.id.as_str())
        .filter(|o| *o != id)
        .collect();
    if others.is_empty() {
        return Ok(true);
    }
    let prefix = format!("{HEADS_PREFIX}{id}/");
    let first = witness
        .list(&prefix)
        .await?
        .into_iter()
        .filter_map(|o| {
            let seq = o.key.strip_prefix(&prefix)?.strip_suffix(".json")?;
            (seq.len() == 20).then(|| seq.parse::<u64>().ok()).flatten()
        })
        .min();
    let Some(first) = first else {
        return Ok(false);
    };
    let Some(rec) = read_record(witness, id, first).await? else {
        return Ok(false);
    };
    Ok(others.iter().all(|o| rec.0.replaces.iter().any(|r| r == o)))
}

/// Whether the record the newest one names as its `prev` is there, with that sha256.
async fn prev_link_holds(witness: &dyn AtomicPublisher, known: &Known) -> Result<bool> {
    let Some(prev) = &known.record.prev else {
        return Ok(true);
    };
    Ok(read_record(witness, &known.id, prev.seq)
        .await?
        .is_some_and(|(_, digest)| digest == prev.sha256))
}

/// Record `seq` of store `id`, parsed, and the sha256 of its bytes (`None`: missing,
/// too large or unreadable).
async fn read_record(
    witness: &dyn AtomicPublisher,
    id: &str,
    seq: u64,
) -> Result<Option<(WitnessRecord, String)>> {
    let bytes = match witness
        .get_at_most(&record_key(id, seq), MAX_RECORD_BYTES)
        .await
    {
        Ok(Some(b)) => b,
        Ok(None) | Err(crate::base::error::Error::TooLarge { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(parse_record(&bytes, id, seq)
        .ok()
        .map(|r| (r, sha256_hex(&bytes))))
}

/// The seals after `seal` (k), read and checked in order: `None` when the listing has a
/// gap, one is gone by the time it is read, or any has a problem.
async fn new_seals(
    store: &dyn AtomicPublisher,
    seal: &StoredSeal,
) -> Result<Option<Vec<StoredSeal>>> {
    let k = seal.key_seq;
    // From seal k's number on (its key, `<k>.json`, sorts after it, and so do the later
    // seals' keys and any name after the digits).
    let after = format!("{}{k:020}", keys::SEALS_PREFIX);
    let mut listed: Vec<(u64, String, u64)> = list_pages(store, keys::SEALS_PREFIX, &after, None)
        .await?
        .into_iter()
        .filter_map(|o| match keys::classify(&o.key) {
            KeyKind::Seal(n) if n > k => Some((n, o.key, o.size)),
            _ => None,
        })
        .collect();
    listed.sort_by_key(|l| l.0);
    if listed.iter().zip(k + 1..).any(|(l, want)| l.0 != want) {
        return Ok(None);
    }
    let read: Vec<Option<StoredSeal>> = futures::stream::iter(listed)
        .map(|(n, key, size)| fetch(store, key, n, Some(size)))
        .buffered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let Some(new) = read.into_iter().collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    Ok(extend(seal, &new).then_some(new))
}

/// Whether `new` extends seal `k` without a problem: each checked against the one before
/// ([`check_one`]), each with a frontier, none sealing a commit again that seal `k` (its
/// entries and `ahead`) or a seal after it sealed.
fn extend(k: &StoredSeal, new: &[StoredSeal]) -> bool {
    let Some(mut sealed) = sealed_by(k) else {
        return false;
    };
    let trust = Trust::default();
    let mut prev = k;
    for s in new {
        let Ok(seal) = &s.seal else { return false };
        if seal.frontier.is_none() {
            return false;
        }
        for e in &seal.entries {
            if sealed.insert(e.key.clone(), 0).is_some() {
                return false; // sealed again: the full walk names it
            }
        }
        if !check_one(Some(prev), s, &trust, Some(&sealed)).is_empty() {
            return false;
        }
        prev = s;
    }
    true
}

/// The pointer keys seal `k` vouches are sealed: its entries and its `ahead` (`None` when
/// it has no frontier, so the seals after it cannot be checked from it alone).
fn sealed_by(k: &StoredSeal) -> Option<HashMap<String, usize>> {
    let seal = k.seal.as_ref().ok().filter(|s| s.frontier.is_some())?;
    let ahead = seal
        .ahead
        .iter()
        .flatten()
        .filter_map(|a| match keys::classify(a) {
            KeyKind::History(h @ HistoryKey::Index { .. }) => h.pointer_key(),
            _ => None,
        });
    Some(
        seal.entries
            .iter()
            .map(|e| e.key.clone())
            .chain(ahead)
            .map(|key| (key, 0))
            .collect(),
    )
}

/// Record the newest of `new` after `known` (nothing when there is no new seal: the
/// newest is witnessed already).
async fn record(
    store: &dyn AtomicPublisher,
    witness: &dyn AtomicPublisher,
    clock: &dyn Clock,
    known: Known,
    new: Vec<StoredSeal>,
) -> Result<WitnessOutcome> {
    let last = new.last().unwrap_or(&known.seal);
    let mut outcome = WitnessOutcome {
        store_id: known.id.clone(),
        seq: last.key_seq,
        head: last.digest.clone(),
        record: record_key(&known.id, last.key_seq),
        created: false,
        problems: Vec::new(),
    };
    if new.is_empty() {
        return Ok(outcome);
    }
    let prev = PrevRecord {
        seq: known.record.seq,
        sha256: known.digest.clone(),
    };
    let rec = new_record(store, clock, (&known.id, last), Some(prev), Vec::new())?;
    outcome.created = publish_record(witness, &outcome.record, &rec).await? == Published::Created;
    Ok(outcome)
}

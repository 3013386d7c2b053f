//! A read since a seal checked against a witness: the seals it read (K..=N,
//! [`SealRange`]) against the witness's records, reading nothing else of the store.
//!
//! **Which records.** The records of a store are kept under its id, the sha256 of its seal
//! 1, which such a read does not read. The witness keeps the binding instead (as for a
//! repeat record, [`super::repeat`]): the stores whose newest record names this location.
//! One of them whose record of a seal among K..=N holds that seal's digest is this store
//! (that digest vouches for seals 1..=k, seal 1 included). When none does, the store
//! recorded here is the only one the witness recorded at the location, or the one whose
//! first record replaces all the others there (`--new-store-at-location`); with several
//! and none replacing the others, another store is at the location
//! ([`WitnessProblemKind::AnotherStoreAtLocation`]); with none, the store is not witnessed
//! ([`WitnessProblemKind::NotWitnessed`]).
//!
//! **What is checked.** Each record of a seal among K..=N must hold that seal's digest as
//! read ([`WitnessProblemKind::WitnessedSealRewritten`]); a record of a seal after N, when
//! N is the store's newest seal, names a seal that is gone
//! ([`WitnessProblemKind::WitnessedSealMissing`]); each record's `prev` link is checked as
//! the full check does. Not checked, and counted in the verdict: the records of seals
//! before K (those seals were not read; seal K's digest vouches for them; their names are
//! listed, and of them only the first record, for what it `replaces`, and the one of seal
//! K-1, for K's `prev` link, are read), and those of seals after N when the read is as of
//! an older seal N than the newest.

use std::collections::BTreeMap;

use super::check::{another_store, judge_prev, readable};
use super::location::{at_location, AtLocation};
use super::{
    list_records, read_listed, record_of, ReadRecord, WitnessProblemKind, WitnessReport, Witnessed,
    HEADS_PREFIX,
};
use crate::base::error::Result;
use crate::format::keys::seal_key;
use crate::publish::AtomicPublisher;
use crate::read::SealRange;

/// What the verdict of a range check says when a record of a seal read held: the words
/// that mark it as an anchor of the seals read (seal K's digest included).
pub const RANGE_HELD: &str = "(those read) hold: ";

/// What the check of a range found: the report, and what it did not check.
#[derive(Debug, Clone)]
pub struct RangeReport {
    /// The report, as the full check makes it (the store id is the one the witness
    /// recorded at the location).
    pub report: WitnessReport,
    /// Seal K.
    pub from: u64,
    /// Records of seals K..=N that hold the digest read.
    pub checked: u64,
    /// Records of seals before K: not checked.
    pub before: u64,
    /// Records of seals after N, the read being as of an older seal: not checked.
    pub after: u64,
    /// Whether a record of a seal read holds its digest, binding the store id.
    pub bound: bool,
}

/// Check the seals of `range`, of the store at location `store`, against the records the
/// witness holds of the store recorded there.
pub async fn check_range(
    range: &SealRange,
    store: &str,
    witness: &dyn AtomicPublisher,
) -> Result<RangeReport> {
    let mut out = RangeReport {
        report: WitnessReport {
            witness: witness.describe(),
            store_id: None,
            records: 0,
            newest_witnessed: None,
            store_head_seq: Some(range.to),
            unwitnessed_seals: 0,
            problems: Vec::new(),
        },
        from: range.from,
        checked: 0,
        before: 0,
        after: 0,
        bound: false,
    };
    let here = at_location(witness, store, None).await?;
    if here.is_empty() {
        out.report.push(
            WitnessProblemKind::NotWitnessed,
            HEADS_PREFIX.to_string(),
            format!("the witness holds no record of a store at this location ({store}): never witnessed yet, or witnessed at another URL (a read since a seal does not read seal 1, whose sha256 is the store id the records are kept under)"),
        );
        return Ok(out);
    }
    let mut stores = Vec::with_capacity(here.len());
    for a in &here {
        stores.push(recorded(witness, a, range.from).await?);
    }
    let digests: BTreeMap<u64, &str> = range
        .seals
        .iter()
        .map(|s| (s.key_seq, s.digest.as_str()))
        .collect();
    let bound = stores.iter().position(|r| holds(&r.records, &digests));
    out.bound = bound.is_some();
    let Some(own) = bound.or_else(|| replacing(&stores)) else {
        let named: Vec<String> = stores
            .iter()
            .map(|r| format!("store {} (witnessed up to seal {})", r.id, r.seq))
            .collect();
        out.report.push(
            WitnessProblemKind::AnotherStoreAtLocation,
            format!("{HEADS_PREFIX}{}/", stores[0].id),
            format!("the witness recorded {} at {store}, none replacing the others, and none of their records of seals {}-{} holds those seals' digests: another history is at the location (replaced, or rewritten from its first seal)", named.join(", "), range.from, range.to),
        );
        out.report.store_id = stores.first().map(|s| s.id.clone());
        return Ok(out);
    };
    let own = &stores[own];
    let id = &own.id;
    let replaced = replaces(&own.records);
    let others: Vec<(String, u64)> = stores
        .iter()
        .filter(|r| r.id != *id && !replaced.contains(&r.id))
        .map(|r| (r.id.clone(), r.seq))
        .collect();
    if !others.is_empty() {
        let (key, detail) = another_store(store, id, &others);
        out.report
            .push(WitnessProblemKind::AnotherStoreAtLocation, key, detail);
    }
    out.report.store_id = Some(id.clone());
    judge(&mut out, range, &digests, own);
    out.report
        .problems
        .sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
    Ok(out)
}

/// Whether a record of `records` is of a seal read and holds its digest.
fn holds(records: &[ReadRecord], digests: &BTreeMap<u64, &str>) -> bool {
    records.iter().any(|r| {
        r.record
            .as_ref()
            .is_ok_and(|rec| digests.get(&rec.seq) == Some(&rec.head.as_str()))
    })
}

/// The stores a store's first record replaces at its location.
fn replaces(records: &[ReadRecord]) -> Vec<String> {
    records
        .first()
        .and_then(|r| r.record.as_ref().ok())
        .map(|r| r.replaces.clone())
        .unwrap_or_default()
}

/// The one store at the location, or the one whose first record replaces every other.
fn replacing(stores: &[Recorded]) -> Option<usize> {
    if stores.len() == 1 {
        return Some(0);
    }
    stores.iter().position(|s| {
        let replaced = replaces(&s.records);
        stores
            .iter()
            .all(|o| o.id == s.id || replaced.contains(&o.id))
    })
}

/// What a range check reads of a store the witness recorded at the location.
struct Recorded {
    /// The store's id.
    id: String,
    /// The seal of its newest record.
    seq: u64,
    /// Its records read: the first (what it `replaces`), those of the seal before K
    /// and after (K's `prev` link, the seals read), the newest.
    records: Vec<ReadRecord>,
    /// The seal numbers of all its records, as listed (those before K counted, not read).
    listed: Vec<u64>,
}

/// The records of store `a` that a check from seal `from` reads (one listing of its
/// record names, a GET of each record of seal `from - 1` on and of the first; the newest
/// as `at_location` read it): what a witnessed read since a seal costs grows with the
/// seals since it, not with the witness's history of the store.
async fn recorded(witness: &dyn AtomicPublisher, a: &AtLocation, from: u64) -> Result<Recorded> {
    let listed = list_records(witness, &a.id).await?;
    let first = listed.first().map(|(_, n)| *n);
    let wanted: Vec<(String, u64)> = (listed.iter())
        .filter(|(k, n)| (Some(*n) == first || *n >= from.saturating_sub(1)) && *k != a.key)
        .cloned()
        .collect();
    let mut records = read_listed(witness, &a.id, wanted).await?;
    if listed.iter().any(|(k, _)| *k == a.key) {
        records.push(record_of(&a.id, a.key.clone(), a.seq, &a.bytes));
        records.sort_by_key(|r| r.key_seq);
    }
    Ok(Recorded {
        id: a.id.clone(),
        seq: a.seq,
        records,
        listed: listed.into_iter().map(|(_, n)| n).collect(),
    })
}

/// Every record of store `own` of a seal from K on against the seals read (`digests`),
/// and against the record before it; those before K counted from the listing.
fn judge(out: &mut RangeReport, range: &SealRange, digests: &BTreeMap<u64, &str>, own: &Recorded) {
    let (id, records) = (own.id.as_str(), own.records.as_slice());
    let by_seq: BTreeMap<u64, &ReadRecord> = records.iter().map(|r| (r.key_seq, r)).collect();
    let (from, to) = (range.from, range.to);
    out.before = own.listed.iter().filter(|n| **n < from).count() as u64;
    for r in records.iter().filter(|r| r.key_seq >= from) {
        let Some((rec, seen)) = readable(&mut out.report, r) else {
            continue;
        };
        match digests.get(&rec.seq) {
            Some(d) if *d == rec.head => out.checked += 1,
            Some(d) => out.report.push(
                WitnessProblemKind::WitnessedSealRewritten,
                seal_key(rec.seq),
                format!("has sha256 {d} as read (seals {from}-{to}), but seal {} was {seen}: history was rewritten after the witness saw it", rec.seq),
            ),
            None if range.newest => out.report.push(
                WitnessProblemKind::WitnessedSealMissing,
                seal_key(rec.seq),
                format!("seal {} was {seen}, but the store has no seal {} (its newest is {to}): the newest seals were cut off", rec.seq, rec.seq),
            ),
            None => out.after += 1,
        }
        judge_prev(&mut out.report, id, rec, &by_seq);
    }
    out.report.records = own.listed.len() as u64;
    if let Some(newest) = records.iter().rev().find_map(|r| r.record.as_ref().ok()) {
        if range.newest {
            out.report.unwitnessed_seals = to.saturating_sub(newest.seq);
        }
        out.report.newest_witnessed = Some(Witnessed {
            seq: newest.seq,
            head: newest.head.clone(),
            witnessed_utc: newest.witnessed_utc.clone(),
        });
    }
}

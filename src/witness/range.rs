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
//! before K (those seals were not read; seal K's digest vouches for them), and those of
//! seals after N when the read is as of an older seal N than the newest.

use std::collections::BTreeMap;

use super::check::{another_store, judge_prev, readable};
use super::location::at_location;
use super::{read_records, ReadRecord, WitnessProblemKind, WitnessReport, Witnessed, HEADS_PREFIX};
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
        stores.push((a.id.clone(), a.seq, read_records(witness, &a.id).await?));
    }
    let digests: BTreeMap<u64, &str> = range
        .seals
        .iter()
        .map(|s| (s.key_seq, s.digest.as_str()))
        .collect();
    let bound = stores.iter().position(|(_, _, r)| holds(r, &digests));
    out.bound = bound.is_some();
    let Some(own) = bound.or_else(|| replacing(&stores)) else {
        let named: Vec<String> = stores
            .iter()
            .map(|(o, n, _)| format!("store {o} (witnessed up to seal {n})"))
            .collect();
        out.report.push(
            WitnessProblemKind::AnotherStoreAtLocation,
            format!("{HEADS_PREFIX}{}/", stores[0].0),
            format!("the witness recorded {} at {store}, none replacing the others, and none of their records of seals {}-{} holds those seals' digests: another history is at the location (replaced, or rewritten from its first seal)", named.join(", "), range.from, range.to),
        );
        out.report.store_id = stores.first().map(|s| s.0.clone());
        return Ok(out);
    };
    let (id, _, records) = &stores[own];
    let others: Vec<(String, u64)> = stores
        .iter()
        .filter(|(o, _, _)| o != id && !replaces(records).contains(o))
        .map(|(o, n, _)| (o.clone(), *n))
        .collect();
    if !others.is_empty() {
        let (key, detail) = another_store(store, id, &others);
        out.report
            .push(WitnessProblemKind::AnotherStoreAtLocation, key, detail);
    }
    out.report.store_id = Some(id.clone());
    judge(&mut out, range, &digests, id, records);
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
fn replacing(stores: &[(String, u64, Vec<ReadRecord>)]) -> Option<usize> {
    if stores.len() == 1 {
        return Some(0);
    }
    stores.iter().position(|(id, _, r)| {
        let replaced = replaces(r);
        stores
            .iter()
            .all(|(o, _, _)| o == id || replaced.contains(o))
    })
}

/// Every record of store `id` against the seals read (`digests`), and against the record
/// before it.
fn judge(
    out: &mut RangeReport,
    range: &SealRange,
    digests: &BTreeMap<u64, &str>,
    id: &str,
    records: &[ReadRecord],
) {
    let by_seq: BTreeMap<u64, &ReadRecord> = records.iter().map(|r| (r.key_seq, r)).collect();
    let (from, to) = (range.from, range.to);
    for r in records {
        let Some((rec, seen)) = readable(&mut out.report, r) else {
            continue;
        };
        match digests.get(&rec.seq) {
            _ if rec.seq < from => out.before += 1,
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
    out.report.records = records.len() as u64;
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

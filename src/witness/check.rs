//! Checking a store's chain against the records a witness holds for it.

use std::collections::BTreeMap;

use super::{
    read_records, record_key, store_identity, ReadRecord, WitnessProblemKind, WitnessRecord,
    WitnessReport, Witnessed, HEADS_PREFIX,
};
use crate::audit::chain::Chain;
use crate::base::error::Result;
use crate::format::keys::seal_key;
use crate::publish::AtomicPublisher;

/// Check a store's chain against every record the witness holds for it.
pub async fn check(
    chain: &Chain,
    store: &str,
    witness: &dyn AtomicPublisher,
) -> Result<WitnessReport> {
    let store_id = store_identity(chain);
    let newest_seal = chain.head().map_or(0, |(n, _)| n);
    let mut report = WitnessReport {
        witness: witness.describe(),
        store_id: store_id.clone(),
        records: 0,
        newest_witnessed: None,
        store_head_seq: chain.head().map(|(n, _)| n),
        unwitnessed_seals: 0,
        problems: Vec::new(),
    };
    let Some(id) = store_id else {
        report.push(
            WitnessProblemKind::NotWitnessed,
            seal_key(1),
            "the store has no seal 1, so no store id the witness could know it by".to_string(),
        );
        return Ok(report);
    };
    let records = read_records(witness, &id).await?;
    // Other stores at this location, but those this store's first record says it
    // replaced (recorded with `--new-store-at-location`).
    let replaced: Vec<String> = records
        .first()
        .and_then(|r| r.record.as_ref().ok())
        .map(|r| r.replaces.clone())
        .unwrap_or_default();
    let mut others = super::location::others_at_location(witness, store, Some(&id)).await?;
    others.retain(|(o, _)| !replaced.contains(o));
    if !others.is_empty() {
        let (key, detail) = another_store(store, &id, &others);
        report.push(WitnessProblemKind::AnotherStoreAtLocation, key, detail);
    } else if records.is_empty() {
        report.push(
            WitnessProblemKind::NotWitnessed,
            format!("{HEADS_PREFIX}{id}/"),
            format!("the witness holds no record of this store (store id {id}, the sha256 of its seal 1): never witnessed yet"),
        );
    }
    judge_records(&mut report, chain, &id, &records);
    report.records = records.len() as u64;
    if let Some(newest) = records.iter().rev().find_map(|r| r.record.as_ref().ok()) {
        report.unwitnessed_seals = newest_seal.saturating_sub(newest.seq);
        report.newest_witnessed = Some(Witnessed {
            seq: newest.seq,
            head: newest.head.clone(),
            witnessed_utc: newest.witnessed_utc.clone(),
        });
    }
    report
        .problems
        .sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
    Ok(report)
}

/// Every record the witness holds for store `id` against the chain (`seals`), and against
/// the record before it.
fn judge_records(report: &mut WitnessReport, chain: &Chain, id: &str, records: &[ReadRecord]) {
    let newest_seal = chain.head().map_or(0, |(n, _)| n);
    let seals: BTreeMap<u64, &str> = chain
        .seals
        .iter()
        .map(|s| (s.key_seq, s.digest.as_str()))
        .collect();
    let by_seq: BTreeMap<u64, &ReadRecord> = records.iter().map(|r| (r.key_seq, r)).collect();
    for r in records {
        let Some((rec, seen)) = readable(report, r) else {
            continue;
        };
        match seals.get(&rec.seq) {
            None => report.push(
                WitnessProblemKind::WitnessedSealMissing,
                seal_key(rec.seq),
                format!("seal {} was {seen}, but the store has no seal {} (its newest is {newest_seal}): the newest seals were cut off", rec.seq, rec.seq),
            ),
            Some(d) if *d != rec.head => report.push(
                WitnessProblemKind::WitnessedSealRewritten,
                seal_key(rec.seq),
                format!("has sha256 {d}, but seal {} was {seen}: history was rewritten after the witness saw it", rec.seq),
            ),
            Some(_) => {}
        }
        judge_prev(report, id, rec, &by_seq);
    }
}

/// Record `r` as read, with what the witness saw in words (for the problems that quote
/// it); `None` for a record that cannot be read, reported as `WitnessRecordCorrupt`.
pub(super) fn readable<'a>(
    report: &mut WitnessReport,
    r: &'a ReadRecord,
) -> Option<(&'a WitnessRecord, String)> {
    match &r.record {
        Ok(rec) => {
            let seen = format!(
                "witnessed on {} with head {} (tree size {}, root {})",
                rec.witnessed_utc, rec.head, rec.tree_size, rec.root
            );
            Some((rec, seen))
        }
        Err(why) => {
            report.push(
                WitnessProblemKind::WitnessRecordCorrupt,
                r.key.clone(),
                why.clone(),
            );
            None
        }
    }
}

/// The record `rec` of store `id` names as its `prev` against the records read
/// (`by_seq`): there, with that sha256.
pub(super) fn judge_prev(
    report: &mut WitnessReport,
    id: &str,
    rec: &WitnessRecord,
    by_seq: &BTreeMap<u64, &ReadRecord>,
) {
    let Some(prev) = &rec.prev else { return };
    match by_seq.get(&prev.seq) {
        None => report.push(
            WitnessProblemKind::WitnessRecordMissing,
            record_key(id, prev.seq),
            format!("the record of seal {} names it (sha256 {}), but it is gone from the witness store: deleted", rec.seq, prev.sha256),
        ),
        Some(p) if p.digest != prev.sha256 => report.push(
            WitnessProblemKind::WitnessRecordCorrupt,
            p.key.clone(),
            format!("has sha256 {}, but the record of seal {} names {}: edited", p.digest, rec.seq, prev.sha256),
        ),
        Some(_) => {}
    }
}

/// The problem of another store's records at this location, naming both stores.
pub(super) fn another_store(store: &str, id: &str, others: &[(String, u64)]) -> (String, String) {
    let named: Vec<String> = others
        .iter()
        .map(|(o, n)| format!("store {o} (witnessed up to seal {n})"))
        .collect();
    let key = others
        .first()
        .map(|(o, _)| format!("{HEADS_PREFIX}{o}/"))
        .unwrap_or_default();
    let detail = format!(
        "the witness recorded {} at {store}, but the store there now is store {id}: another history (replaced, or rewritten from its first seal). A witness binds a location to one store; a genuinely new store there is recorded with `lineage witness --new-store-at-location`",
        named.join(", ")
    );
    (key, detail)
}

/// Walk `store`'s seal chain and [`check`] it against `witness`; also the sequence numbers
/// of the seals the witness holds records of (empty for a store without a first seal).
pub async fn check_store(
    store: &dyn AtomicPublisher,
    witness: &dyn AtomicPublisher,
) -> Result<(WitnessReport, std::collections::BTreeSet<u64>)> {
    let chain = crate::audit::chain::walk(store, None).await?;
    let r = check(&chain, &store.describe(), witness).await?;
    let seqs = match &r.store_id {
        Some(id) => witnessed_seqs(witness, id).await?,
        None => Default::default(),
    };
    Ok((r, seqs))
}

/// The sequence numbers a witness holds records of for `store_id`.
async fn witnessed_seqs(
    w: &dyn AtomicPublisher,
    store_id: &str,
) -> Result<std::collections::BTreeSet<u64>> {
    let probe = crate::witness::record_key(store_id, 0);
    let prefix = probe
        .rsplit_once('/')
        .map(|(p, _)| format!("{p}/"))
        .unwrap_or_default();
    Ok(w.list(&prefix)
        .await?
        .into_iter()
        .filter_map(|o| {
            o.key
                .strip_prefix(&prefix)?
                .strip_suffix(".json")?
                .parse::<u64>()
                .ok()
        })
        .collect())
}

//! Recording a head: the repeat record from the witness's newest record on
//! ([`super::repeat`]), else the walk of the whole chain checked against every record.

use super::check::check;
use super::location::replaced;
use super::{
    new_record, publish_record, read_records, record_key, PrevRecord, ReadRecord, WitnessOptions,
    WitnessOutcome, WitnessProblem, WitnessProblemKind,
};
use crate::audit::chain::{self, Chain};
use crate::base::clock::Clock;
use crate::base::error::{Error, Result};
use crate::publish::checked::Published;
use crate::publish::AtomicPublisher;

/// Record the store's newest seal in the witness store, after checking the chain and its
/// agreement with every earlier record. With problems, nothing is recorded and they are
/// returned in [`WitnessOutcome::problems`].
pub async fn witness(
    store: &dyn AtomicPublisher,
    witness: &dyn AtomicPublisher,
    clock: &dyn Clock,
) -> Result<WitnessOutcome> {
    witness_with(store, witness, clock, &WitnessOptions::default()).await
}

/// [`witness`], as `opts` asks. A store the witness recorded before at this location is
/// checked from its newest record on ([`super::repeat`]); any other, or on any doubt there, the
/// whole chain is walked and checked against every record.
pub async fn witness_with(
    store: &dyn AtomicPublisher,
    witness: &dyn AtomicPublisher,
    clock: &dyn Clock,
    opts: &WitnessOptions,
) -> Result<WitnessOutcome> {
    if let Some(done) = super::repeat::repeat(store, witness, clock).await? {
        return Ok(done);
    }
    let chain = chain::walk(store, None).await?;
    let Some(last) = chain.seals.last() else {
        return Err(Error::usage(format!(
            "{}: the store has no seals: run `lineage seal` first",
            store.describe()
        )));
    };
    let report = check(&chain, &store.describe(), witness).await?;
    let replaces = replaced(witness, &store.describe(), &report, opts).await?;
    let problems = blocking_problems(&chain, report.problems, !replaces.is_empty());
    let store_id = report.store_id.unwrap_or_default();
    let mut outcome = WitnessOutcome {
        record: record_key(&store_id, last.key_seq),
        store_id: store_id.clone(),
        seq: last.key_seq,
        head: last.digest.clone(),
        created: false,
        problems,
    };
    if !outcome.problems.is_empty() {
        return Ok(outcome);
    }
    let records = read_records(witness, &store_id).await?;
    if records.iter().any(|r| r.key_seq == last.key_seq) {
        return Ok(outcome); // already witnessed, and checked above to agree
    }
    let prev = prev_record(&records, last.key_seq);
    let rec = new_record(store, clock, (&store_id, last), prev, replaces)?;
    let published = publish_record(witness, &outcome.record, &rec).await?;
    outcome.created = published == Published::Created;
    Ok(outcome)
}

/// The newest record before seal `seq`, as the next record names it.
fn prev_record(records: &[ReadRecord], seq: u64) -> Option<PrevRecord> {
    records
        .iter()
        .rev()
        .find(|r| r.key_seq < seq)
        .map(|r| PrevRecord {
            seq: r.key_seq,
            sha256: r.digest.clone(),
        })
}

/// What keeps `witness` from recording: the chain's problems, and the check's (a store not
/// witnessed yet is not one, nor another store at its location when `replacing`: the
/// first record of a new store asked for explicitly).
fn blocking_problems(
    chain: &Chain,
    checked: Vec<WitnessProblem>,
    replacing: bool,
) -> Vec<WitnessProblem> {
    let mut problems: Vec<WitnessProblem> = chain
        .problems
        .iter()
        .map(|p| WitnessProblem {
            kind: WitnessProblemKind::StoreChain,
            key: p.key.clone(),
            detail: format!("{}: {}", p.kind.name(), p.detail),
        })
        .collect();
    problems.extend(
        checked
            .into_iter()
            .filter(|p| p.kind != WitnessProblemKind::NotWitnessed)
            .filter(|p| !(replacing && p.kind == WitnessProblemKind::AnotherStoreAtLocation)),
    );
    problems
}

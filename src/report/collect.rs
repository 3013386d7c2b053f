//! What the report says from the verification, the witness and the store's objects: the
//! witness check (with the seals it recorded), what was checked against what (head digest,
//! keys, signatures, digests recomputed), and the store's identity, size and age.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::audit::findings::{ProblemKind, Report};
use crate::base::error::Result;
use crate::history::iceberg::locate::{newest_table, IcebergTable};
use crate::history::identity::read_identity;
use crate::publish::AtomicPublisher;
use crate::report::model::{Checked, HeadCheck, Identity, KeyCheck, WitnessCheck};
use crate::report::options::ReportOptions;
use crate::report::runs::Counted;
use crate::witness::WitnessReport;

/// The newest Iceberg metadata file of a seal at or before the one reported; `None` when
/// there is none, or it is not this location's (`verify` names that).
pub(crate) async fn iceberg_table(
    store: &dyn AtomicPublisher,
    opts: &ReportOptions,
    verified: &Report,
) -> Option<IcebergTable> {
    let seq = opts.as_of_seal.or(verified.head_seq)?;
    newest_table(store, seq).await.ok().flatten()
}

/// The witness check, when one was asked for, and the seals the witness recorded.
pub(crate) async fn witness(
    store: &dyn AtomicPublisher,
    opts: &ReportOptions,
) -> Result<Option<(WitnessReport, BTreeSet<u64>)>> {
    let Some((w, name)) = &opts.witness else {
        return Ok(None);
    };
    let (mut r, seqs) = crate::witness::check_store(store, w.as_ref()).await?;
    r.witness = name.clone();
    Ok(Some((r, seqs)))
}

/// The newest seal and the head digest it was compared with.
fn head_check(opts: &ReportOptions, verified: &Report, witnessed: bool) -> HeadCheck {
    let time = verified
        .seal_times
        .iter()
        .find(|t| Some(t.seq) == verified.head_seq && t.tsa_utc.is_some());
    HeadCheck {
        seq: verified.head_seq,
        sha256: verified.head.clone(),
        sealed_utc: verified.head_sealed_utc.clone(),
        tsa_utc: time.and_then(|t| t.tsa_utc.clone()),
        tsa_checked: time.map(|t| t.checked),
        expected: opts.verify.expect_head.clone(),
        source: match &opts.verify.expect_head {
            Some(_) => "given with --expect-head (kept outside the store): some seal must have it, so a cut-off of the newest seals shows".into(),
            None if witnessed => "not given; the witness's records stand for it (see the witness check)".into(),
            None => "not given: the newest seal is the store's own, so a cut-off of the newest seals would not show (give --expect-head or --witness)".into(),
        },
        found: opts.verify.expect_head.as_ref().map(|_| {
            !verified
                .problems
                .iter()
                .any(|p| p.kind == ProblemKind::HeadNotFound)
        }),
    }
}

/// What was checked against what.
pub(crate) fn checked(
    opts: &ReportOptions,
    verified: &Report,
    witness: Option<&WitnessReport>,
    keys: Vec<KeyCheck>,
) -> Checked {
    Checked {
        head: head_check(opts, verified, witness.is_some()),
        keys,
        signed_seals: verified.signed_seals,
        seals: verified.seals,
        signatures_required_from: (!opts.verify.public_keys.is_empty())
            .then(|| opts.verify.signed_from.unwrap_or(1)),
        witness: witness.map(|w| WitnessCheck {
            witness: w.witness.clone(),
            records: w.records,
            newest_seq: w.newest_witnessed.as_ref().map(|n| n.seq),
            newest_utc: w.newest_witnessed.as_ref().map(|n| n.witnessed_utc.clone()),
            unwitnessed_seals: w.unwitnessed_seals,
            problems: w.problems.len() as u64,
        }),
        witness_keys: None,
        parts_hashed: verified.parts_hashed,
        parts_sha256: verified.parts_sha256_checked,
        parts_blake3: verified.parts_blake3_checked,
        bytes_hashed: verified.bytes_hashed,
        as_of_seal: opts.as_of_seal,
        counts_include_unsealed: opts.as_of_seal.is_none(),
    }
}

/// The store's identity, size and age (as of `now`); `first_seal_utc`: the first seal's
/// time; `iceberg`: the newest Iceberg table ([`iceberg_table`]).
pub(crate) async fn identity(
    store: &dyn AtomicPublisher,
    verified: &Report,
    counted: &Counted,
    (first_seal_utc, store_id): (Option<String>, Option<String>),
    iceberg: Option<&IcebergTable>,
    now: DateTime<Utc>,
) -> Result<Identity> {
    let born = counted
        .first_commit
        .clone()
        .or_else(|| first_seal_utc.clone());
    let counts = counted.withheld.is_none();
    Ok(Identity {
        store_id,
        identity_object: read_identity(store).await?.map(|i| i.store_id),
        commits: verified.commits,
        sealed_commits: verified.sealed_commits,
        unsealed_commits: verified.unsealed_commits,
        rows: verified.rows,
        bytes: counts.then_some(counted.bytes),
        runs: counts.then_some(counted.runs_total),
        partitions: counts.then_some(counted.partitions),
        seals: verified.seals,
        delta_version: verified.delta_version,
        iceberg_metadata_location: iceberg.map(|t| t.metadata_location.clone()),
        iceberg_seal: iceberg.map(|t| t.seq),
        first_commit_utc: counted.first_commit.clone(),
        last_commit_utc: counted.last_commit.clone(),
        first_seal_utc,
        age_days: born
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| ((now - t.with_timezone(&Utc)).num_seconds() as f64 / 86_400.0).max(0.0))
            .map(|d| (d * 10.0).round() / 10.0),
    })
}

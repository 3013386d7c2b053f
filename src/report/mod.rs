//! `lineage report`: one audit report of a store, as a self-contained HTML page, Markdown
//! or JSON ([`render()`]), from one data model ([`AuditReport`], whose JSON is the JSON
//! format; its schema is docs/report.schema.json).
//!
//! [`collect()`] runs the same checks as `verify` (with the trust anchors given: an expected
//! head digest, public keys, a witness), then counts what the rows say in one streamed pass
//! over the trusted read path ([`crate::read`]): the snapshot as of a seal, each part
//! fetched once, checked against its pointer and decoded only in the columns counted
//! ([`crate::parts::scan`]), folded into per-run counts, then dropped. A part that fails
//! its check is not counted and is named; a snapshot the trusted read refuses (a sealed
//! pointer missing or changed, a broken chain) withholds the counts, and says why. The
//! problems themselves come from the verification and head the report.
//!
//! Bounded size: at most [`MAX_RUNS`] runs get a section (the rest are counted together),
//! each list of values holds at most [`MAX_VALUES`] (the rest counted), each problem kind
//! at most [`MAX_PROBLEMS_PER_KIND`] named, and the seal timeline at most
//! [`MAX_TIMELINE_POINTS`] points (consecutive seals grouped when there are more).
//!
//! Inside: `model` is the data model, `options` what to report on; `collect` the parts
//! from the verification and the witness, `seals` the signing keys and the timeline,
//! `verdict` the problems by kind, `runs` the streamed pass, `recipes` the commands that
//! check it all independently; `render` and `chart` draw it.
//!
//! Above the applications (it reads through `witness` and `verify`), below `cli`.

use crate::audit::verify::verify_with;
use crate::base::error::Result;
use crate::history::seal::read_seals;
use crate::publish::AtomicPublisher;

mod chart;
mod collect;
pub(crate) mod model;
pub(crate) mod options;
mod recipes;
pub mod render;
mod runs;
mod seals;
mod shown;
mod verdict;

pub use model::{
    AuditReport, Bin, Breakdown, Checked, HeadCheck, Histogram, Identity, KeyCheck, Named, Omitted,
    ProblemGroup, Recipe, RunSection, Runs, StageRow, Timeline, TimelinePoint, ValueCount, Verdict,
    WitnessCheck, MAX_PROBLEMS_PER_KIND, MAX_RUNS, MAX_TIMELINE_POINTS, MAX_VALUES, REPORT_FORMAT,
};
pub use options::ReportOptions;
pub use render::{render, ReportFormat};

/// Verify a store and count what its rows say: the report's data.
pub async fn collect(store: &dyn AtomicPublisher, opts: &ReportOptions) -> Result<AuditReport> {
    for r in &opts.run_ids {
        crate::format::keys::check_run_id(r)?;
    }
    let mut verified = verify_with(store, &opts.verify).await?;
    let cosigners = match &opts.witness_keys {
        Some(k) => Some(k.judge_into(store, &mut verified).await?),
        None => None,
    };
    let stored_seals = read_seals(store).await?;
    let witness = collect::witness(store, opts).await?;
    let counted = runs::count_runs(store, opts).await?;
    let now = opts.verify.now;

    // The seals: who signed which, when, and which a witness recorded.
    let witnessed = witness.as_ref().map(|(_, seqs)| seqs);
    let (seal_rows, by_key) = seals::seal_rows(&stored_seals, &verified, witnessed);
    let keys = seals::key_checks(opts, by_key);
    let mut timeline = seals::timeline(&seal_rows, witness.is_some());
    for p in &mut timeline.points {
        p.tsa_utc = verified
            .seal_times
            .iter()
            .find(|t| t.seq == p.last_seq)
            .and_then(|t| t.tsa_utc.clone());
    }
    let witness = witness.map(|(w, _)| w);

    let verdict = verdict::verdict(&verified, witness.as_ref());
    let mut checked = collect::checked(opts, &verified, witness.as_ref(), keys);
    checked.witness_keys = cosigners;
    let first_seal_utc = seal_rows.first().map(|s| s.1.clone());
    // The one store id: the sha256 of seal 1, as the witness knows the store.
    let store_id = stored_seals
        .first()
        .filter(|s| s.key_seq == 1)
        .map(|s| s.digest.clone());
    let iceberg = collect::iceberg_table(store, opts, &verified).await;
    let identity = collect::identity(
        store,
        &verified,
        &counted,
        (first_seal_utc, store_id),
        iceberg.as_ref(),
        now,
    )
    .await?;
    let independent = recipes::recipes(opts, &verified, counted.sections(), iceberg.as_ref());
    Ok(AuditReport {
        format: REPORT_FORMAT.into(),
        generated_utc: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        tool_version: crate::format::pointer::tool_version(),
        store: store.describe(),
        verdict,
        checked,
        identity,
        timeline,
        runs: counted.into_runs(),
        independent,
    })
}

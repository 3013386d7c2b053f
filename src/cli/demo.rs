//! `lineage demo`: generate, append, seal, verify, summarise: the main job on the
//! local-disk default, so a newcomer sees the whole write and audit path in one command.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::audit::seal::seal;
use crate::audit::verify::{verify_with, VerifyOptions};
use crate::cli::{out, Status};
use crate::clock::SystemClock;
use crate::error::Result;
use crate::events::{Origin, SourcedBatch};
use crate::publish::posix::PosixPublisher;
use crate::validate::Validator;
use crate::writer::Writer;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Directory of the store (created if missing; appended to if it exists).
    #[arg(long, default_value = "lineage-store-demo")]
    store: PathBuf,
    /// Number of events.
    #[arg(long, default_value_t = 50_000)]
    events: usize,
    /// Number of runs.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Most rows per commit.
    #[arg(long, default_value_t = 10_000)]
    batch_rows: usize,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let started = std::time::Instant::now();
    let raw = crate::demo::generate(a.events, a.runs, a.seed)?;
    let mut v = Validator::new();
    let mut first = 1u64;
    let mut batches = Vec::with_capacity(raw.len());
    for b in raw {
        let n = b.num_rows() as u64;
        batches.push(v.validate(&SourcedBatch {
            batch: b,
            origin: Origin::Rows { first },
        })?);
        first += n;
    }
    let store = Arc::new(PosixPublisher::new(&a.store));
    let writer = Writer::new(store.clone()).with_batch_rows(a.batch_rows);
    let pointers = writer.append(&batches, |_| {}).await?;
    let write_s = started.elapsed().as_secs_f64();
    // Seal what was appended, then verify against the new head, as an auditor would.
    let sealed = seal(store.as_ref(), &SystemClock, None).await?;
    let opts = VerifyOptions {
        expect_head: Some(sealed.head.clone()),
        ..VerifyOptions::default()
    };
    let report = verify_with(store.as_ref(), &opts).await?;
    let rows: u64 = pointers.iter().map(|p| p.row_count).sum();
    let bytes: u64 = pointers.iter().map(|p| p.size_bytes).sum();
    let partitions: BTreeSet<_> = pointers
        .iter()
        .map(|p| (p.run_id.clone(), p.target_crs.clone()))
        .collect();
    let runs: BTreeSet<_> = pointers.iter().map(|p| p.run_id.clone()).collect();
    out(&format!("store: {}", a.store.display()))?;
    out(&format!(
        "appended {rows} events as {} commits in {} partitions ({} runs), {bytes} bytes of Parquet, in {write_s:.2} s",
        pointers.len(),
        partitions.len(),
        runs.len()
    ))?;
    out(&format!(
        "seal {}: covers {} commits; head {} (keep it outside the store)",
        sealed.seq, sealed.tree_size, sealed.head
    ))?;
    out(&format!(
        "verify --expect-head: {} commits in the store, {} parts byte-identical, {} problems",
        report.commits,
        report.parts_ok,
        report.problems.len()
    ))?;
    for p in &report.problems {
        out(&format!("  {:?}: {} ({})", p.kind, p.key, p.detail))?;
    }
    out(&format!(
        "next: lineage log --store {0}   |   lineage verify --store {0} --expect-head {1}",
        a.store.display(),
        sealed.head
    ))?;
    Ok(if report.is_clean() { 0 } else { 1 })
}

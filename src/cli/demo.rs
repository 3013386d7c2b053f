//! `lineage demo`: generate, append, seal, verify, summarise: the main job on the
//! local-disk default, so a newcomer sees the whole write and audit path in one command.
//!
//! It writes fake events, so it writes only into a new or empty store (any URL `--store`
//! takes): a store holding anything, or a directory that is not a store, is refused
//! (exit 2) and left as it was.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::verify_with;
use crate::base::clock::SystemClock;
use crate::base::error::{Error, Result};
use crate::base::limits::ReadLimits;
use crate::cli::common::{open, Side};
use crate::cli::common::{out, Status};
use crate::format::pointer::Pointer;
use crate::history::sealer::seal;
use crate::publish::store::options::{Opening, SideEnv};
use crate::publish::store::Store;
use crate::publish::AtomicPublisher;
use crate::schema::events::{Origin, SourcedBatch};
use crate::write::validate::Validator;
use crate::write::writer::Writer;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A new or empty store (a directory or any URL `--store` takes); a store holding
    /// anything is refused: the demo never mixes fake events into real ones.
    #[arg(long, value_name = "URL", default_value = "lineage-store-demo")]
    store: String,
    /// S3 endpoint (LocalStack, moto, MinIO...); default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL.
    #[arg(long, value_name = "URL")]
    endpoint_url: Option<String>,
    /// Number of events.
    #[arg(long, default_value_t = 50_000)]
    events: usize,
    /// Number of runs.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Append and verify only; leave sealing to you (e.g. `lineage seal --signing-key`).
    #[arg(long)]
    no_seal: bool,
    /// Most rows per commit.
    #[arg(long, default_value_t = 10_000)]
    batch_rows: usize,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = empty_store(&a).await?;
    let started = std::time::Instant::now();
    let pointers = append_events(&a, &store).await?;
    let write_s = started.elapsed().as_secs_f64();
    // Seal what was appended, then verify against the new head, as an auditor would.
    let sealed = match a.no_seal {
        true => None,
        false => Some(seal(store.as_ref(), &SystemClock, None).await?),
    };
    let opts = VerifyOptions {
        expect_head: sealed.as_ref().map(|s| s.head.clone()),
        ..VerifyOptions::default()
    };
    let report = verify_with(store.as_ref(), &opts).await?;
    out(&format!("store: {}", store.describe()))?;
    out(&appended(&pointers, write_s))?;
    if let Some(s) = &sealed {
        out(&format!(
            "seal {}: covers {} commits; head {} (keep it outside the store)",
            s.seq, s.tree_size, s.head
        ))?;
    }
    out(&format!(
        "verify: {} commits in the store, {} parts byte-identical, {} problems",
        report.commits,
        report.parts_ok,
        report.problems.len()
    ))?;
    for p in &report.problems {
        out(&format!("  {:?}: {} ({})", p.kind, p.key, p.detail))?;
    }
    let head = sealed.map_or(String::new(), |s| format!(" --expect-head {}", s.head));
    out(&format!(
        "next: lineage log --store {0}   |   lineage verify --store {0}{head}",
        a.store
    ))?;
    Ok(if report.is_clean() { 0 } else { 1 })
}

/// The store the demo writes into: new or empty, never one that holds anything.
async fn empty_store(a: &Args) -> Result<Arc<Store>> {
    let side = Side {
        url: &a.store,
        endpoint_url: a.endpoint_url.as_deref(),
        env: SideEnv::plain(),
    };
    let store = open(side, ReadLimits::default(), Opening::Store).await?;
    if let Some(o) = store.list_after("", "", 1).await?.first() {
        return Err(Error::usage(format!(
            "{}: not empty (it holds {}): the demo writes fake events only into a new or empty store; give a new directory or an empty prefix",
            store.describe(),
            crate::schema::rules::quote(&o.key)
        )));
    }
    Ok(store)
}

/// Generate the events, validate them as an append would, and commit them.
async fn append_events(a: &Args, store: &Arc<Store>) -> Result<Vec<Pointer>> {
    let raw = crate::write::demo::generate(a.events, a.runs, a.seed)?;
    let mut v = Validator::new();
    let mut first = 1u64;
    let mut batches = Vec::with_capacity(raw.len());
    for b in raw {
        let n = b.num_rows() as u64;
        batches.push(v.validate(&SourcedBatch::new(b, Origin::Rows { first }))?);
        first += n;
    }
    let writer = Writer::new(store.clone()).with_batch_rows(a.batch_rows);
    writer.append(&batches, |_| {}).await
}

/// "appended N events as M commits in P partitions (R runs), B bytes of Parquet, in S s".
fn appended(pointers: &[Pointer], write_s: f64) -> String {
    let rows: u64 = pointers.iter().map(|p| p.row_count).sum();
    let bytes: u64 = pointers.iter().map(|p| p.size_bytes).sum();
    let partitions: BTreeSet<_> = pointers
        .iter()
        .map(|p| (p.run_id.clone(), p.target_crs.clone()))
        .collect();
    let runs: BTreeSet<_> = pointers.iter().map(|p| p.run_id.clone()).collect();
    format!(
        "appended {rows} events as {} commits in {} partitions ({} runs), {bytes} bytes of Parquet, in {write_s:.2} s",
        pointers.len(),
        partitions.len(),
        runs.len()
    )
}

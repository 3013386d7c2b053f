//! `lineage report`: the audit report of a store ([`crate::report`]) written to a file, as
//! one self-contained HTML page, Markdown or JSON. Exit codes as `verify`: 0 clean, 1
//! problems found (the report is written all the same and says so at the top), 2 a usage
//! or access error (nothing written).

use std::path::PathBuf;

use crate::audit::verify::options::VerifyOptions;
use crate::base::error::Result;
use crate::cli::common::{out, write_out_file, Status, StoreArg};
use crate::publish::store::options::Opening;
use crate::report::options::ReportOptions;
use crate::report::render::ReportFormat;
use crate::report::{collect, render};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Write the report here (`-`: standard output); an existing file is refused.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// With --out: replace an existing file.
    #[arg(long)]
    force: bool,
    /// `html` (one self-contained page), `md` (Markdown) or `json` (the data behind both,
    /// docs/report.schema.json).
    #[arg(long, value_name = "FORMAT", default_value = "html")]
    format: String,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    #[command(flatten)]
    tsa_root: crate::cli::timestamps::TsaRootArg,
    /// Only these runs get sections (repeat it; default: every run, up to 25).
    #[arg(long, value_name = "RUN_ID")]
    run_id: Vec<String>,
    /// Count the commits sealed by seals 1..=N (default: the newest seal, and the commits
    /// not sealed yet).
    #[arg(long, value_name = "N")]
    as_of_seal: Option<u64>,
    /// Count as of the newest seal sealed at or before T (RFC 3339, or a date: the end of
    /// that day, UTC).
    #[arg(long, value_name = "T", conflicts_with = "as_of_seal")]
    as_of_time: Option<String>,
    /// Accept the commits `lineage repair` adopted that the expected head does not cover
    /// (or all of them, without --expect-head): listed as accepted, not as problems.
    #[arg(long)]
    accept_adopted: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let format: ReportFormat = a.format.parse()?;
    let store = a.store.open(Opening::ExistingStore).await?;
    let anchors = a.anchors.anchors(store.as_ref()).await?;
    let witness = a.anchors.witness.open(store.as_ref()).await?;
    let as_of_seal = match &a.as_of_time {
        Some(t) => Some(crate::read::as_of::seal_as_of_time(store.as_ref(), t).await?),
        None => a.as_of_seal,
    };
    let opts = ReportOptions {
        verify: VerifyOptions {
            accept_adopted: a.accept_adopted,
            tsa_roots: a.tsa_root.roots()?,
            ..VerifyOptions::default()
        }
        .with_anchors(&anchors),
        key_sources: a.anchors.key_sources(),
        witness,
        witness_keys: anchors.witness_keys.clone(),
        run_ids: a.run_id.clone(),
        as_of_seal,
        store_url: a.store.store.clone(),
    };
    let report = collect(store.as_ref(), &opts).await?;
    let text = render(&report, format)?;
    write_out_file(&a.out, text.as_bytes(), a.force)?;
    if a.out != std::path::Path::new("-") {
        out(&format!(
            "{}: {} ({} written); {}",
            report.verdict.headline,
            report.store,
            a.out.display(),
            report.verdict.anchoring
        ))?;
    }
    Ok(if report.verdict.clean { 0 } else { 1 })
}

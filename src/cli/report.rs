//! `lineage report`: the audit report of a store ([`crate::report`]) written to a file, as
//! one self-contained HTML page, Markdown or JSON. Exit codes as `verify`: 0 clean, 1
//! problems found (the report is written all the same and says so at the top), 2 a usage
//! or access error (nothing written).

use std::path::PathBuf;

use crate::audit::verify::options::VerifyOptions;
use crate::base::error::{Error, Result};
use crate::cli::common::{out, write_out_file, Status, StoreArg};
use crate::history::signing::read_public_key;
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
    /// A head digest printed by `lineage seal` and kept outside the store (as for `verify`).
    #[arg(long, value_name = "DIGEST")]
    expect_head: Option<String>,
    /// A trusted public key (repeat it for every key in use); every seal (from
    /// --signed-from on) must be signed by one of them.
    #[arg(long, value_name = "FILE")]
    public_key: Vec<PathBuf>,
    /// Seals before SEQ may be unsigned.
    #[arg(long, value_name = "SEQ")]
    signed_from: Option<u64>,
    #[command(flatten)]
    witness: crate::cli::witness::VerifyWitnessArgs,
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
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let format: ReportFormat = a.format.parse()?;
    if let Some(h) = &a.expect_head {
        if crate::history::merkle::parse_hash(h).is_none() {
            return Err(Error::usage(format!(
                "--expect-head {h:?} is not a sha256 (64 hex digits)"
            )));
        }
    }
    let public_keys = a
        .public_key
        .iter()
        .map(|p| read_public_key(p))
        .collect::<Result<Vec<_>>>()?;
    let store = a.store.open(Opening::ExistingStore).await?;
    let witness = a.witness.open(store.as_ref()).await?;
    let as_of_seal = match &a.as_of_time {
        Some(t) => Some(crate::read::as_of::seal_as_of_time(store.as_ref(), t).await?),
        None => a.as_of_seal,
    };
    let opts = ReportOptions {
        verify: VerifyOptions {
            public_keys,
            signed_from: a.signed_from,
            expect_head: a.expect_head.clone(),
            ..VerifyOptions::default()
        },
        key_sources: a
            .public_key
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        witness,
        run_ids: a.run_id.clone(),
        as_of_seal,
        store_url: a.store.store.clone(),
    };
    let report = collect(store.as_ref(), &opts).await?;
    let text = render(&report, format)?;
    write_out_file(&a.out, text.as_bytes(), a.force)?;
    if a.out != std::path::Path::new("-") {
        out(&format!(
            "{}: {} ({} written)",
            report.verdict.headline,
            report.store,
            a.out.display()
        ))?;
    }
    Ok(if report.verdict.clean { 0 } else { 1 })
}

//! `lineage prove COMMIT_ID` / `lineage prove --event-id E`: print an inclusion proof of a
//! commit, or a row proof of one event, in a seal (JSON).

use std::path::PathBuf;

use crate::audit::proof::format::ProveAgainst;
use crate::audit::proof::{prove, prove_row};
use crate::base::error::{Error, Result};
use crate::cli::common::{out_raw, write_out_file, Status, StoreArg};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// The commit to prove.
    #[arg(required_unless_present = "event_id", conflicts_with = "event_id")]
    commit_id: Option<String>,
    /// Prove one row instead: the event with this event_id, its values, its commit and
    /// the part that holds it (the proof carries that part, so `verify-proof` checks the
    /// row offline).
    #[arg(long, value_name = "E")]
    event_id: Option<String>,
    /// Prove against seal SEQ (default: the newest).
    #[arg(long, value_name = "SEQ", conflicts_with = "head")]
    seal: Option<u64>,
    /// Prove against the seal with this digest (the head digest the auditor holds).
    #[arg(long, value_name = "DIGEST")]
    head: Option<String>,
    /// Write the proof to FILE instead of stdout (an existing FILE is refused).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// With --out: replace an existing file.
    #[arg(long, requires = "out")]
    force: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::Store).await?;
    let against = match (a.seal, a.head) {
        (Some(n), _) => ProveAgainst::Seq(n),
        (None, Some(h)) => ProveAgainst::Head(h),
        (None, None) => ProveAgainst::Newest,
    };
    let proof = match (&a.commit_id, &a.event_id) {
        (_, Some(e)) => prove_row(store.clone(), e, &against).await?,
        (Some(c), None) => prove(store.as_ref(), c, &against).await?,
        (None, None) => return Err(Error::usage("give a commit id or --event-id")),
    };
    let mut text = serde_json::to_string_pretty(&proof).map_err(Error::internal_from)?;
    text.push('\n');
    match a.out {
        Some(path) => write_out_file(&path, text.as_bytes(), a.force)?,
        None => out_raw(text.trim_end())?,
    }
    Ok(0)
}

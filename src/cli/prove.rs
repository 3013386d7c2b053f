//! `lineage prove COMMIT_ID`: print an inclusion proof of a commit in a seal (JSON).

use std::path::PathBuf;

use crate::audit::proof::format::ProveAgainst;
use crate::audit::proof::prove;
use crate::base::error::{Error, Result};
use crate::cli::common::{out_raw, write_out_file, Status, StoreArg};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// The commit to prove.
    commit_id: String,
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
    let proof = prove(store.as_ref(), &a.commit_id, &against).await?;
    let mut text = serde_json::to_string_pretty(&proof).map_err(Error::internal_from)?;
    text.push('\n');
    match a.out {
        Some(path) => write_out_file(&path, text.as_bytes(), a.force)?,
        None => out_raw(text.trim_end())?,
    }
    Ok(0)
}

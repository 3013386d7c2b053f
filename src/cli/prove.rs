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
    #[arg(required_unless_present_any = ["event_id", "consistency"], conflicts_with = "event_id")]
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
    /// Write the older `lineage-proof/1` (`lineage-row-proof/1` with --event-id) JSON, which
    /// embeds the whole seal (checked against a head digest), instead of the compact
    /// `c2sp.org/tlog-proof@v1` (`lineage-row-proof/2`: the commit's tlog proof and the
    /// row), written when the seal is signed, and so carries a checkpoint.
    #[arg(long)]
    embed_seal: bool,
    /// Prove instead that a newer seal extends an older one (RFC 9162 consistency, between
    /// their C2SP checkpoints): from --from-head to --to-head (default: the newest seal).
    #[arg(long, requires = "from_head", conflicts_with_all = ["commit_id", "event_id", "seal", "head", "embed_seal"])]
    consistency: bool,
    /// With --consistency: the older head digest (the one the auditor holds).
    #[arg(long, value_name = "DIGEST", requires = "consistency")]
    from_head: Option<String>,
    /// With --consistency: the newer head digest (default: the newest seal).
    #[arg(long, value_name = "DIGEST", requires = "consistency")]
    to_head: Option<String>,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::Store).await?;
    if let (true, Some(from)) = (a.consistency, a.from_head.as_deref()) {
        let p = crate::audit::proof::consistency::prove_consistency(
            store.as_ref(),
            from,
            a.to_head.as_deref(),
        )
        .await?;
        let mut text = serde_json::to_string_pretty(&p).map_err(Error::internal_from)?;
        text.push('\n');
        return emit(&text, a.out.as_deref(), a.force);
    }
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
    // A row proof carries its part: the compact one is JSON, with the commit's tlog proof.
    let compact = match (a.embed_seal, proof.row.is_some()) {
        (true, _) => None,
        (false, true) => crate::audit::proof::c2sp::to_compact_row_proof(&proof),
        (false, false) => crate::audit::proof::c2sp::to_tlog_proof(&proof),
    };
    let text = match compact {
        Some(t) => t,
        None => {
            let mut t = serde_json::to_string_pretty(&proof).map_err(Error::internal_from)?;
            t.push('\n');
            t
        }
    };
    emit(&text, a.out.as_deref(), a.force)
}

/// Write the proof to `out`, or stdout.
fn emit(text: &str, out: Option<&std::path::Path>, force: bool) -> Result<Status> {
    match out {
        Some(path) => write_out_file(path, text.as_bytes(), force)?,
        None => out_raw(text.trim_end())?,
    }
    Ok(0)
}

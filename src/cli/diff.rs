//! `lineage diff SEAL_A SEAL_B`: what changed from seal A to seal B: the commits added,
//! the compactions put into effect, the runs touched and the rows added (`--json`: one
//! object, every commit listed).

use crate::audit::diff::diff;
use crate::base::error::Result;
use crate::cli::anchors::AnchorArgs;
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// The older seal (0: before the first seal).
    seal_a: u64,
    /// The newer seal.
    seal_b: u64,
    #[command(flatten)]
    anchors: AnchorArgs,
    /// As one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::ExistingStore).await?;
    let anchors = crate::cli::seal_anchors::check(&a.anchors, store.as_ref()).await?;
    anchors.require_clean()?;
    anchors.say_held();
    let d = diff(store.as_ref(), a.seal_a, a.seal_b, anchors.trust.as_ref()).await?;
    if a.json {
        out_raw(&json_line(&d)?)?;
        return Ok(0);
    }
    out(&format!(
        "seal {} -> seal {}: +{} commits ({} -> {}), +{} rows, {} compactions put into effect, {} runs touched",
        d.from,
        d.to,
        d.commits_added.len(),
        d.commits_before,
        d.commits_after,
        d.rows_added,
        d.compactions.len(),
        d.runs.len()
    ))?;
    for (run, c) in &d.runs {
        out(&format!(
            "  run {run}: +{} commits, +{} rows",
            c.commits, c.rows
        ))?;
    }
    for (id, seq) in &d.compactions {
        out(&format!("  compaction {id} in effect from seal {seq}"))?;
    }
    Ok(0)
}

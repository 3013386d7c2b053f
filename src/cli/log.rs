//! `lineage log`: the commits, oldest first.

use crate::audit::log::read_pointers;
use crate::cli::{json_line, out, Status, StoreArg};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Only this run.
    #[arg(long)]
    run_id: Option<String>,
    /// One JSON pointer per line.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open().await?;
    for p in read_pointers(store.as_ref(), a.run_id.as_deref()).await? {
        if a.json {
            out(&json_line(&p)?)?;
        } else {
            out(&format!(
                "{} {} run_id={} target_crs={} rows={} seq={}..{} {}{}",
                p.committed_utc,
                p.commit_id,
                p.run_id,
                p.target_crs,
                p.row_count,
                p.first_sequence,
                p.last_sequence,
                p.part_path,
                if p.adopted { " (adopted)" } else { "" }
            ))?;
        }
    }
    Ok(0)
}

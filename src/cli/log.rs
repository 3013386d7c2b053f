//! `lineage log`: the commits in commit-time order (`--since-seal`: only the new ones).

use crate::base::error::Result;
use crate::cli::common::{json_line, out, Status, StoreArg};
use crate::history::pointers::read_pointers;

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
    /// Only the commits after seal SEQ (default: the newest), in O(new) reads.
    #[arg(long, value_name = "SEQ", num_args = 0..=1)]
    since_seal: Option<Option<u64>>,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open().await?;
    let pointers = match a.since_seal {
        Some(since) => {
            crate::audit::log::since_seal(store.as_ref(), since, a.run_id.as_deref()).await?
        }
        None => read_pointers(store.as_ref(), a.run_id.as_deref()).await?,
    };
    for p in pointers {
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

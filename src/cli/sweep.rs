//! `lineage sweep`: remove stale temps left by crashed publishes.

use crate::audit::sweep::{sweep, sweep_all};
use crate::base::clock::{Clock, SystemClock};
use crate::base::error::Result;
use crate::base::time::parse_duration;
use crate::cli::common::{duration, json_line, out, out_raw, Status, StoreArg};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Only temps older than this, by the time in their name and their modification time
    /// (at least 60s; default 1h).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    older_than: Option<chrono::Duration>,
    /// Remove every temp now, whatever its age. Only after stopping every writer of the
    /// store (e.g. the job that crashed): a running publish would lose its temp and fail.
    #[arg(long, conflicts_with = "older_than")]
    i_know_no_writer_is_running: bool,
    /// Only list what would be removed.
    #[arg(long)]
    dry_run: bool,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Default age after which a temp is stale.
const DEFAULT_OLDER_THAN: &str = "1h";

pub(crate) async fn run(a: Args) -> Result<Status> {
    let older = match a.older_than {
        Some(d) => d,
        None => parse_duration(DEFAULT_OLDER_THAN)?,
    };
    let store = a.store.open(Opening::ExistingStore).await?;
    let r = if a.i_know_no_writer_is_running {
        sweep_all(store.as_ref(), a.dry_run).await?
    } else {
        sweep(store.as_ref(), SystemClock.now(), older, a.dry_run).await?
    };
    if a.json {
        out_raw(&json_line(&r)?)?;
    } else {
        let verb = if a.dry_run { "would remove" } else { "removed" };
        for k in &r.removed {
            out(&format!("{verb}: {k}"))?;
        }
        out(&format!(
            "{} stale temps {verb} ({} bytes), {} recent temps kept",
            r.removed.len(),
            r.bytes,
            r.kept
        ))?;
        for k in &r.refused {
            out(&format!("refused: {k}"))?;
        }
    }
    if r.refused.is_empty() {
        Ok(0)
    } else {
        Ok(3)
    }
}

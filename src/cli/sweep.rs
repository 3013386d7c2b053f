//! `lineage sweep`: remove stale temps left by crashed publishes.

use crate::audit::sweep::{parse_duration, sweep, DEFAULT_OLDER_THAN};
use crate::cli::{json_line, out, Status, StoreArg};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Only temps last modified longer ago than this (at least 60s).
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_OLDER_THAN)]
    older_than: String,
    /// Only list what would be removed.
    #[arg(long)]
    dry_run: bool,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let older = parse_duration(&a.older_than)?;
    let store = a.store.open().await?;
    let r = sweep(store.as_ref(), chrono::Utc::now(), older, a.dry_run).await?;
    if a.json {
        out(&json_line(&r)?)?;
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
    }
    Ok(0)
}

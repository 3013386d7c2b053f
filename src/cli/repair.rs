//! `lineage repair`: adopt orphan parts by writing their pointers from their own footers.

use crate::audit::repair::repair;
use crate::audit::verify::options::DEFAULT_GRACE_MINUTES;
use crate::base::error::Result;
use crate::base::time::parse_duration;
use crate::cli::common::{json_line, out, Status, StoreArg};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Leave orphans younger than this alone (their writer may still publish the pointer).
    #[arg(long, value_name = "DURATION", default_value_t = format!("{DEFAULT_GRACE_MINUTES}m"))]
    grace: String,
    /// Only say what would be adopted.
    #[arg(long)]
    dry_run: bool,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let grace = parse_duration(&a.grace)?;
    let store = a.store.open().await?;
    let r = repair(store.as_ref(), chrono::Utc::now(), grace, a.dry_run).await?;
    if a.json {
        out(&json_line(&r)?)?;
    } else {
        let verb = if a.dry_run { "would adopt" } else { "adopted" };
        for k in &r.adopted {
            out(&format!("{verb}: {k}"))?;
        }
        for (k, why) in &r.refused {
            out(&format!("refused: {k}: {why}"))?;
        }
        out(&format!(
            "{} {verb}, {} refused, {} in flight (left alone)",
            r.adopted.len(),
            r.refused.len(),
            r.in_flight
        ))?;
        if !a.dry_run && !r.adopted.is_empty() {
            // Adopted pointers have no index entry: incremental seals do not find them.
            out("next: lineage seal --rescan (seals the adopted commits)")?;
        }
    }
    // Refused orphans are still problems an auditor must look at.
    Ok(if r.refused.is_empty() { 0 } else { 1 })
}

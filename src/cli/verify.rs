//! `lineage verify`: exit 0 when clean, 1 when anything is wrong (each object named).

use crate::audit::verify::verify;
use crate::cli::{json_line, out, Status, StoreArg};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// The report as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open().await?;
    let report = verify(store.as_ref()).await?;
    if a.json {
        out(&json_line(&report)?)?;
    } else {
        for p in &report.problems {
            out(&format!("{:?}: {} ({})", p.kind, p.key, p.detail))?;
        }
        out(&format!(
            "{}: {} commits, {} parts verified ({} rows, {} bytes hashed), {} problems",
            report.store,
            report.commits,
            report.parts_ok,
            report.rows,
            report.bytes_hashed,
            report.problems.len()
        ))?;
    }
    Ok(if report.is_clean() { 0 } else { 1 })
}

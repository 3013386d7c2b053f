//! `lineage append`: read, validate all of it, then commit flush by flush.

use std::path::PathBuf;

use crate::cli::{json_line, out, Status, StoreArg};
use crate::error::Result;
use crate::input::{self, Format};
use crate::pointer::Pointer;
use crate::writer::{Writer, DEFAULT_BATCH_ROWS};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Input file, or `-` for standard input (the default).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Input format; detected from the file extension when not given (stdin: ndjson).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Most rows per commit (one Parquet part each).
    #[arg(long, default_value_t = DEFAULT_BATCH_ROWS)]
    batch_rows: usize,
    /// Derive commit ids from this key, so a retried job re-publishes the same commits.
    #[arg(long)]
    commit_key: Option<String>,
    /// Contract version to write (default: the newest; Arrow/Parquet input keeps the
    /// version its schema is). Older input is widened with null columns.
    #[arg(long, value_name = "VERSION")]
    schema_version: Option<String>,
    /// One JSON pointer per line.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let (bytes, format) = input::read_input(a.input.as_deref(), a.format)?;
    // Validate everything before the first commit: refused input publishes nothing.
    let batches = input::parse_validated(bytes, format)?;
    let typed = matches!(format, Format::Arrow | Format::Parquet);
    let (_, batches) = crate::contract::for_append(batches, a.schema_version.as_deref(), typed)?;
    let store = a.store.open().await?;
    let writer = Writer::new(store)
        .with_batch_rows(a.batch_rows)
        .with_commit_key(a.commit_key);
    let mut print_err = None;
    let pointers = writer
        .append(&batches, |p| {
            if print_err.is_none() {
                if let Err(e) = print_commit(p, a.json) {
                    print_err = Some(e);
                }
            }
        })
        .await?;
    if let Some(e) = print_err {
        return Err(e);
    }
    if pointers.is_empty() {
        // Empty input is a no-op, not an error (README, "Input"), and says so.
        let note = "the input holds no events: nothing was appended";
        return out(&if a.json {
            json_line(
                &serde_json::json!({"empty_input": true, "commits": 0, "rows": 0, "note": note}),
            )?
        } else {
            format!("0 commits, 0 rows: {note}")
        })
        .map(|()| 0);
    }
    if !a.json {
        let rows: u64 = pointers.iter().map(|p| p.row_count).sum();
        out(&format!("{} commits, {rows} rows", pointers.len()))?;
    }
    Ok(0)
}

fn print_commit(p: &Pointer, json: bool) -> Result<()> {
    if json {
        out(&json_line(p)?)
    } else {
        out(&format!(
            "committed {} rows={} bytes={} sha256={} {}",
            p.commit_id, p.row_count, p.size_bytes, p.sha256, p.part_path
        ))
    }
}

//! `lineage append`: validate all of the input, then read it again and commit flush by
//! flush (memory bounded, see [`crate::write::stream`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::base::error::Result;
use crate::base::rejection::DEFAULT_MAX_ERRORS;
use crate::cli::common::{json_line, out, out_raw, refusal_json, Status, StoreUrlArg};
use crate::format::pointer::Pointer;
use crate::write::flush::DEFAULT_BATCH_ROWS;
use crate::write::input;
use crate::write::input::format::Format;
use crate::write::writer::Writer;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreUrlArg,
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
    /// Errors to list when the input is refused (0: all); the whole input is validated
    /// either way and the rest are counted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ERRORS)]
    max_errors: usize,
    /// Longest NDJSON line or CSV record accepted, in bytes, and longest Arrow or Parquet
    /// string value; a longer one is refused, naming its line (or row and field), before it
    /// is parsed (bounds the memory one line can cost; standard input is refused as soon as
    /// the line passes the limit, not after spooling the rest).
    #[arg(long, value_name = "BYTES", default_value_t = crate::write::input::guard::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// One JSON pointer per line; refused input: one JSON object listing the errors
    /// (`errors`: each with `line`, `row`, `field`, `value`, `reason`), as `check --json`.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let json = a.json;
    let result = append(a).await;
    if let (true, Err(e)) = (json, &result) {
        if let Some(v) = refusal_json(e) {
            out_raw(&json_line(&v)?)?;
        }
    }
    result
}

async fn append(a: Args) -> Result<Status> {
    // Standard input is spooled to a temp file first: it is read twice.
    let input = Arc::new(input::source::Input::open_limited(
        a.input.as_deref(),
        a.format,
        a.max_line_bytes,
    )?);
    let store = a.store.open().await?;
    let writer = Writer::new(store)
        .with_batch_rows(a.batch_rows)
        .with_commit_key(a.commit_key)
        .with_schema_version(a.schema_version)
        .with_max_errors(a.max_errors);
    let mut print_err = None;
    // Validates everything before the first commit: refused input publishes nothing.
    let done = writer
        .append_source(input, false, |p| {
            if print_err.is_none() {
                if let Err(e) = print_commit(p, a.json) {
                    print_err = Some(e);
                }
            }
        })
        .await?;
    // Every commit is published: a reader that went away (`append | head -1`) did not stop
    // anything, so the exit code says the append succeeded (141 would tell a wrapper that
    // retries on it to append everything again). The lost lines are what `lineage log` shows.
    let closed = |e: &crate::base::error::Error| crate::cli::common::closed_stdout(e);
    match print_err {
        Some(e) if closed(&e) => {
            return stdout_gone(done.commits, done.rows);
        }
        Some(e) => return Err(e),
        None => {}
    }
    if done.commits == 0 {
        // Empty input is a no-op, not an error (README, "Input"), and says so.
        let note = "the input holds no events: nothing was appended";
        return out_raw(&if a.json {
            json_line(
                &serde_json::json!({"empty_input": true, "commits": 0, "rows": 0, "note": note}),
            )?
        } else {
            format!("0 commits, 0 rows: {note}")
        })
        .map(|()| 0);
    }
    if !a.json {
        match out(&format!("{} commits, {} rows", done.commits, done.rows)) {
            Err(e) if closed(&e) => return stdout_gone(done.commits, done.rows),
            r => r?,
        }
    }
    // What a memory-limited platform (Lambda, Batch) must provision; the benchmark reads it.
    tracing::info!(
        commits = done.commits,
        rows = done.rows,
        peak_rss_kib = peak_rss_kib(),
        "append done"
    );
    Ok(0)
}

/// Say on stderr that the output was cut, not the append; exit 0.
fn stdout_gone(commits: u64, rows: u64) -> Result<Status> {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "standard output was closed: the append finished ({commits} commits, {rows} rows published); `lineage log` lists them"
    );
    Ok(0)
}

fn print_commit(p: &Pointer, json: bool) -> Result<()> {
    if json {
        out_raw(&json_line(p)?)
    } else {
        out(&format!(
            "committed {} rows={} bytes={} sha256={} {}",
            p.commit_id, p.row_count, p.size_bytes, p.sha256, p.part_path
        ))
    }
}

/// The process's peak resident set (VmHWM), in KiB, where Linux tells it (0 elsewhere).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

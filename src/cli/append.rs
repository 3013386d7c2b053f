//! `lineage append`: validate all of the input, then read it again and commit flush by
//! flush (memory bounded, see [`crate::write::stream`]).

use std::sync::Arc;

use crate::base::error::Result;
use crate::cli::common::{json_line, out, out_raw, refusal_json, InputArgs, Status, StoreArg};
use crate::format::pointer::Pointer;
use crate::publish::store::options::Opening;

use crate::write::writer::Writer;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    input: InputArgs,
    /// Derive commit ids from this key, so a retried job re-publishes the same commits.
    #[arg(long)]
    commit_key: Option<String>,
    /// With --commit-key: keep the flushes already committed under the key (printed as
    /// `kept`), write the rest; a kept flush whose payload differs is reported, not refused.
    #[arg(long, requires = "commit_key")]
    resume: bool,
    /// Sign every part with this Ed25519 writer key (made by `lineage keygen`): its footer
    /// then ties the part's bytes to its store, commit id and rows, so `repair --writer-key`
    /// can prove an orphan part is this writer's.
    #[arg(long, value_name = "FILE")]
    signing_key: Option<std::path::PathBuf>,
    /// Accept a signing key file that others can read (refused by default, as ssh does).
    #[arg(long, requires = "signing_key")]
    allow_readable_key: bool,
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
    a.store.given()?;
    let input = Arc::new(a.input.open(a.store.limit.max_page_bytes)?);
    let key = match &a.signing_key {
        Some(path) => {
            let root = crate::publish::store::local_path(&a.store.store);
            crate::history::signing::check_signing_key_file(
                path,
                root.as_deref(),
                a.allow_readable_key,
            )?;
            Some(crate::history::signing::read_signing_key(path)?)
        }
        None => None,
    };
    let store = a.store.open(Opening::Store).await?;
    let process = format!("{} cli", crate::format::pointer::tool_version());
    let writer = Writer::new(store)
        .with_signing_key(key)
        .with_environment(&crate::base::env::ProcessEnv, &process)
        .with_batch_rows(a.input.batch_rows)
        .with_commit_key(a.commit_key)
        .with_resume(a.resume)
        .with_schema_version(a.input.schema_version)
        .with_max_errors(a.input.max_errors);
    let mut print_err = None;
    // Validates everything before the first commit: refused input publishes nothing.
    let done = writer
        .append_source(input, false, |p| {
            if print_err.is_none() {
                if let Err(e) = print_commit(p, writer.kept(&p.commit_id), a.json) {
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
        // Empty input is a no-op, not an error (docs/input.md), and says so.
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
        match out(&summary_line(&done)) {
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

/// `6 commits, 24 rows`, and with `--resume` how many of them were kept.
fn summary_line(done: &crate::write::stream::append::AppendSummary) -> String {
    let kept = match done.kept.len() {
        0 => String::new(),
        n => format!(
            " ({n} kept from an earlier attempt, {} of them with a different payload)",
            done.kept.iter().filter(|k| k.payload_differs).count()
        ),
    };
    format!("{} commits, {} rows{kept}", done.commits, done.rows)
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

/// One line per commit: `committed …`; `already committed … (by an earlier run at T;
/// nothing published)` for a keyed retry that found its commit there; `kept …` for a flush
/// an earlier attempt committed (`--resume`; `payload_differs` when this attempt's rows
/// differ). With `--json`, the pointer, plus `"existed": true` for a retry's commit and
/// `"kept": true` and `"payload_differs"` for a kept one.
fn print_commit(p: &Pointer, kept: Option<crate::write::resume::Kept>, json: bool) -> Result<()> {
    if json {
        let mut v = serde_json::to_value(p).map_err(crate::base::error::Error::internal_from)?;
        if p.existed {
            v["existed"] = serde_json::Value::Bool(true);
        }
        if let Some(k) = &kept {
            v["kept"] = serde_json::Value::Bool(true);
            v["payload_differs"] = serde_json::Value::Bool(k.payload_differs);
        }
        return out_raw(&json_line(&v)?);
    }
    let (what, when) = match (&kept, p.existed) {
        (Some(k), _) => (
            "kept",
            if k.payload_differs {
                " payload_differs"
            } else {
                ""
            }
            .to_string(),
        ),
        (None, true) => (
            "already committed",
            format!(
                " (by an earlier run at {}; nothing published)",
                p.committed_utc
            ),
        ),
        (None, false) => ("committed", String::new()),
    };
    out(&format!(
        "{what} {} rows={} bytes={} sha256={} {}{when}",
        p.commit_id, p.row_count, p.size_bytes, p.sha256, p.part_path
    ))
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

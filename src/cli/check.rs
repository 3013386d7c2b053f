//! `lineage check`: validate an input exactly as `append` would, without a store, and say
//! what the append would do (see [`crate::write::check`]). Exit 0 valid, 2 refused (every
//! error listed on standard error, as `append` lists them) or not readable (standard output
//! then says `not checked:`, and `--json` has `"checked": false`).

use std::path::PathBuf;

use serde_json::json;

use crate::base::error::Result;
use crate::base::rejection::DEFAULT_MAX_ERRORS;
use crate::cli::common::{json_line, out, out_raw, refusal_json, Status};
use crate::write::check::{check, CheckOptions, CheckReport};
use crate::write::flush::DEFAULT_BATCH_ROWS;
use crate::write::input::format::Format;
use crate::write::input::source::Input;

/// Partitions the text summary lists (all of them with `--json`).
const PARTITIONS_SHOWN: usize = 20;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Input file, or `-` for standard input (the default).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Input format; detected from the file extension when not given (stdin: ndjson).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Contract version an append would write (default: the newest; Arrow/Parquet input
    /// keeps the version its schema is).
    #[arg(long, value_name = "VERSION")]
    schema_version: Option<String>,
    /// Errors to list when the input is refused (0: all); the rest are counted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ERRORS)]
    max_errors: usize,
    /// Longest NDJSON line or CSV record accepted, in bytes, and longest Arrow or Parquet
    /// string value; a longer one is refused, naming its line (or row and field), before it
    /// is parsed (bounds the memory one line can cost; standard input is refused as soon as
    /// the line passes the limit, not after spooling the rest).
    #[arg(long, value_name = "BYTES", default_value_t = crate::write::input::guard::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// Rows per commit the append would use, for the summary's commit count.
    #[arg(long, default_value_t = DEFAULT_BATCH_ROWS)]
    batch_rows: usize,
    /// The result as one JSON object on standard output (`valid`, and the summary, or
    /// `errors`: each with `line`, `row`, `field`, `value`, `reason`).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: Args) -> Result<Status> {
    let result =
        Input::open_limited(a.input.as_deref(), a.format, a.max_line_bytes).and_then(|input| {
            let opts = CheckOptions {
                batch_rows: a.batch_rows,
                schema_version: a.schema_version.clone(),
                max_errors: a.max_errors,
            };
            Ok((input.format(), check(&input, &opts)?))
        });
    match result {
        Ok((format, report)) => {
            if a.json {
                let mut v = serde_json::to_value(&report)
                    .map_err(|e| crate::base::error::Error::Internal(e.to_string()))?;
                v["valid"] = json!(true);
                v["format"] = json!(format.flag());
                out_raw(&json_line(&v)?)?;
            } else {
                out_raw(&summary(&report))?;
            }
            Ok(0)
        }
        Err(e) => {
            if a.json {
                // Every outcome is one JSON object, also when the input could not be read
                // at all: `checked: false` tells that apart from an input found invalid.
                let v = refusal_json(&e).unwrap_or_else(|| {
                    json!({
                        "valid": false,
                        "checked": false,
                        "error_count": 1,
                        "errors": [{"line": null, "row": null, "field": null, "value": null, "reason": e.to_string()}],
                        "hint": null,
                    })
                });
                out_raw(&json_line(&v)?)?;
            } else if e.rejection().is_none() && e.kind() != crate::base::error::ErrorKind::Input {
                out(&format!("not checked: {e}"))?;
            } else if let Some(r) = e.rejection() {
                out(&format!(
                    "invalid: {} (listed on standard error{}); an append would publish nothing",
                    plural(r.total, "error", "errors"),
                    if r.total > r.errors.len() as u64 {
                        format!(", the first {}; --max-errors 0 lists all", r.errors.len())
                    } else {
                        String::new()
                    }
                ))?;
            }
            Err(e)
        }
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn summary(r: &CheckReport) -> String {
    if r.rows == 0 {
        return "valid: the input holds no events (an append would do nothing)".into();
    }
    let mut lines = vec![format!(
        "valid: {}, contract {}; an append with --batch-rows {} would make {} in {}:",
        plural(r.rows, "row", "rows"),
        r.schema_version,
        r.batch_rows,
        plural(r.flushes, "commit", "commits"),
        plural(r.partitions.len() as u64, "partition", "partitions"),
    )];
    for p in r.partitions.iter().take(PARTITIONS_SHOWN) {
        lines.push(format!(
            "  run_id={} target_crs={}: {}, {}",
            p.run_id,
            p.target_crs,
            plural(p.rows, "row", "rows"),
            plural(p.flushes, "commit", "commits")
        ));
    }
    if r.partitions.len() > PARTITIONS_SHOWN {
        lines.push(format!(
            "  … and {} more partitions (--json lists every one)",
            r.partitions.len() - PARTITIONS_SHOWN
        ));
    }
    lines.join("\n")
}

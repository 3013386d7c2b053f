//! `lineage check`: validate an input exactly as `append` would, without a store, and say
//! what the append would do (see [`crate::write::check`]). Exit 0 valid, 2 refused (every
//! error listed on standard error, as `append` lists them) or not readable (standard output
//! then says `not checked:`, and `--json` has `"checked": false`).

use serde_json::json;

use crate::base::error::Result;
use crate::base::limits::DEFAULT_MAX_PAGE_BYTES;
use crate::cli::common::{json_line, out, out_raw, refusal_json, InputArgs, Status};
use crate::write::check::{check, CheckOptions, CheckReport};

/// Partitions the text summary lists (all of them with `--json`).
const PARTITIONS_SHOWN: usize = 20;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What an append would read, and how.
    #[command(flatten)]
    input: InputArgs,
    /// The result as one JSON object on standard output (`valid`, and the summary, or
    /// `errors`: each with `line`, `row`, `field`, `value`, `reason`).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: Args) -> Result<Status> {
    let i = &a.input;
    let result = i.open(DEFAULT_MAX_PAGE_BYTES).and_then(|input| {
        let opts = CheckOptions {
            batch_rows: i.batch_rows,
            schema_version: i.schema_version.clone(),
            max_errors: i.max_errors,
        };
        Ok((input.format(), check(&input, &opts)?))
    });
    match result {
        Ok((format, report)) => {
            if a.json {
                let mut v = serde_json::to_value(&report)
                    .map_err(crate::base::error::Error::internal_from)?;
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

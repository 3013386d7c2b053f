//! `lineage compact`: merge sealed small parts into large ones, every row accounted for in
//! a compaction record, and seal them (see [`crate::compact`]).

use crate::base::clock::{SystemClock, V7Ids};
use crate::base::error::Result;
use crate::cli::common::{json_line, out, SigningArgs, Status, StoreArg};
use crate::compact::{compact, CompactOptions, DEFAULT_MIN_PARTS};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Only this run's commits.
    #[arg(long, value_name = "RUN_ID")]
    run_id: Option<String>,
    /// Rows per compacted part, about: whole source parts are merged until a part holds at
    /// least this many.
    #[arg(long, value_name = "N", default_value_t = crate::write::flush::DEFAULT_BATCH_ROWS)]
    target_rows: usize,
    /// Leave a partition alone while it has fewer uncompacted sealed parts than this.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_MIN_PARTS)]
    min_parts: usize,
    /// Print the plan; publish nothing.
    #[arg(long)]
    dry_run: bool,
    /// How the seal that puts the compactions into effect is signed.
    #[command(flatten)]
    signing: SigningArgs,
    /// Write a Delta checkpoint for the compaction's table version
    /// (`_delta_log/<N>.checkpoint.parquet`): Delta readers then skip the log's adds and
    /// removes; a `**/*.parquet` glob of the store reads it as data.
    #[arg(long)]
    delta_checkpoint: bool,
    /// Make the compaction's seal an Iceberg snapshot too (as `seal --iceberg`).
    #[arg(long)]
    iceberg: bool,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let key = a.signing.key(&a.store.store)?;
    let store = a.store.open(Opening::ExistingStore).await?;
    let opts = CompactOptions {
        run_id: a.run_id,
        target_rows: a.target_rows,
        min_parts: a.min_parts,
        dry_run: a.dry_run,
        allow_unsigned: a.signing.unsigned,
        delta_checkpoint: a.delta_checkpoint,
        iceberg: a.iceberg,
    };
    let o = compact(store, &SystemClock, &V7Ids, key.as_ref(), &opts).await?;
    if a.json {
        out(&json_line(&o)?)?;
        return Ok(0);
    }
    if o.compactions.is_empty() {
        out(&format!(
            "nothing to compact as of seal {}: no partition has {} or more uncompacted sealed parts to merge",
            o.as_of_seal,
            opts.min_parts.max(2)
        ))?;
        return Ok(0);
    }
    for c in &o.compactions {
        out(&format!(
            "{} {} commits, {} rows, {} bytes of run_id={} target_crs={}{}",
            if o.dry_run {
                "would compact"
            } else {
                "compacted"
            },
            c.commits.len(),
            c.rows,
            c.source_bytes,
            c.run_id,
            c.target_crs,
            match (&c.part_path, c.size_bytes) {
                (Some(p), Some(n)) => format!(" into {p} ({n} bytes)"),
                _ => String::new(),
            }
        ))?;
    }
    if let Some(s) = &o.seal {
        out(&format!(
            "sealed {}: seal {} puts {} compactions into effect (Delta version {}) and adds {} commits",
            s.key,
            s.seq,
            o.compactions.len(),
            s.seq,
            s.added
        ))?;
        out(&format!("head {}", s.head))?;
    }
    Ok(0)
}

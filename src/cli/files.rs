//! `lineage files`: one line per part of exactly the commits sealed up to a seal, each
//! part checked against its sealed pointer first (nothing is printed unless every part
//! checks out): paths or URLs for DuckDB's `read_parquet([...])`, Polars, pyarrow; with
//! `--iceberg`, the newest Iceberg metadata file's location instead.

use std::io::Write;

use crate::base::error::{Error, Result};
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::cli::scan::ReadArgs;
use crate::history::iceberg::locate::newest_table;
use crate::publish::store::options::Opening;
use crate::read::listing::part_listing;
use crate::read::scan::check_all;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    /// One JSON object per part: location, part_path, commit_id, run_id, target_crs, rows,
    /// size_bytes, sha256, blake3, committed_utc, sealed_by (seal sequence, or null),
    /// adopted (its commit, or one of a compacted part's, was adopted by `lineage
    /// repair`), compaction (a compacted part: its id, record, seal and time, and the
    /// original commits of its rows, each with its seal and `adopted`; its commit_id is
    /// then null), writer_key_id (the writer key whose signature the part's footer
    /// carries, as its sealed pointer records it; null for an unsigned part: `verify`
    /// checks the signature holds).
    #[arg(long)]
    json: bool,
    /// Print the Iceberg table instead of the parts: the location of the newest metadata
    /// file (`seal --iceberg`) of a seal at or before the one read, once every part of
    /// that seal checks out (`--json`: {"seq", "metadata_key", "metadata_location"}).
    /// The table is the whole store's: no --run-id, --target-crs, --include-unsealed or
    /// --originals, no --since-seal.
    #[arg(long, conflicts_with_all = ["run_id", "target_crs", "include_unsealed", "originals", "since_seal"])]
    iceberg: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::Store).await?;
    let read = a.read.resolve(store.as_ref()).await?;
    let (snap, checked) = a.anchors.read(store.as_ref(), &read).await?;
    check_all(store.as_ref(), &snap, a.read.digest, a.read.concurrency).await?;
    if a.iceberg {
        let seq = snap.seal.as_ref().map_or(0, |s| s.seq);
        let t = newest_table(store.as_ref(), seq).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "no Iceberg metadata of a seal at or before seal {seq}: the store was sealed without --iceberg (`lineage seal --iceberg` writes every seal's)"
            ))
        })?;
        if a.json {
            out_raw(&json_line(&t)?)?;
        } else {
            out(&t.metadata_location)?;
        }
        a.read.say(&snap, None, &checked);
        let gap = match seq - t.seq {
            0 => String::new(),
            1 => format!("; seal {seq} was made without --iceberg"),
            _ => format!("; seals {}-{seq} were made without --iceberg", t.seq + 1),
        };
        let _ = writeln!(
            std::io::stderr(),
            "the Iceberg table as of seal {}{gap}",
            t.seq
        );
        return Ok(0);
    }
    for p in &snap.parts {
        let line = part_listing(store.as_ref(), p);
        if a.json {
            out_raw(&json_line(&line)?)?;
        } else {
            out(&line.location)?;
        }
    }
    a.read.say(&snap, None, &checked);
    Ok(0)
}

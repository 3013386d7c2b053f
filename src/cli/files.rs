//! `lineage files`: one line per part of exactly the commits sealed up to a seal, each
//! part checked against its sealed pointer first (nothing is printed unless every part
//! checks out): paths or URLs for DuckDB's `read_parquet([...])`, Polars, pyarrow.

use serde::Serialize;

use crate::base::error::Result;
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::cli::scan::ReadArgs;
use crate::publish::store::options::Opening;
use crate::read::location::part_location;
use crate::read::scan::check_all;
use crate::read::snapshot::snapshot;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    /// One JSON object per part: location, part_path, commit_id, run_id, target_crs, rows,
    /// size_bytes, sha256, blake3, committed_utc, sealed_by (seal sequence, or null).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Line<'a> {
    location: String,
    part_path: &'a str,
    commit_id: &'a str,
    run_id: &'a str,
    target_crs: &'a str,
    rows: u64,
    size_bytes: u64,
    sha256: &'a str,
    blake3: Option<&'a str>,
    committed_utc: &'a str,
    pointer: &'a str,
    sealed_by: Option<u64>,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::Store).await?;
    a.anchors.require(store.as_ref()).await?;
    let snap = snapshot(store.as_ref(), &a.read.resolve(store.as_ref()).await?).await?;
    check_all(store.as_ref(), &snap, a.read.digest, a.read.concurrency).await?;
    for p in &snap.parts {
        let location = part_location(store.as_ref(), &p.pointer.part_path);
        if a.json {
            let q = &p.pointer;
            out_raw(&json_line(&Line {
                location,
                part_path: &q.part_path,
                commit_id: &q.commit_id,
                run_id: &q.run_id,
                target_crs: &q.target_crs,
                rows: q.row_count,
                size_bytes: q.size_bytes,
                sha256: &q.sha256,
                blake3: q.blake3.as_deref(),
                committed_utc: &q.committed_utc,
                pointer: &p.pointer_key,
                sealed_by: p.sealed_by.as_ref().map(|s| s.seq),
            })?)?;
        } else {
            out(&location)?;
        }
    }
    a.read.say(&snap, None);
    Ok(0)
}

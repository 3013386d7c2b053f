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
use crate::read::snapshot::{snapshot, SnapshotPart};

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
    /// compaction (a compacted part: its id, record, seal and time, and the original
    /// commits of its rows, each with its seal; its commit_id is then null),
    /// writer_key_id (the writer key whose signature the part's footer carries, as its
    /// sealed pointer records it; null for an unsigned part: `verify` checks the
    /// signature holds).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Line<'a> {
    location: String,
    part_path: &'a str,
    commit_id: Option<&'a str>,
    run_id: &'a str,
    target_crs: &'a str,
    rows: u64,
    size_bytes: u64,
    sha256: &'a str,
    blake3: Option<&'a str>,
    committed_utc: &'a str,
    pointer: &'a str,
    sealed_by: Option<u64>,
    writer_key_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compaction: Option<CompactionLine<'a>>,
}

/// A compacted part's provenance: the compaction, and the commits its rows are of.
#[derive(Serialize)]
struct CompactionLine<'a> {
    compaction_id: &'a str,
    record: &'a str,
    compacted_utc: &'a str,
    sealed_by: u64,
    commits: Vec<CommitLine<'a>>,
}

#[derive(Serialize)]
struct CommitLine<'a> {
    commit_id: &'a str,
    committed_utc: &'a str,
    sealed_by: u64,
    rows: u64,
}

/// The JSON line of part `p` at `location`. A compacted part has no commit id of its own;
/// its `committed_utc` and `sealed_by` are those of the newest original commit of its rows.
fn line(p: &SnapshotPart, location: String) -> Line<'_> {
    let q = &p.pointer;
    let compaction = p.compacted.as_ref().map(|c| CompactionLine {
        compaction_id: &c.compaction_id,
        record: &c.record,
        compacted_utc: &c.compacted_utc,
        sealed_by: c.sealed_by.seq,
        commits: c
            .commits
            .iter()
            .map(|o| CommitLine {
                commit_id: &o.commit_id,
                committed_utc: &o.committed_utc,
                sealed_by: o.sealed_by,
                rows: o.rows,
            })
            .collect(),
    });
    let newest = p.compacted.as_ref().and_then(|c| {
        c.commits
            .iter()
            .max_by(|a, b| a.committed_utc.cmp(&b.committed_utc))
    });
    Line {
        location,
        part_path: &q.part_path,
        commit_id: p.compacted.is_none().then_some(q.commit_id.as_str()),
        run_id: &q.run_id,
        target_crs: &q.target_crs,
        rows: q.row_count,
        size_bytes: q.size_bytes,
        sha256: &q.sha256,
        blake3: q.blake3.as_deref(),
        committed_utc: newest.map_or(q.committed_utc.as_str(), |o| o.committed_utc.as_str()),
        pointer: &p.pointer_key,
        sealed_by: match &p.compacted {
            Some(c) => c.commits.iter().map(|o| o.sealed_by).max(),
            None => p.sealed_by.as_ref().map(|s| s.seq),
        },
        writer_key_id: q.writer.as_ref().and_then(|w| w.writer_key_id.as_deref()),
        compaction,
    }
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::Store).await?;
    a.anchors.require(store.as_ref()).await?;
    let snap = snapshot(store.as_ref(), &a.read.resolve(store.as_ref()).await?).await?;
    check_all(store.as_ref(), &snap, a.read.digest, a.read.concurrency).await?;
    for p in &snap.parts {
        let location = part_location(store.as_ref(), &p.pointer.part_path);
        if a.json {
            out_raw(&json_line(&line(p, location))?)?;
        } else {
            out(&location)?;
        }
    }
    a.read.say(&snap, None);
    Ok(0)
}

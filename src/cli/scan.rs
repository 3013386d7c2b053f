//! `lineage scan`: the rows of a store as of a seal, every part checked against its
//! sealed pointer while it is read; any part that fails stops the scan (exit 1, naming
//! it) and no `--out` file is created.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::audit::anchor_outcome::AnchorKind;
use crate::audit::anchors::AnchorCheck;
use crate::base::error::{Error, Result};
use crate::cli::common::{Status, StoreArg, STDOUT};
use crate::publish::store::options::Opening;
use crate::read::scan::{default_concurrency, scan, ScanOptions, ScanStats};
use crate::read::snapshot::{ReadOptions, SealRange, Snapshot};

/// What `files` and `scan` read.
#[derive(Debug, clap::Args)]
pub(crate) struct ReadArgs {
    /// Read the store as of seal SEQ: the commits sealed by seals 1..SEQ (default: the
    /// newest seal).
    #[arg(long, value_name = "SEQ")]
    as_of_seal: Option<u64>,
    /// Read the store as of the newest seal sealed at or before T (RFC 3339, or a date:
    /// the end of that day, UTC).
    #[arg(long, value_name = "T", conflicts_with = "as_of_seal")]
    as_of_time: Option<String>,
    /// Only the commits sealed after seal K (by seals K+1 up to the seal read), reading
    /// only seals K on: O(new seals), however large the seals before K. The anchors are
    /// checked against those seals: an --expect-head must be the head of one of them (the
    /// one recorded when seal K was read); no --witness. Reads the original parts.
    #[arg(long, value_name = "K", conflicts_with = "as_of_time")]
    since_seal: Option<u64>,
    /// Only this run.
    #[arg(long)]
    run_id: Option<String>,
    /// Only this target CRS.
    #[arg(long, value_name = "CRS")]
    target_crs: Option<String>,
    /// Also the commits no seal covers yet, each checked against its own pointer only
    /// (said so on standard error).
    #[arg(long)]
    include_unsealed: bool,
    /// Read the original parts even where a compaction in effect covers them (default:
    /// the compacted parts, each checked against its compaction record).
    #[arg(long)]
    originals: bool,
    /// Which digests of each part to recompute: `fastest` (BLAKE3 where the pointer
    /// records one, else sha256) or `all`.
    #[arg(long, value_name = "WHICH", default_value = "fastest")]
    pub(crate) digest: crate::base::digest::Check,
    /// Parts read at once (each held whole while it is checked).
    #[arg(long, value_name = "N", default_value_t = default_concurrency())]
    pub(crate) concurrency: usize,
}

impl ReadArgs {
    pub(crate) fn options(&self) -> ReadOptions {
        ReadOptions {
            as_of_seal: self.as_of_seal,
            run_id: self.run_id.clone(),
            target_crs: self.target_crs.clone(),
            include_unsealed: self.include_unsealed,
            prefer_compacted: !self.originals,
            since_seal: self.since_seal,
        }
    }

    /// [`Self::options`], with `--as-of-time` turned into its seal.
    pub(crate) async fn resolve(
        &self,
        store: &dyn crate::publish::AtomicPublisher,
    ) -> Result<ReadOptions> {
        let mut o = self.options();
        if let Some(t) = &self.as_of_time {
            o.as_of_seal = Some(crate::read::as_of::seal_as_of_time(store, t).await?);
        }
        Ok(o)
    }

    /// What was read, on standard error (`checked`: the anchors, as they held).
    pub(crate) fn say(&self, snap: &Snapshot, stats: Option<&ScanStats>, checked: &AnchorCheck) {
        let mut seal = match &snap.seal {
            Some(s) => format!(
                "as of seal {} (sha256 {}, {} commits sealed)",
                s.seq, s.sha256, s.tree_size
            ),
            None => "no seal".into(),
        };
        if let Some(r) = &snap.since {
            seal = format!(
                "{}, {seal}; {}",
                sealed_since(r),
                range_evidence(r, checked)
            );
        }
        let mut line = format!(
            "{} parts ({} rows, {} bytes) checked against their pointers, {seal}",
            snap.parts.len(),
            snap.rows(),
            snap.bytes()
        );
        if let Some(st) = stats {
            line = format!(
                "{} parts read and checked ({} bytes), {} skipped by footer statistics or bloom filters (digest-checked), {} rows, {seal}",
                st.parts_read.load(Ordering::Relaxed),
                st.bytes_read.load(Ordering::Relaxed),
                st.parts_skipped.load(Ordering::Relaxed),
                st.rows.load(Ordering::Relaxed),
            );
            let unrecorded = st.parts_unrecorded.load(Ordering::Relaxed);
            if unrecorded > 0 {
                line.push_str(&format!(
                    "; {unrecorded} of the parts read were read whole because their pointers \
                     record no digest of their footer and filters (written before pruning \
                     checked them)"
                ));
            }
        }
        let unsealed = snap.unsealed();
        if unsealed > 0 {
            line.push_str(&format!(
                "; {unsealed} of them unsealed (checked against their own pointers only: no seal vouches for them)"
            ));
        }
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    /// Only the rows of this feature_id; parts whose footer statistics or bloom filter
    /// rule it out are skipped unread.
    #[arg(long, value_name = "F")]
    feature_id: Option<String>,
    /// With --feature-id: read and check every part anyway (the parts skipped otherwise
    /// are judged by their footers and bloom filters, which no digest is checked over).
    #[arg(long, requires = "feature_id")]
    no_prune: bool,
    /// Add each row's provenance: commit_id, sealed_by_seal (the seal that sealed the
    /// commit), part_path and adopted (true when `lineage repair` adopted the commit).
    /// Reads the original parts (implies --originals), so a compacted row keeps its
    /// original commit and seal.
    #[arg(long)]
    with_provenance: bool,
    /// Only these columns, in this order (comma-separated).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Where to write the rows: the extension names the format (.parquet, .arrow,
    /// .ndjson, .csv); `-`: an Arrow IPC stream on standard output.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let to_stdout = a.out.as_os_str() == "-";
    if !to_stdout {
        crate::read::out::OutFormat::of_path(&a.out)?;
    }
    let store = a.store.open(Opening::Store).await?;
    let mut read = a.read.resolve(store.as_ref()).await?;
    read.prefer_compacted &= !a.with_provenance;
    let (snap, checked) = a.anchors.read(store.as_ref(), &read).await?;
    let opts = ScanOptions {
        provenance: a.with_provenance,
        columns: a.columns.clone(),
        feature_id: a.feature_id.clone(),
        prune: !a.no_prune,
        digest: a.read.digest,
        concurrency: a.read.concurrency,
    };
    if !to_stdout {
        // A file: `.parquet` of every column and row by copying column chunks, else decoded.
        let (_, stats) = crate::read::out::scan_to_file(store, &snap, &opts, &a.out).await?;
        a.read.say(&snap, Some(&stats), &checked);
        return Ok(0);
    }
    let s = scan(store, &snap, &opts)?;
    let stats: Arc<ScanStats> = s.stats();
    let w = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout());
    crate::read::out::write_stream(s, w)
        .await
        .map_err(|e| match e {
            Error::Io { source, .. } => Error::io(STDOUT, source),
            e => e,
        })?;
    a.read.say(&snap, Some(&stats), &checked);
    Ok(0)
}

/// Which commits a read since a seal selected from.
fn sealed_since(r: &SealRange) -> String {
    match r.to - r.from {
        0 => format!(
            "of those sealed after seal {}: none (it is the seal read)",
            r.from
        ),
        1 => format!("of those sealed by seal {}", r.to),
        _ => format!("of those sealed by seals {}-{}", r.from + 1, r.to),
    }
}

/// What a read since a seal checked, and what vouches for the seals it did not read.
fn range_evidence(r: &SealRange, checked: &AnchorCheck) -> String {
    let read = match r.from == r.to {
        true => format!("seal {} read and checked", r.from),
        false => format!("seals {}-{} read and checked", r.from, r.to),
    };
    if r.from == 1 {
        return read;
    }
    let digest = r.seals.first().map_or("", |s| s.digest.as_str());
    let anchor = checked
        .outcomes
        .iter()
        .find(|o| {
            o.held
                && (o.anchor == AnchorKind::Head
                    || (o.anchor == AnchorKind::Witness
                        && o.statement.contains(crate::witness::RANGE_HELD)))
        })
        .map_or("no anchor".to_string(), |o| o.statement.clone());
    let before = match r.from {
        2 => "seal 1".to_string(),
        k => format!("seals 1-{}", k - 1),
    };
    format!(
        "{read}; {before} not re-read: vouched for by seal {}'s digest {digest} ({anchor})",
        r.from
    )
}

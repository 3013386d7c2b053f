//! Lineage out to the tools people read it in: OpenLineage run events ([`openlineage`],
//! posted with [`post`]) and ISO 19115-3 / ISO 19139 lineage metadata ([`iso19115`]).
//!
//! Both start from one [`Snapshot`] of the store, read through the trusted read path
//! ([`crate::read`]): the commits the newest seal covers (each pointer the bytes its seal
//! recorded) and those not sealed yet, of one run or every run, and per commit the counts
//! that only the part's rows hold (outcomes, rejection reasons, source CRSs, tools,
//! event-time range per stage), counted from the part's bytes after they were checked
//! against its pointer ([`crate::parts::scan`]). Export ids (OpenLineage run ids, ISO
//! metadata identifiers) include the store's identity.
//!
//! Everything an export writes is a function of the store's content: re-exporting an
//! unchanged store gives the same bytes, so a re-post after a failure is safe.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};

use crate::base::digest::Check as DigestCheck;
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::format::pointer::Pointer;
use crate::history::identity::read_identity;
use crate::history::pointers::commit_order;
use crate::publish::AtomicPublisher;
use crate::read::scan::fetch_checked;
use crate::read::snapshot::types::SnapshotPart;
use crate::read::snapshot::ReadOptions;

pub mod catalogue;
pub mod iso19115;
mod iso19115_lineage;
mod iso19115_parts;
mod iso19139;
pub mod openlineage;
pub mod post;
pub(crate) mod record;
mod xml;

pub use crate::parts::scan::{PartStats, StageStats};

/// Parts scanned at once: each holds at most one row group's projected column chunks.
const SCAN_CONCURRENCY: usize = 4;

pub use crate::read::SealRef;

/// The newest seal at export time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Its sequence number.
    pub seq: u64,
    /// Its digest (the head digest).
    pub sha256: String,
    /// Commits it covers.
    pub tree_size: u64,
}

/// One commit with what the export says about it.
#[derive(Debug, Clone)]
pub struct ExportedCommit {
    /// The pointer.
    pub pointer: Pointer,
    /// sha256 of the pointer's stored bytes (the Merkle leaf data).
    pub pointer_sha256: String,
    /// The seal that added it, when sealed.
    pub sealed_by: Option<SealRef>,
    /// What its rows say.
    pub stats: PartStats,
}

/// The commits of one run, in commit order.
#[derive(Debug, Clone)]
pub struct RunExport {
    /// The store's `run_id`.
    pub run_id: String,
    /// Its exported commits.
    pub commits: Vec<ExportedCommit>,
}

impl RunExport {
    /// The seal that covers every commit of this run, when all are sealed: the newest of
    /// the seals that added them (a seal's root covers every commit before it).
    pub fn covering_seal(&self) -> Option<&SealRef> {
        let mut newest: Option<&SealRef> = None;
        for c in &self.commits {
            let s = c.sealed_by.as_ref()?;
            if newest.is_none_or(|n| s.seq > n.seq) {
                newest = Some(s);
            }
        }
        newest
    }

    /// Commits not sealed yet.
    pub fn unsealed(&self) -> usize {
        self.commits
            .iter()
            .filter(|c| c.sealed_by.is_none())
            .count()
    }

    /// Latest `committed_utc` (RFC 3339 strings of one format compare as times).
    pub fn last_committed(&self) -> &str {
        self.commits
            .iter()
            .map(|c| c.pointer.committed_utc.as_str())
            .max()
            .unwrap_or("")
    }

    /// The run's statistics per target CRS, then per stage.
    pub fn by_target(&self) -> BTreeMap<&str, Vec<&ExportedCommit>> {
        let mut out: BTreeMap<&str, Vec<&ExportedCommit>> = BTreeMap::new();
        for c in &self.commits {
            out.entry(c.pointer.target_crs.as_str())
                .or_default()
                .push(c);
        }
        out
    }
}

/// Which commits to export.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only this run.
    pub run_id: Option<String>,
    /// Only commits sealed by a seal newer than this sequence number.
    pub since_seal: Option<u64>,
    /// As of this seal: only the commits seals 1..=N sealed (default: the newest seal,
    /// and the commits not sealed yet).
    pub as_of_seal: Option<u64>,
}

/// What an export reads from a store.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The store URL as given (names the datasets).
    pub store_url: String,
    /// The store's identity (`_lineage/store.json`), part of every export id; `None` for
    /// a store written before identities and not appended to since.
    pub store_id: Option<String>,
    /// Runs in the order of their first commit.
    pub runs: Vec<RunExport>,
    /// The newest seal, if any.
    pub head: Option<Head>,
}

/// Refuse (an [`Error::Integrity`] naming each version, exit 1) a store whose Delta
/// versions do not say what its seals say: Delta readers would read other rows than the
/// export describes.
async fn delta_agrees(store: &dyn AtomicPublisher) -> Result<()> {
    refuse_disagreeing(crate::audit::verify::versions_agree(store).await?)
}

/// [`delta_agrees`] for the Delta versions of `seals` only (a read since a seal).
async fn delta_agrees_since(
    store: &dyn AtomicPublisher,
    seals: &[crate::history::seal::StoredSeal],
) -> Result<()> {
    refuse_disagreeing(crate::audit::verify::versions_agree_since(store, seals).await?)
}

/// An [`Error::Integrity`] naming each version of `problems`, or nothing.
fn refuse_disagreeing(problems: Vec<crate::audit::findings::Problem>) -> Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Integrity(
        problems
            .into_iter()
            .map(|p| {
                crate::base::error::Failed::new(
                    p.key,
                    format!(
                        "{} (Delta readers would read other rows than this export describes)",
                        p.detail
                    ),
                )
            })
            .collect(),
    ))
}

/// Read what an export needs, through the trusted read path ([`crate::read`]): the
/// commits sealed by the newest seal (each pointer the bytes its seal recorded) and those
/// not sealed yet (reported as such), every part fetched once and checked against its
/// pointer before its rows are counted. Refuses, naming every object, a seal chain that
/// does not hold, a sealed pointer missing or changed, and a part that is missing, of
/// another size or digest: an export never cites a seal for records the seal does not
/// prove, nor counts rows no pointer vouches for.
pub async fn collect(
    store: &dyn AtomicPublisher,
    store_url: &str,
    sel: &Selection,
) -> Result<Snapshot> {
    let read = crate::read::snapshot(store, &read_options(sel)).await?;
    collect_read(store, store_url, sel, read).await
}

/// What [`collect`] reads for `sel`: with `since_seal` K ≥ 1, only the commits seals
/// K+1..N sealed, reading seals K..N only ([`ReadOptions::since_seal`]); otherwise the
/// read as of the seal asked for (the newest, and the commits not sealed yet).
pub fn read_options(sel: &Selection) -> ReadOptions {
    let since = sel.since_seal.filter(|k| *k > 0);
    ReadOptions {
        run_id: sel.run_id.clone(),
        as_of_seal: sel.as_of_seal,
        include_unsealed: sel.as_of_seal.is_none() && since.is_none(),
        since_seal: since,
        ..ReadOptions::default()
    }
}

/// [`collect`] from a read already made with [`read_options`] (a front end that checked
/// its anchors on that read): the Delta versions of the seals it read checked against
/// them (all seals for a full read, K..N for a read since K), every selected part checked.
pub async fn collect_read(
    store: &dyn AtomicPublisher,
    store_url: &str,
    sel: &Selection,
    read: crate::read::Snapshot,
) -> Result<Snapshot> {
    match &read.since {
        Some(range) => delta_agrees_since(store, &range.seals).await?,
        None => delta_agrees(store).await?,
    }
    let head = read.seal.as_ref().map(|s| Head {
        seq: s.seq,
        sha256: s.sha256.clone(),
        tree_size: s.tree_size,
    });
    if let Some(s) = sel.since_seal {
        let newest = head.as_ref().map_or(0, |h| h.seq);
        if s > newest {
            return Err(Error::invalid(
                Param::SinceSeal,
                text![format!("{s}: the newest seal is {newest}")],
            ));
        }
    }
    let selected: Vec<SnapshotPart> = read
        .parts
        .into_iter()
        .filter(|p| match (sel.since_seal, &p.sealed_by) {
            (None, _) => true,
            (Some(s), Some(by)) => by.seq > s,
            (Some(_), None) => false,
        })
        .collect();
    if let (Some(r), true) = (&sel.run_id, selected.is_empty()) {
        return Err(match sel.since_seal {
            None => Error::NotFound(format!("no commits of run_id {r}")),
            Some(s) => Error::NotFound(format!("no commits of run_id {r} sealed after seal {s}")),
        });
    }
    let commits = check_parts(store, selected).await?;
    let runs = group_runs(commits);
    Ok(Snapshot {
        store_url: canonical_store_url(store_url),
        store_id: read_identity(store).await?.map(|i| i.store_id),
        runs,
        head,
    })
}

/// Fetch every selected part, check it against its pointer and take its statistics;
/// every part that fails is named together.
async fn check_parts(
    store: &dyn AtomicPublisher,
    selected: Vec<SnapshotPart>,
) -> Result<Vec<ExportedCommit>> {
    let checked: Vec<std::result::Result<ExportedCommit, Vec<Failed>>> =
        futures::stream::iter(selected.into_iter().map(|p| async move {
            let bytes = match fetch_checked(store, &p, DigestCheck::Fastest).await {
                Ok(b) => b,
                Err(Error::Integrity(f)) => return Ok(Err(f)),
                Err(e) => return Err(e),
            };
            let key = p.pointer.part_path.clone();
            let limits = store.read_limits();
            let stats =
                crate::base::pool::run(move || crate::parts::scan::part_stats(&key, bytes, limits))
                    .await??;
            Ok::<_, Error>(Ok(ExportedCommit {
                pointer: p.pointer,
                pointer_sha256: p.pointer_sha256,
                sealed_by: p.sealed_by,
                stats,
            }))
        }))
        .buffered(SCAN_CONCURRENCY)
        .try_collect()
        .await?;
    let mut failed = Vec::new();
    let mut commits = Vec::new();
    for c in checked {
        match c {
            Ok(c) => commits.push(c),
            Err(f) => failed.extend(f),
        }
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    Ok(commits)
}

/// Runs in the order of their first commit, commits in commit order within a run.
fn group_runs(mut commits: Vec<ExportedCommit>) -> Vec<RunExport> {
    commits.sort_by(|a, b| commit_order(&a.pointer, &b.pointer));
    let mut runs: Vec<RunExport> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for c in commits {
        let i = *index.entry(c.pointer.run_id.clone()).or_insert_with(|| {
            runs.push(RunExport {
                run_id: c.pointer.run_id.clone(),
                commits: Vec::new(),
            });
            runs.len() - 1
        });
        runs[i].commits.push(c);
    }
    runs
}

/// Merge the statistics of several commits, per stage.
pub fn merge_stats<'a>(commits: impl IntoIterator<Item = &'a ExportedCommit>) -> PartStats {
    let mut out = PartStats::default();
    for c in commits {
        out.merge(&c.stats);
    }
    out
}

/// The store URL as exports name it: a local path becomes `file://` + its absolute path
/// (so the name does not depend on the directory the export ran in); a URL is kept.
pub fn canonical_store_url(url: &str) -> String {
    let url = url.trim();
    if url.contains("://") || url == "memory:" {
        return url.to_string();
    }
    let abs = std::path::absolute(url).unwrap_or_else(|_| url.into());
    format!("file://{}", abs.to_string_lossy())
}

/// `(namespace, name)` of the dataset of one partition, following OpenLineage's naming
/// conventions: an object store's namespace is its scheme and bucket (`s3://bucket`,
/// `gs://bucket`, `az://container`, `https://account.blob.core.windows.net`) and the name
/// the path inside it; a local store's namespace is `file` and the name its absolute path.
pub fn dataset_id(store_url: &str, run_id: &str, target_crs: &str) -> (String, String) {
    let partition = format!("run_id={run_id}/target_crs={target_crs}");
    let join = |base: &str| {
        let base = base.trim_matches('/');
        if base.is_empty() {
            partition.clone()
        } else {
            format!("{base}/{partition}")
        }
    };
    let url = store_url.trim();
    if url == "memory://" || url == "memory:" {
        return ("memory".into(), partition);
    }
    if let Some(path) = url.strip_prefix("file://") {
        return ("file".into(), format!("/{}", join(path)));
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        return (
            format!("{}://{authority}", scheme.to_ascii_lowercase()),
            join(path),
        );
    }
    dataset_id(&canonical_store_url(url), run_id, target_crs)
}

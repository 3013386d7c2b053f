//! Lineage out to the tools people read it in: OpenLineage run events ([`openlineage`],
//! posted with [`post`]) and ISO 19115-3 / ISO 19139 lineage metadata ([`iso19115`]).
//!
//! Both start from one [`Snapshot`] of the store: the commit pointers (of one run, or
//! every run), the seal that covers each commit (checked against the pointer's exact
//! bytes), and per commit the counts that only the part's rows hold (outcomes, rejection
//! reasons, source CRSs, tools, event-time range per stage), read column by column, one
//! row group at a time ([`crate::parts::scan`]), never a whole part.
//!
//! Everything an export writes is a function of the store's content: re-exporting an
//! unchanged store gives the same bytes, so a re-post after a failure is safe.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};

use crate::audit::chain::{self, Chain};
use crate::base::error::{Error, Result};
use crate::format::pointer::Pointer;
use crate::history::pointers::{read_stored_pointers, StoredPointer};
use crate::publish::AtomicPublisher;

pub mod iso19115;
mod iso19139;
pub mod openlineage;
pub mod post;
mod record;
mod xml;

pub use crate::parts::scan::{PartStats, StageStats};

/// Parts scanned at once: each holds at most one row group's projected column chunks.
const SCAN_CONCURRENCY: usize = 4;

/// The seal that added a commit to the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealRef {
    /// Its sequence number.
    pub seq: u64,
    /// sha256 of its exact bytes: a head digest under which the commit can be proven.
    pub sha256: String,
}

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

/// The commits of one run, in commit-id order.
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
}

/// What an export reads from a store.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The store URL as given (names the datasets).
    pub store_url: String,
    /// Runs in the order of their first commit.
    pub runs: Vec<RunExport>,
    /// The newest seal, if any.
    pub head: Option<Head>,
}

/// Read what an export needs. Refuses a seal chain that does not verify, and a pointer
/// whose bytes differ from what its seal recorded: an export never cites a seal for
/// records the seal does not prove (`lineage verify` names the problem).
pub async fn collect(
    store: &dyn AtomicPublisher,
    store_url: &str,
    sel: &Selection,
) -> Result<Snapshot> {
    let chain = chain::walk(store, None).await?;
    if let Some(p) = chain.problems.first() {
        return Err(Error::Corrupt {
            what: "seal chain",
            key: p.key.clone(),
            message: format!(
                "{}; nothing is exported from a chain that does not verify (run `lineage verify`)",
                p.detail
            ),
        });
    }
    let head = head_of(&chain);
    if let Some(s) = sel.since_seal {
        let newest = head.as_ref().map_or(0, |h| h.seq);
        if s > newest {
            return Err(Error::Usage(format!(
                "--since-seal {s}: the newest seal is {newest}"
            )));
        }
    }
    let mut selected = Vec::new();
    for sp in read_stored_pointers(store, sel.run_id.as_deref()).await? {
        let sealed_by = sealed_by(&chain, &sp)?;
        let keep = match (sel.since_seal, &sealed_by) {
            (None, _) => true,
            (Some(s), Some(by)) => by.seq > s,
            (Some(_), None) => false,
        };
        if keep {
            selected.push((sp, sealed_by));
        }
    }
    if let (Some(r), true) = (&sel.run_id, selected.is_empty()) {
        return Err(match sel.since_seal {
            None => Error::NotFound(format!("no commits of run_id {r}")),
            Some(s) => Error::NotFound(format!("no commits of run_id {r} sealed after seal {s}")),
        });
    }
    let commits: Vec<ExportedCommit> =
        futures::stream::iter(selected.into_iter().map(|(sp, sealed_by)| async move {
            let stats = crate::parts::scan::part_stats(store, &sp.pointer).await?;
            Ok::<_, Error>(ExportedCommit {
                pointer: sp.pointer,
                pointer_sha256: sp.sha256,
                sealed_by,
                stats,
            })
        }))
        .buffered(SCAN_CONCURRENCY)
        .try_collect()
        .await?;
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
    Ok(Snapshot {
        store_url: canonical_store_url(store_url),
        runs,
        head,
    })
}

fn head_of(chain: &Chain) -> Option<Head> {
    let s = chain.seals.last()?;
    Some(Head {
        seq: s.key_seq,
        sha256: s.digest.clone(),
        tree_size: s.seal.as_ref().map_or(0, |seal| seal.tree_size),
    })
}

fn sealed_by(chain: &Chain, sp: &StoredPointer) -> Result<Option<SealRef>> {
    let Some(&i) = chain.by_key.get(&sp.key) else {
        return Ok(None);
    };
    let leaf = &chain.leaves[i];
    if leaf.digest != sp.sha256 {
        return Err(Error::Corrupt {
            what: "pointer",
            key: sp.key.clone(),
            message: format!(
                "has sha256 {}, but seal {} sealed {}: it changed after sealing (run `lineage verify`)",
                sp.sha256, leaf.seq, leaf.digest
            ),
        });
    }
    let sha256 = chain
        .seals
        .iter()
        .find(|s| s.key_seq == leaf.seq)
        .map(|s| s.digest.clone())
        .ok_or_else(|| Error::Internal(format!("seal {} vanished from the chain", leaf.seq)))?;
    Ok(Some(SealRef {
        seq: leaf.seq,
        sha256,
    }))
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

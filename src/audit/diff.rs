//! What changed between two seals (`lineage diff A B`): the commits seals A+1..=B added
//! (each pointer read and checked against the digest its seal recorded), the compactions
//! they put into effect, the runs touched and the rows added.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use serde::Serialize;

use crate::audit::chain::{walk, Leaf};
use crate::audit::seals::compaction_ids;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::format::keys::{self, kind::KeyKind};
use crate::format::pointer::check_pointer;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::Trust;
use crate::publish::AtomicPublisher;

/// One commit a seal added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddedCommit {
    /// Its id.
    pub commit_id: String,
    /// Its run.
    pub run_id: String,
    /// Its target CRS.
    pub target_crs: String,
    /// Its rows.
    pub rows: u64,
    /// The seal that added it.
    pub sealed_by: u64,
}

/// The runs touched: commits and rows added to each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunChange {
    /// Commits added.
    pub commits: u64,
    /// Rows added.
    pub rows: u64,
}

/// What changed from seal `from` to seal `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealDiff {
    /// The older seal (0: before the first seal).
    pub from: u64,
    /// The newer seal.
    pub to: u64,
    /// Commits covered as of `from`.
    pub commits_before: u64,
    /// Commits covered as of `to`.
    pub commits_after: u64,
    /// Rows the added commits hold.
    pub rows_added: u64,
    /// The commits added, in seal order.
    pub commits_added: Vec<AddedCommit>,
    /// The compactions put into effect: (compaction id, seal).
    pub compactions: Vec<(String, u64)>,
    /// Each run touched.
    pub runs: BTreeMap<String, RunChange>,
}

/// The difference between seals `from` and `to` (`from` < `to`; 0 is the empty store
/// before seal 1). The chain must hold (an [`Error::Integrity`] names what does not); each
/// added pointer must be the bytes its seal recorded.
pub async fn diff(
    store: &dyn AtomicPublisher,
    from: u64,
    to: u64,
    trust: Option<&Trust>,
) -> Result<SealDiff> {
    if from >= to {
        return Err(Error::invalid(
            Param::Seal,
            text![format!(
                "{from} is not before {to}: give the older seal first"
            )],
        ));
    }
    let chain = walk(store, trust).await?;
    require_clean(&chain)?;
    let size = |n: u64| -> Result<(u64, Vec<(String, u64)>)> {
        if n == 0 {
            return Ok((0, Vec::new()));
        }
        let s = chain.seals.iter().find(|s| s.key_seq == n);
        match s.map(|s| (s.key_seq, &s.seal)) {
            Some((seq, Ok(seal))) => Ok((
                seal.tree_size,
                compaction_ids(seal).into_iter().map(|c| (c, seq)).collect(),
            )),
            _ => Err(Error::NotFound(format!("seal {n} in {}", store.describe()))),
        }
    };
    let (before, _) = size(from)?;
    let (after, _) = size(to)?;
    let mut compactions = Vec::new();
    for n in from + 1..=to {
        compactions.extend(size(n)?.1);
    }
    let added: Vec<&Leaf> = chain
        .leaves
        .iter()
        .skip(before as usize)
        .take((after - before) as usize)
        .collect();
    let commits_added = read_added(store, &added).await?;
    Ok(SealDiff {
        from,
        to,
        commits_before: before,
        commits_after: after,
        rows_added: commits_added.iter().map(|c| c.rows).sum(),
        runs: by_run(&commits_added),
        commits_added,
        compactions,
    })
}

/// The commits and rows added to each run.
fn by_run(added: &[AddedCommit]) -> BTreeMap<String, RunChange> {
    let mut runs: BTreeMap<String, RunChange> = BTreeMap::new();
    for c in added {
        let r = runs.entry(c.run_id.clone()).or_default();
        r.commits += 1;
        r.rows += c.rows;
    }
    runs
}

/// An [`Error::Integrity`] naming every problem of the chain, or nothing.
pub(crate) fn require_clean(chain: &crate::audit::chain::Chain) -> Result<()> {
    if chain.problems.is_empty() {
        return Ok(());
    }
    Err(Error::Integrity(
        chain
            .problems
            .iter()
            .map(|p| Failed::new(p.key.clone(), p.detail.to_string()))
            .collect(),
    ))
}

/// The pointers of `leaves`, each checked against its sealed digest.
async fn read_added(store: &dyn AtomicPublisher, leaves: &[&Leaf]) -> Result<Vec<AddedCommit>> {
    let read: Vec<std::result::Result<AddedCommit, Failed>> = futures::stream::iter(leaves)
        .map(|l| async move {
            let Some(bytes) = store.get(&l.key).await? else {
                return Ok(Err(Failed::new(
                    l.key.clone(),
                    format!("is missing (seal {} records it)", l.seq),
                )));
            };
            let digest = sha256_hex(&bytes);
            if digest != l.digest {
                return Ok(Err(Failed::new(
                    l.key.clone(),
                    format!("has sha256 {digest}; seal {} recorded {}", l.seq, l.digest),
                )));
            }
            let KeyKind::Pointer { run_id, commit_id } = keys::classify(&l.key) else {
                return Ok(Err(Failed::new(l.key.clone(), "is not a pointer's key")));
            };
            let p = check_pointer(&l.key, &bytes, &run_id, &commit_id)?;
            Ok::<_, Error>(Ok(AddedCommit {
                commit_id: p.commit_id,
                run_id: p.run_id,
                target_crs: p.target_crs,
                rows: p.row_count,
                sealed_by: l.seq,
            }))
        })
        .buffered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let failed: Vec<Failed> = read.iter().filter_map(|r| r.clone().err()).collect();
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    Ok(read.into_iter().filter_map(|r| r.ok()).collect())
}

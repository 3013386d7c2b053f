//! One commit or one seal, in words (`lineage show`): who, when, what, where, sealed by,
//! and the proofs to ask for. Read from the seal chain, walked and checked
//! ([`crate::audit::chain::walk`]), and the pointer, checked against the digest its seal
//! recorded.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::audit::chain::{walk, Chain};
use crate::audit::seals::{summarize, SealSummary};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Failed, Result};
use crate::format::compaction::CompactionRecord;
use crate::format::keys::{self, kind::KeyKind};
use crate::format::pointer::{check_pointer, Pointer};
use crate::history::seal::Trust;
use crate::publish::AtomicPublisher;

/// What `lineage show` shows.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shown {
    /// A commit.
    Commit(Box<CommitShown>),
    /// A seal.
    Seal(Box<SealShown>),
}

/// A commit: its pointer, the seal that sealed it, the compactions of it.
#[derive(Debug, Clone, Serialize)]
pub struct CommitShown {
    /// The pointer's key.
    pub pointer_key: String,
    /// The pointer (checked against the digest its seal recorded, when sealed).
    pub pointer: Pointer,
    /// The seal that sealed it; `None` when no seal covers it yet.
    pub sealed_by: Option<SealSummary>,
    /// Its leaf's position in the seals' tree.
    pub leaf_index: Option<u64>,
    /// The compactions of it a seal put into effect: (compaction id, seal).
    pub compacted_into: Vec<(String, u64)>,
}

/// A seal: its summary, its links, and the runs its commits belong to.
#[derive(Debug, Clone, Serialize)]
pub struct SealShown {
    /// As `lineage seals` lists it.
    pub seal: SealSummary,
    /// sha256 of the seal before it.
    pub prev_sha256: Option<String>,
    /// Its Merkle root.
    pub root: String,
    /// The runs of the commits it adds, and how many commits of each.
    pub runs: BTreeMap<String, u64>,
    /// Whether it carries a C2SP checkpoint (a signed seal): `prove` then writes the
    /// compact proofs, which are checked against the seal key, not the head digest.
    pub checkpoint: bool,
}

/// Show `what`: a commit id, a seal's sequence number, or a seal's digest (64 hex digits).
/// Signatures are judged by `trust` as in [`crate::audit::seals::list_seals`]; a problem
/// of the chain up to what is shown is an [`Error::Integrity`].
pub async fn show(
    store: &dyn AtomicPublisher,
    what: &str,
    trust: Option<&Trust>,
    witnessed: Option<&BTreeSet<u64>>,
) -> Result<Shown> {
    let what = what.trim();
    let chain = walk(store, trust).await?;
    if !chain.problems.is_empty() {
        return Err(Error::Integrity(
            chain
                .problems
                .iter()
                .map(|p| Failed::new(p.key.clone(), p.detail.to_string()))
                .collect(),
        ));
    }
    let list = summarize(&chain, None, witnessed);
    if keys::is_commit_id(what) {
        return commit(store, &chain, &list.seals, what)
            .await
            .map(|c| Shown::Commit(Box::new(c)));
    }
    let seq = match what.parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) if crate::history::merkle::parse_hash(what).is_some() => {
            let d = what.to_lowercase();
            chain
                .seals
                .iter()
                .find(|s| s.digest == d)
                .map(|s| s.key_seq)
        }
        Err(_) => {
            return Err(Error::usage(format!(
                "{what:?} is neither a commit id (a lower-case UUID), a seal number nor a seal's sha256"
            )))
        }
    };
    let summary = seq
        .and_then(|n| list.seals.iter().find(|s| s.seq == n))
        .ok_or_else(|| Error::NotFound(format!("seal {what} in {}", store.describe())))?;
    Ok(Shown::Seal(Box::new(seal(&chain, summary.clone()))))
}

fn seal(chain: &Chain, summary: SealSummary) -> SealShown {
    let stored = chain.seals.iter().find(|s| s.key_seq == summary.seq);
    let parsed = stored.and_then(|s| s.seal.as_ref().ok());
    let mut runs = BTreeMap::new();
    for e in parsed.iter().flat_map(|s| s.entries.iter()) {
        if let KeyKind::Pointer { run_id, .. } = keys::classify(&e.key) {
            *runs.entry(run_id).or_insert(0) += 1;
        }
    }
    SealShown {
        prev_sha256: parsed.and_then(|s| s.prev_sha256.clone()),
        root: parsed.map(|s| s.root.clone()).unwrap_or_default(),
        runs,
        checkpoint: parsed.is_some_and(|s| s.checkpoint.is_some()),
        seal: summary,
    }
}

async fn commit(
    store: &dyn AtomicPublisher,
    chain: &Chain,
    seals: &[SealSummary],
    commit_id: &str,
) -> Result<CommitShown> {
    let is_it = |key: &str| matches!(keys::classify(key), KeyKind::Pointer { commit_id: c, .. } if c == commit_id);
    let leaf = chain.leaves.iter().position(|l| is_it(&l.key));
    let key = match leaf {
        Some(i) => chain.leaves[i].key.clone(),
        None => store
            .list(keys::COMMITS_PREFIX)
            .await?
            .into_iter()
            .map(|o| o.key)
            .find(|k| is_it(k))
            .ok_or_else(|| {
                Error::NotFound(format!("commit {commit_id} in {}", store.describe()))
            })?,
    };
    let bytes = store
        .get(&key)
        .await?
        .ok_or_else(|| integrity(&key, "is missing".into()))?;
    if let Some(i) = leaf {
        let digest = sha256_hex(&bytes);
        if digest != chain.leaves[i].digest {
            return Err(integrity(
                &key,
                format!(
                    "has sha256 {digest}; seal {} recorded {}",
                    chain.leaves[i].seq, chain.leaves[i].digest
                ),
            ));
        }
    }
    let run_id = match keys::classify(&key) {
        KeyKind::Pointer { run_id, .. } => run_id,
        _ => String::new(),
    };
    let pointer = check_pointer(&key, &bytes, &run_id, commit_id)?;
    let sealed_by = leaf.and_then(|i| seals.iter().find(|s| s.seq == chain.leaves[i].seq));
    Ok(CommitShown {
        compacted_into: compactions_of(store, chain, commit_id).await?,
        pointer_key: key,
        pointer,
        sealed_by: sealed_by.cloned(),
        leaf_index: leaf.map(|i| i as u64),
    })
}

/// The compactions in effect that name `commit_id` among their sources: (id, seal).
async fn compactions_of(
    store: &dyn AtomicPublisher,
    chain: &Chain,
    commit_id: &str,
) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for s in &chain.seals {
        let Ok(seal) = &s.seal else { continue };
        for c in seal.compactions.iter().flatten() {
            let Some(bytes) = store.get(&c.key).await? else {
                return Err(integrity(&c.key, "is missing".into()));
            };
            if sha256_hex(&bytes) != c.sha256 {
                return Err(integrity(
                    &c.key,
                    format!(
                        "is not the record seal {} recorded (sha256 {})",
                        s.key_seq, c.sha256
                    ),
                ));
            }
            let record = CompactionRecord::from_bytes(&c.key, &bytes)?;
            if record.sources.iter().any(|src| src.commit_id == commit_id) {
                out.push((record.compaction_id, s.key_seq));
            }
        }
    }
    Ok(out)
}

fn integrity(key: &str, why: String) -> Error {
    Error::Integrity(vec![Failed::new(key.to_string(), why)])
}

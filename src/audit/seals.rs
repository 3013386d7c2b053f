//! The seals of a store, one line each: sequence, time, digest, signing key id, commits
//! added, compactions put into effect, witnessed or not, from the seal chain walked and
//! checked ([`crate::audit::chain::walk`]: order, links, roots, signatures) and, when
//! given, against the anchors an auditor holds (trusted keys, a head digest, a witness's
//! records, which the caller reads).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::audit::chain::{walk, Chain};
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::format::keys;
use crate::history::seal::{Seal, Trust};
use crate::history::signing::{key_id, parse_public_key};
use crate::publish::AtomicPublisher;

/// One seal as `lineage seals` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealSummary {
    /// Its sequence number.
    pub seq: u64,
    /// When it was made.
    pub sealed_utc: String,
    /// sha256 of its exact bytes (the head digest it makes).
    pub sha256: String,
    /// Id of the key its valid signature was made with; `None` when unsigned or when the
    /// signature is not valid (then a problem names it).
    pub key_id: Option<String>,
    /// Commits it adds.
    pub commits_added: u64,
    /// Commits it and the seals before it cover (its tree size).
    pub tree_size: u64,
    /// The compactions it puts into effect (their ids).
    pub compactions: Vec<String>,
    /// Whether the witness holds a record of it; `None` when no witness was given.
    pub witnessed: Option<bool>,
    /// The lineage-store that made it.
    pub tool_version: String,
}

/// Every seal, and what is wrong with the chain or against the anchors.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SealList {
    /// The seals that parse, oldest first.
    pub seals: Vec<SealSummary>,
    /// Problems of the chain (gaps, links, roots, signatures against the trusted keys)
    /// and a head digest no seal has.
    pub problems: Vec<Problem>,
    /// The seal whose digest is the head digest given.
    pub expect_head_seq: Option<u64>,
}

/// The seals of `store`, checked: signatures against `trust` (`None`: each against the
/// key it names, unsigned seals accepted), the head digest `expect_head` must be one of
/// theirs, and `witnessed` (the seals a witness recorded, when one was given) marks them.
pub async fn list_seals(
    store: &dyn AtomicPublisher,
    trust: Option<&Trust>,
    expect_head: Option<&str>,
    witnessed: Option<&BTreeSet<u64>>,
) -> Result<SealList> {
    let chain = walk(store, trust).await?;
    Ok(summarize(&chain, expect_head, witnessed))
}

/// [`list_seals`] of a walked chain.
pub(crate) fn summarize(
    chain: &Chain,
    expect_head: Option<&str>,
    witnessed: Option<&BTreeSet<u64>>,
) -> SealList {
    let bad_sig: BTreeSet<&str> = chain
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::BadSignature)
        .map(|p| p.key.as_str())
        .collect();
    let mut list = SealList {
        problems: chain.problems.clone(),
        ..SealList::default()
    };
    for s in &chain.seals {
        let Ok(seal) = &s.seal else { continue };
        list.seals.push(SealSummary {
            seq: s.key_seq,
            sealed_utc: seal.sealed_utc.clone(),
            sha256: s.digest.clone(),
            key_id: signer(seal).filter(|_| !bad_sig.contains(s.key.as_str())),
            commits_added: seal.entries.len() as u64,
            tree_size: seal.tree_size,
            compactions: compaction_ids(seal),
            witnessed: witnessed.map(|w| w.contains(&s.key_seq)),
            tool_version: seal.tool_version.clone(),
        });
    }
    if let Some(h) = expect_head {
        let h = h.trim().to_lowercase();
        list.expect_head_seq = chain
            .seals
            .iter()
            .find(|s| s.digest == h)
            .map(|s| s.key_seq);
        if list.expect_head_seq.is_none() {
            list.problems.push(Problem {
                kind: ProblemKind::HeadNotFound,
                key: keys::SEALS_PREFIX.to_string(),
                detail: format!("no seal has the head digest {h}").into(),
            });
        }
    }
    list
}

/// The id of the key a signed seal names.
pub(crate) fn signer(seal: &Seal) -> Option<String> {
    seal.signature
        .as_ref()
        .and(seal.public_key.as_deref())
        .and_then(|k| parse_public_key(k).ok())
        .map(|k| key_id(&k))
}

/// The ids of the compactions a seal puts into effect.
pub(crate) fn compaction_ids(seal: &Seal) -> Vec<String> {
    seal.compactions
        .iter()
        .flatten()
        .map(|c| compaction_id(&c.key))
        .collect()
}

/// A compaction record's id, from its key.
fn compaction_id(key: &str) -> String {
    match keys::classify(key) {
        keys::kind::KeyKind::CompactionRecord { compaction_id } => compaction_id,
        _ => key.to_string(),
    }
}

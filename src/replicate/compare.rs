//! `lineage verify --store A --replica-of B`: does A (the replica) hold B's (its source's)
//! objects, byte for byte?
//!
//! Every object present on both sides is hashed on both sides (parts as a stream) and the
//! digests compared. An object on one side only is judged by what the replica already
//! vouches for: the replica lags its source while a replication is pending, and that is
//! not corruption. So an object only in the source is a problem when the replica should
//! hold it (a seal at or below the replica's head, a pointer sealed by a seal the replica
//! holds, a part whose pointer the replica holds), and otherwise counts as "behind". An
//! object only in the replica is always a problem: `lineage replicate` never writes what
//! the source lacks, so it was removed from the source, or written to the replica by
//! something else. The two seal chains are compared seal by seal: one head is a prefix of
//! the other (and how far behind), they are identical, or they diverge.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde::Serialize;

use crate::audit::chain::{self, Chain};
use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::seal_key;
use crate::history::pointers::READ_CONCURRENCY;
use crate::parts::read::stream_sha256;
use crate::publish::AtomicPublisher;
use crate::replicate::kinds::{kind_of, Kind};
use crate::replicate::types::Head;

/// What is wrong between a replica and its source.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplicaProblemKind {
    /// In the replica, not in the source.
    OnlyInReplica,
    /// In the source, not in the replica, though the replica vouches for it (or not
    /// written by lineage-store, so never replicated).
    OnlyInSource,
    /// Present on both sides with different bytes.
    Differs,
    /// The two seal chains differ at some seal.
    Diverged,
}

/// One problem, naming the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaProblem {
    /// What is wrong.
    pub kind: ReplicaProblemKind,
    /// The object's key.
    pub key: String,
    /// Details for a person.
    pub detail: String,
}

/// How the two seal chains relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Same seals.
    Identical,
    /// The replica's seals are a prefix of the source's.
    ReplicaBehind,
    /// The source's seals are a prefix of the replica's: the source lost its newest seals.
    SourceBehind,
    /// Some seal differs.
    Diverged,
    /// Neither side has a seal.
    NoSeals,
}

/// How far the replica lags (objects a pending replication would copy): not problems.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Behind {
    /// Seals the source has beyond the replica's head.
    pub seals: u64,
    /// Commits (pointers) the source has and the replica does not vouch for yet.
    pub commits: u64,
    /// All objects the replica lacks without being a problem (seals, commits' parts and
    /// pointers, claims).
    pub objects: u64,
}

/// The comparison of a replica with its source.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaReport {
    /// The replica (`--store`).
    pub replica: String,
    /// Its source (`--replica-of`).
    pub source: String,
    /// Objects present on both sides and compared.
    pub objects_compared: u64,
    /// Bytes hashed, both sides together.
    pub bytes_hashed: u64,
    /// The replica's newest seal.
    pub replica_head: Option<Head>,
    /// The source's newest seal.
    pub source_head: Option<Head>,
    /// How the seal chains relate.
    pub relation: Relation,
    /// How far the replica lags.
    pub behind: Behind,
    /// Everything wrong, sorted by kind then key.
    pub problems: Vec<ReplicaProblem>,
}

impl ReplicaReport {
    /// True when nothing is wrong (a replica that is only behind is clean).
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

fn head(c: &Chain) -> Option<Head> {
    c.head().map(|(seq, d)| Head {
        seq,
        sha256: d.to_string(),
    })
}

/// Compare `replica` with its `source`.
pub async fn compare(
    replica: &dyn AtomicPublisher,
    source: &dyn AtomicPublisher,
) -> Result<ReplicaReport> {
    let rchain = chain::walk(replica, None).await?;
    let schain = chain::walk(source, None).await?;
    let rlist = listed(replica.list("").await?);
    let slist = listed(source.list("").await?);
    let mut report = ReplicaReport {
        replica: replica.describe(),
        source: source.describe(),
        objects_compared: 0,
        bytes_hashed: 0,
        replica_head: head(&rchain),
        source_head: head(&schain),
        relation: Relation::NoSeals,
        behind: Behind::default(),
        problems: Vec::new(),
    };
    hash_both(replica, source, &rlist, &slist, &mut report).await?;
    let rmax = relate_chains(&rchain, &schain, &mut report);
    let named = named_parts(source, &rlist, &slist).await;
    let sides = Sides {
        rchain: &rchain,
        schain: &schain,
        rmax,
        rlist: &rlist,
        named: &named,
    };
    for k in slist.keys().filter(|k| !rlist.contains_key(*k)) {
        match sides.why_missing(k, &mut report.behind) {
            Some(w) => report.push(
                ReplicaProblemKind::OnlyInSource,
                k,
                format!("missing from the replica: {w}"),
            ),
            None => report.behind.objects += 1,
        }
    }
    for k in rlist.keys().filter(|k| !slist.contains_key(*k)) {
        report.push(
            ReplicaProblemKind::OnlyInReplica,
            k,
            "in the replica, not in the source: removed from the source, or written to the replica by something other than `lineage replicate`".into(),
        );
    }
    report
        .problems
        .sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
    Ok(report)
}

impl ReplicaReport {
    /// Record one problem.
    fn push(&mut self, kind: ReplicaProblemKind, key: &str, detail: String) {
        self.problems.push(ReplicaProblem {
            kind,
            key: key.to_string(),
            detail,
        });
    }
}

/// For the parts only in the source whose commit's pointer the source holds: that
/// pointer's key → the part it names (read from the source; unreadable ones left out).
async fn named_parts(
    source: &dyn AtomicPublisher,
    rlist: &BTreeMap<String, u64>,
    slist: &BTreeMap<String, u64>,
) -> BTreeMap<String, String> {
    let pointers: std::collections::BTreeSet<(String, String, String)> = slist
        .keys()
        .filter(|k| !rlist.contains_key(*k))
        .filter_map(|k| match keys::classify(k) {
            KeyKind::Part {
                run_id, commit_id, ..
            } => Some((keys::pointer_key(&run_id, &commit_id), run_id, commit_id)),
            _ => None,
        })
        .filter(|(pk, _, _)| slist.contains_key(pk))
        .collect();
    futures::stream::iter(pointers)
        .map(|(pk, run_id, commit_id)| async move {
            let bytes = source.get(&pk).await.ok().flatten()?;
            let p = crate::format::pointer::check_pointer(&pk, &bytes, &run_id, &commit_id).ok()?;
            Some((pk, p.part_path))
        })
        .buffer_unordered(READ_CONCURRENCY)
        .filter_map(|x| async move { x })
        .collect()
        .await
}

/// A listing as key → size, publishes in flight and Iceberg metadata (each location's
/// own, [`Kind::Iceberg`]) left out.
fn listed(l: Vec<crate::publish::ObjectInfo>) -> BTreeMap<String, u64> {
    l.into_iter()
        .filter(|o| !matches!(kind_of(&o.key), Kind::Temp | Kind::Iceberg))
        .map(|o| (o.key, o.size))
        .collect()
}

/// Hash every object present on both sides, on both sides, and name those that differ.
async fn hash_both(
    replica: &dyn AtomicPublisher,
    source: &dyn AtomicPublisher,
    rlist: &BTreeMap<String, u64>,
    slist: &BTreeMap<String, u64>,
    report: &mut ReplicaReport,
) -> Result<()> {
    let both: Vec<(&String, u64, u64)> = rlist
        .iter()
        .filter_map(|(k, &rs)| slist.get(k).map(|&ss| (k, rs, ss)))
        .collect();
    // (key, sizes, digests) of the replica's and the source's object.
    type Hashed<'a> = (&'a String, (u64, u64), (String, String));
    let hashed: Vec<Result<Hashed>> = futures::stream::iter(both)
        .map(|(k, rs, ss)| async move {
            let rd = stream_sha256(replica, k, rs, &|_| {}).await?;
            let sd = stream_sha256(source, k, ss, &|_| {}).await?;
            Ok((k, (rs, ss), (rd, sd)))
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    for h in hashed {
        let (k, (rs, ss), (rd, sd)) = h?;
        report.objects_compared += 1;
        report.bytes_hashed += rs + ss;
        if rd != sd || rs != ss {
            report.push(
                ReplicaProblemKind::Differs,
                k,
                format!(
                    "replica: {rs} bytes, sha256 {rd}; source: {ss} bytes, sha256 {sd}: edited on one side"
                ),
            );
        }
    }
    Ok(())
}

/// Compare the two seal chains seal by seal: sets the report's relation (and seals
/// behind), names a divergence. Returns the replica's newest seal number (0 for none).
fn relate_chains(rchain: &Chain, schain: &Chain, report: &mut ReplicaReport) -> u64 {
    let rseals: BTreeMap<u64, &str> = rchain
        .seals
        .iter()
        .map(|s| (s.key_seq, s.digest.as_str()))
        .collect();
    let sseals: BTreeMap<u64, &str> = schain
        .seals
        .iter()
        .map(|s| (s.key_seq, s.digest.as_str()))
        .collect();
    let (rmax, smax) = (
        rseals.keys().last().copied().unwrap_or(0),
        sseals.keys().last().copied().unwrap_or(0),
    );
    let diverged = rseals
        .iter()
        .find(|(n, d)| sseals.get(n).is_some_and(|s| s != *d));
    report.relation = match diverged {
        Some((n, d)) => {
            let s = sseals.get(n).copied().unwrap_or_default();
            report.push(
                ReplicaProblemKind::Diverged,
                &seal_key(*n),
                format!("the replica's seal {n} has sha256 {d}, the source's {s}: the two histories diverge from seal {n}"),
            );
            Relation::Diverged
        }
        None if rmax == 0 && smax == 0 => Relation::NoSeals,
        None if rmax == smax => Relation::Identical,
        None if rmax < smax => Relation::ReplicaBehind,
        None => Relation::SourceBehind,
    };
    if report.relation == Relation::ReplicaBehind {
        report.behind.seals = smax - rmax;
    }
    rmax
}

/// What the replica vouches for, to judge an object only in the source.
struct Sides<'a> {
    rchain: &'a Chain,
    schain: &'a Chain,
    /// The replica's newest seal number.
    rmax: u64,
    rlist: &'a BTreeMap<String, u64>,
    /// Pointer key → the part it names, for parts only in the source ([`named_parts`]).
    named: &'a BTreeMap<String, String>,
}

impl Sides<'_> {
    /// Why `k`, only in the source, is a problem, if it is; otherwise it is behind (a
    /// pointer the replica need not hold yet counts into `behind.commits`).
    fn why_missing(&self, k: &str, behind: &mut Behind) -> Option<String> {
        let rmax = self.rmax;
        match kind_of(k) {
            Kind::Foreign => Some(match keys::part_name(k) {
                Some((_, crs, commit)) => format!(
                    "a file under commit {commit}'s part name in `target_crs={crs}`, a directory lineage-store never writes: planted (`lineage verify` of the source names it `planted_part`), so `lineage replicate` does not copy it"
                ),
                None => "not written by lineage-store, so `lineage replicate` does not copy it: see `lineage verify` of the source".to_string(),
            }),
            Kind::Unknown => Some(
                "not an object lineage-store writes under `_lineage/`, so `lineage replicate` does not copy it: see `lineage verify` of the source".to_string(),
            ),
            Kind::Seal(n) => (n <= rmax).then(|| format!("the replica holds later seals (up to {rmax})")),
            Kind::Delta(v) => (v.max(1) <= rmax)
                .then(|| format!("the replica holds seal {}, which this version is", v.max(1))),
            Kind::Pointer { .. } => {
                let why = self.vouched(k);
                if why.is_none() {
                    behind.commits += 1;
                }
                why
            }
            Kind::Part => match keys::classify(k) {
                KeyKind::Part {
                    run_id, commit_id, ..
                } => {
                    let ptr = keys::pointer_key(&run_id, &commit_id);
                    if let Some(path) = self.named.get(&ptr).filter(|p| *p != k) {
                        Some(format!("not the part its commit's pointer {ptr} names ({path}): a file planted under the commit's part name (`lineage verify` of the source names it `planted_part`), so `lineage replicate` does not copy it"))
                    } else if self.rlist.contains_key(&ptr) {
                        Some(format!("its pointer {ptr} is in the replica"))
                    } else {
                        self.vouched(&ptr).map(|w| format!("its pointer {ptr}: {w}"))
                    }
                }
                _ => None,
            },
            // Optional (readers replay the versions without it): behind, not a divergence.
            Kind::DeltaCheckpoint(_)
            | Kind::Identity
            | Kind::Claim
            | Kind::Compacted
            | Kind::Index
            | Kind::SealAux
            | Kind::Head
            | Kind::Witness
            | Kind::Iceberg
            | Kind::Temp => None,
        }
    }

    /// How the replica vouches for the pointer `key`, if it does.
    fn vouched(&self, key: &str) -> Option<String> {
        let sealed_at = |c: &Chain, key: &str| c.by_key.get(key).map(|&i| c.leaves[i].seq);
        if let Some(n) = sealed_at(self.rchain, key) {
            return Some(format!("the replica's seal {n} covers it"));
        }
        match sealed_at(self.schain, key) {
            Some(n) if n <= self.rmax => {
                Some(format!("sealed by seal {n}, which the replica holds"))
            }
            _ => None,
        }
    }
}

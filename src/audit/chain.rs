//! Walking the seal chain: order, links, roots, signatures, and the expected head.
//!
//! What a chain alone proves: no sealed seal was edited, removed from the middle or
//! reordered, and no sealed pointer was changed or removed. What it cannot prove: that the
//! newest seals were not cut off (the remaining chain is still consistent). Only a head
//! digest kept outside the store (`--expect-head`) detects that.

use std::collections::HashMap;

use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::seal_key;
use crate::history::frontier::Frontier;
use crate::history::merkle::{self, Hash};
use crate::history::seal::{read_seals, Seal, StoredSeal, Trust};
use crate::publish::AtomicPublisher;

/// One sealed commit, in leaf order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// Pointer key.
    pub key: String,
    /// sha256 (hex) of the pointer's bytes, as sealed.
    pub digest: String,
    /// The seal that added it.
    pub seq: u64,
    /// Its seal marks it adopted ([`crate::history::seal::SealEntry::adopted`]).
    pub adopted: bool,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Chain {
    /// The seals, sorted by the sequence number of their keys.
    pub seals: Vec<StoredSeal>,
    /// Every sealed commit in leaf order (as far as the seals could be read).
    pub leaves: Vec<Leaf>,
    /// Pointer key → index into `leaves` (first occurrence).
    pub by_key: HashMap<String, usize>,
    /// Problems with the seals themselves.
    pub problems: Vec<Problem>,
    /// Seals carrying a valid signature.
    pub signed: u64,
    /// True when a seal could not be read, so the leaves after it are unknown.
    pub broken: bool,
}

impl Chain {
    /// The newest seal: (seq from its key, digest).
    pub fn head(&self) -> Option<(u64, &str)> {
        self.seals.last().map(|s| (s.key_seq, s.digest.as_str()))
    }

    /// Leaf hashes of the first `n` leaves.
    pub fn leaf_hashes(&self, n: usize) -> Vec<Hash> {
        self.leaves
            .iter()
            .take(n)
            .map(|l| merkle::parse_hash(&l.digest).map_or([0; 32], |d| merkle::leaf_hash(&d)))
            .collect()
    }

    fn push(
        &mut self,
        kind: ProblemKind,
        key: impl Into<String>,
        detail: impl Into<crate::base::param::Text>,
    ) {
        self.problems.push(Problem {
            kind,
            key: key.into(),
            detail: detail.into(),
        });
    }
}

/// Read and check every seal. `trust`: the keys seals must be signed with, and from which
/// seal on (`None`: signatures checked against the key each seal names, unsigned seals
/// accepted).
pub async fn walk(store: &dyn AtomicPublisher, trust: Option<&Trust>) -> Result<Chain> {
    let default = Trust::default();
    let trust = trust.unwrap_or(&default);
    let mut chain = Chain {
        seals: read_seals(store).await?,
        ..Chain::default()
    };
    let seals = std::mem::take(&mut chain.seals);
    // The tree grows leaf by leaf; its frontier gives each seal's root in O(log n), so the
    // walk is linear in the leaves however many seals there are.
    let mut tree = Frontier::new();
    let mut watermark: Option<String> = None;
    let mut expected_seq = 1;
    let mut prev: Option<&StoredSeal> = None;
    for s in &seals {
        let gap = chain.check_seq(s, expected_seq);
        expected_seq = s.key_seq + 1;
        let seal = match &s.seal {
            Ok(seal) => seal,
            Err(m) => {
                chain.push(ProblemKind::SealCorrupt, &s.key, m.clone());
                chain.broken = true;
                prev = Some(s);
                continue;
            }
        };
        chain.check_link(prev, s, seal, gap);
        prev = Some(s);
        chain.add_entries(&mut tree, s, seal);
        if !chain.broken {
            chain.check_root(&tree, s, seal);
        }
        if seal.is_v2() {
            let problems = crate::history::seal::seal_fields(
                seal,
                watermark.as_deref(),
                (!chain.broken).then_some(&chain.by_key),
            );
            for p in problems {
                chain.push(ProblemKind::SealCorrupt, &s.key, p);
            }
            watermark = seal.watermark_utc.clone();
        }
        match trust.judge(s.key_seq, seal) {
            Ok(Some(_)) => chain.signed += 1,
            Ok(None) => {}
            Err(why) => chain.push(ProblemKind::BadSignature, &s.key, why),
        }
    }
    chain.seals = seals;
    Ok(chain)
}

/// Why `seal` is dated before `before`, the seal it follows (`None` when it is not, or
/// when either time cannot be read: that is reported as such).
pub(crate) fn sealed_earlier(before: &StoredSeal, seal: &Seal) -> Option<String> {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let prev = before.seal.as_ref().ok()?;
    let (p, t) = (parse(&prev.sealed_utc)?, parse(&seal.sealed_utc)?);
    (t < p).then(|| {
        format!(
            "sealed at {}, before {} ({}): the history goes backwards (a sealer's clock was wrong, or a seal was forged)",
            seal.sealed_utc, before.key, prev.sealed_utc
        )
    })
}

impl Chain {
    /// Seal `s` where seal `expected_seq` is due: the seals missing before it named. True
    /// when its key is not the one due (a gap: the chain is then broken).
    fn check_seq(&mut self, s: &StoredSeal, expected_seq: u64) -> bool {
        if s.key_seq > expected_seq {
            let missing = if s.key_seq - expected_seq == 1 {
                format!("seal {expected_seq} is missing")
            } else {
                format!("seals {expected_seq} to {} are missing", s.key_seq - 1)
            };
            self.push(
                ProblemKind::SealMissing,
                seal_key(expected_seq),
                format!("{missing}: the chain jumps to {}", s.key),
            );
        }
        let gap = s.key_seq != expected_seq;
        if gap {
            // The missing seals' entries are unknown, so later roots cannot be recomputed.
            self.broken = true;
        }
        gap
    }

    /// Seal `s` (parsed: `seal`) against its key and the seal before it (`prev`).
    fn check_link(&mut self, prev: Option<&StoredSeal>, s: &StoredSeal, seal: &Seal, gap: bool) {
        if seal.seq != s.key_seq {
            self.push(
                ProblemKind::SealMisplaced,
                &s.key,
                format!(
                    "records seq {} but is stored as seal {} (seals renamed or swapped)",
                    seal.seq, s.key_seq
                ),
            );
        }
        match (prev, &seal.prev_sha256) {
            (None, None) => {}
            (None, Some(p)) if !gap => self.push(
                ProblemKind::SealChainBroken,
                &s.key,
                format!("is the first seal but records a previous seal {p}"),
            ),
            // A seal not read (too large) has no digest: it is reported corrupt already.
            (Some(before), Some(p)) if !gap && !before.digest.is_empty() && p != &before.digest => self.push(
                ProblemKind::SealChainBroken,
                &before.key,
                format!(
                    "has sha256 {}, but the next seal {} records {p}: this seal was edited or replaced after {} was made",
                    before.digest, s.key, s.key
                ),
            ),
            (Some(before), None) => self.push(
                ProblemKind::SealChainBroken,
                &s.key,
                format!("records no previous seal, but follows {}", before.key),
            ),
            _ => {}
        }
        if let Some(why) = prev.and_then(|before| sealed_earlier(before, seal)) {
            self.push(ProblemKind::SealOutOfOrder, &s.key, why);
        }
    }

    /// The entries of seal `s` as leaves, each grown into `tree`.
    fn add_entries(&mut self, tree: &mut Frontier, s: &StoredSeal, seal: &Seal) {
        for e in &seal.entries {
            if let Some(&i) = self.by_key.get(&e.key) {
                let first = self.leaves[i].seq;
                self.push(
                    ProblemKind::SealCorrupt,
                    &s.key,
                    format!("seals {} again (already sealed by seal {first})", e.key),
                );
                continue;
            }
            let Some(d) = merkle::parse_hash(&e.sha256) else {
                self.push(
                    ProblemKind::SealCorrupt,
                    &s.key,
                    format!("entry {} has no valid sha256", e.key),
                );
                self.broken = true;
                continue;
            };
            tree.push(merkle::leaf_hash(&d));
            self.by_key.insert(e.key.clone(), self.leaves.len());
            self.leaves.push(Leaf {
                key: e.key.clone(),
                digest: e.sha256.to_lowercase(),
                seq: s.key_seq,
                adopted: e.adopted,
            });
        }
    }

    /// Seal `s`'s tree size, root and frontier against the tree of every leaf so far.
    fn check_root(&mut self, tree: &Frontier, s: &StoredSeal, seal: &Seal) {
        let root = hex::encode(tree.root());
        if seal.tree_size != tree.size() || !seal.root.eq_ignore_ascii_case(&root) {
            self.push(
                ProblemKind::SealRootMismatch,
                &s.key,
                format!(
                    "records tree size {} root {}, but its entries and those of the seals before it give {} and {root}: the seal was edited",
                    seal.tree_size,
                    seal.root,
                    tree.size()
                ),
            );
        } else if let Some(f) = &seal.frontier {
            let want = tree.to_hex();
            if f.len() != want.len() || f.iter().zip(&want).any(|(a, b)| !a.eq_ignore_ascii_case(b))
            {
                self.push(
                    ProblemKind::SealRootMismatch,
                    &s.key,
                    "records a frontier that is not the right edge of its tree: the seal was edited, and the next seal would build on it",
                );
            }
        }
    }
}

/// Check an expected head digest against the chain; a problem when no seal has it.
pub fn check_head(chain: &Chain, expect: &str) -> Option<Problem> {
    let want = expect.trim().to_lowercase();
    if chain.seals.iter().any(|s| s.digest == want) {
        return None;
    }
    let newest = chain
        .head()
        .map_or("there are no seals".to_string(), |(seq, d)| {
            format!("the newest seal is {seq} with sha256 {d}")
        });
    Some(Problem {
        kind: ProblemKind::HeadNotFound,
        key: keys::SEALS_PREFIX.to_string(),
        detail: crate::base::param::text![
            format!("no seal has the expected head digest {want} ("),
            crate::base::param::Param::ExpectHead,
            format!("; {newest}): the newest seals were cut off, or the store was rolled back or rewritten")
        ],
    })
}

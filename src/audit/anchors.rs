//! The anchors an auditor keeps outside the store, and what became of each.
//!
//! A store proves itself only to itself: a chain that links, roots that add up and
//! signatures that check under the keys the seals name are what any writer (or anyone
//! who rewrites the store from its first seal) can produce. What binds a store to the
//! history an auditor knows are its **anchors**, each kept where the store's writers
//! cannot change it:
//!
//! - a **head digest** (`expect_head`, printed by `lineage seal`): some seal must have
//!   it. Detects seals cut off after it, and a store rolled back to an earlier copy.
//! - the sealers' **public keys** (`public_keys`, with `signed_from`): every seal from
//!   `signed_from` on (seal 1 when only keys are given) must be signed by one of them.
//!   Detects seals made by anyone else (a rewrite re-sealed with another key).
//! - a **witness** store (`witness`): every head it recorded must still be the store's.
//!   Detects cut-off and rewritten seals without a digest kept by hand.
//! - outside **witness keys** (`witness_keys`, [`WitnessKeys`]): at least a quorum of
//!   these C2SP witnesses must have a stored valid cosignature of the newest seal's
//!   checkpoint. Detects a split view (a history shown to this auditor that the witnesses
//!   did not see) without trusting the store's writers.
//!
//! [`Anchors`] is the one way every command that reads sealed history takes them (verify,
//! report, files, scan, the exports: [`Anchors::require`] before reading); each outcome is
//! an [`AnchorOutcome`] saying in words what held ("expected head found at seal 5"), so
//! every output states what was checked. Without anchors, the verdict says what it is
//! ([`crate::audit::anchor_outcome::UNANCHORED`]).

use std::sync::Arc;

use async_trait::async_trait;
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};

use crate::audit::anchor_outcome::{outcome_lines, AnchorKind, AnchorOutcome};
use crate::audit::chain::{self, Chain};
use crate::audit::cosigners::WitnessKeys;
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::format::keys::{self, kind::KeyKind};
use crate::history::seal::{StoredSeal, Trust};
use crate::publish::AtomicPublisher;
use crate::read::SealRange;

/// A witness store as an anchor: `crate::witness` implements it (the check of a chain
/// against every record the witness holds for the store).
#[async_trait]
pub trait WitnessAnchor: Send + Sync + std::fmt::Debug {
    /// The witness store, for messages.
    fn describe(&self) -> String;

    /// Check `chain` (of the store described as `store`) against every record the
    /// witness holds: its outcome and, when it did not hold, the problems, each naming
    /// its object.
    async fn judge(&self, chain: &Chain, store: &str) -> Result<(AnchorOutcome, Vec<Problem>)>;

    /// Check the seals a read since a seal read (`range`, K..=N, of the store described
    /// as `store`) against the witness's records of the store at that location, reading
    /// nothing else of the store: the records of seals K..=N must hold those seals'
    /// digests, none may be of a seal after N when N is the newest; the records of seals
    /// before K are counted, not checked.
    async fn judge_range(
        &self,
        range: &SealRange,
        store: &str,
    ) -> Result<(AnchorOutcome, Vec<Problem>)>;
}

/// The anchors a command is given (see the module's documentation): the one type every
/// read of sealed history takes them as.
#[derive(Debug, Clone, Default)]
pub struct Anchors {
    /// A head digest kept outside the store (64 hex digits); some seal must have it.
    pub expect_head: Option<String>,
    /// Every signed seal must verify under one of these (old and new during a rotation);
    /// with any given, every seal from [`Self::signed_from`] (default 1) must be signed.
    pub public_keys: Vec<VerifyingKey>,
    /// Seals before this one may be unsigned; it and every later one must be signed.
    pub signed_from: Option<u64>,
    /// A witness store whose records the chain must agree with.
    pub witness: Option<Arc<dyn WitnessAnchor>>,
    /// Outside witnesses of which at least a quorum must have cosigned the newest seal's
    /// checkpoint (judged on the newest seal, whatever part of the chain a read reads).
    pub witness_keys: Option<WitnessKeys>,
}

/// What checking the anchors found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchorCheck {
    /// Each anchor given, in the order head, keys, witness, witness keys.
    pub outcomes: Vec<AnchorOutcome>,
    /// Why those that did not hold did not, each naming its object.
    pub problems: Vec<Problem>,
}

impl AnchorCheck {
    /// True when every anchor given held (also when none was given: see
    /// [`Self::anchored`]).
    pub fn held(&self) -> bool {
        self.problems.is_empty() && self.outcomes.iter().all(|o| o.held)
    }

    /// True when at least one anchor was given.
    pub fn anchored(&self) -> bool {
        !self.outcomes.is_empty()
    }

    /// The outcomes in words, one per anchor, or [`crate::audit::anchor_outcome::UNANCHORED`]
    /// when none was given.
    pub fn lines(&self) -> Vec<String> {
        outcome_lines(&self.outcomes)
    }

    /// `Ok(self)` when every anchor held; else an [`Error::Integrity`] naming each
    /// problem (exit 1): a read bound to an anchor that does not hold reads nothing.
    pub fn into_result(self) -> Result<Self> {
        if self.held() {
            return Ok(self);
        }
        let mut failed: Vec<Failed> = self
            .problems
            .iter()
            .map(|p| Failed::new(p.key.clone(), p.detail.clone()))
            .collect();
        if failed.is_empty() {
            failed = self
                .outcomes
                .iter()
                .filter(|o| !o.held)
                .map(|o| Failed::new(keys::SEALS_PREFIX, o.statement.clone()))
                .collect();
        }
        Err(Error::Integrity(failed))
    }
}

impl Anchors {
    /// True when no anchor is given.
    pub fn is_empty(&self) -> bool {
        !self.reads_chain() && self.witness_keys.is_none()
    }

    /// True when an anchor judged on the seal chain is given (all but the witness keys).
    fn reads_chain(&self) -> bool {
        self.expect_head.is_some()
            || !self.public_keys.is_empty()
            || self.signed_from.is_some()
            || self.witness.is_some()
    }

    /// The signature rules of the key anchors.
    pub fn trust(&self) -> Trust {
        Trust {
            keys: self.public_keys.clone(),
            signed_from: self.signed_from,
        }
    }

    /// Refuse a head digest that is not 64 hex digits (a usage error, before any read).
    pub fn check_head_digest(head: &str) -> Result<()> {
        if crate::history::merkle::parse_hash(head).is_none() {
            return Err(Error::invalid(
                Param::ExpectHead,
                text![format!("{head:?} is not a sha256 (64 hex digits)")],
            ));
        }
        Ok(())
    }

    /// Check every anchor given against the store's seal chain (read once here, when an
    /// anchor other than the witness keys is given), the witness and the witness keys:
    /// what held, and the problems of what did not.
    pub async fn check(&self, store: &dyn AtomicPublisher) -> Result<AnchorCheck> {
        let mut out = AnchorCheck::default();
        if self.reads_chain() {
            let chain = chain::walk(store, Some(&self.trust())).await?;
            out = self.judge_chain(&chain);
            if let Some(w) = &self.witness {
                let (o, problems) = w.judge(&chain, &store.describe()).await?;
                out.outcomes.push(o);
                out.problems.extend(problems);
            }
        }
        self.judge_witness_keys(store, &mut out).await?;
        Ok(out)
    }

    /// The witness keys judged on the store's newest seal, into `out`.
    pub(crate) async fn judge_witness_keys(
        &self,
        store: &dyn AtomicPublisher,
        out: &mut AnchorCheck,
    ) -> Result<()> {
        if let Some(k) = &self.witness_keys {
            let (o, _, problems) = k.judge(store).await?;
            out.outcomes.push(o);
            out.problems.extend(problems);
        }
        Ok(())
    }

    /// [`Self::check`], refusing (an [`Error::Integrity`] naming each problem, exit 1)
    /// when any anchor does not hold: what every read of sealed history calls first.
    pub async fn require(&self, store: &dyn AtomicPublisher) -> Result<AnchorCheck> {
        self.check(store).await?.into_result()
    }

    /// The head and key anchors judged on a walked chain (walked with [`Self::trust`]);
    /// the witness is not among them.
    pub fn judge_chain(&self, chain: &Chain) -> AnchorCheck {
        let mut out = AnchorCheck::default();
        if let Some(want) = &self.expect_head {
            let (o, p) = judge_head(chain, want);
            out.outcomes.push(o);
            out.problems.extend(p);
        }
        if !self.public_keys.is_empty() || self.signed_from.is_some() {
            let (o, p) = judge_keys(&chain.seals, &self.trust(), !self.public_keys.is_empty());
            out.outcomes.push(o);
            out.problems.extend(p);
        }
        out
    }
}

/// The head anchor: some seal has the digest, and the chain up to it holds.
fn judge_head(chain: &Chain, want: &str) -> (AnchorOutcome, Vec<Problem>) {
    let want = want.trim().to_lowercase();
    let newest = chain.head().map_or(0, |(n, _)| n);
    let found = chain
        .seals
        .iter()
        .find(|s| s.digest == want)
        .map(|s| s.key_seq);
    let Some(seq) = found else {
        let problem = chain::check_head(chain, &want).into_iter().collect();
        return (head_outcome(&want, None, newest), problem);
    };
    let broken: Vec<Problem> = chain
        .problems
        .iter()
        .filter(|p| p.kind != ProblemKind::BadSignature)
        .filter(|p| matches!(keys::classify(&p.key), KeyKind::Seal(n) if n <= seq))
        .cloned()
        .collect();
    if !broken.is_empty() {
        let statement = format!(
            "expected head {} found at seal {seq}, but the chain up to it does not hold ({} problems)",
            short(&want),
            broken.len()
        );
        let outcome = AnchorOutcome {
            anchor: AnchorKind::Head,
            held: false,
            statement,
        };
        return (outcome, broken);
    }
    (head_outcome(&want, Some(seq), newest), Vec::new())
}

/// The head anchor's outcome: the digest `want` found at seal `found` (or not) in a
/// store whose newest seal is `newest`.
pub(crate) fn head_outcome(want: &str, found: Option<u64>, newest: u64) -> AnchorOutcome {
    let short = short(want);
    let (held, statement) = match found {
        None => {
            let why = match newest {
                0 => "the store has no seals".to_string(),
                n => format!("the newest seal is {n}"),
            };
            (false, format!("expected head {short} not found ({why}): the newest seals were cut off, or the store was rolled back or rewritten"))
        }
        Some(seq) => {
            let after = match newest.saturating_sub(seq) {
                0 => ", the newest".to_string(),
                1 => format!("; seal {newest} came after it"),
                _ => format!("; seals {}-{newest} came after it", seq + 1),
            };
            (
                true,
                format!("expected head {short} found at seal {seq}{after}"),
            )
        }
    };
    AnchorOutcome {
        anchor: AnchorKind::Head,
        held,
        statement,
    }
}

/// The key anchor: every seal that must be signed is, by a key given (`keys_given`; else
/// by the key it names), and no seal carries a bad signature.
pub(crate) fn judge_keys<'a>(
    seals: impl IntoIterator<Item = &'a StoredSeal>,
    trust: &Trust,
    keys_given: bool,
) -> (AnchorOutcome, Vec<Problem>) {
    let mut problems = Vec::new();
    // (first seq, last seq, key id) of each run of seals signed by one key.
    let mut runs: Vec<(u64, u64, String)> = Vec::new();
    let mut unsigned = 0u64;
    for s in seals {
        let Ok(seal) = &s.seal else { continue };
        match trust.judge(s.key_seq, seal) {
            Ok(Some(id)) => match runs.last_mut() {
                Some((_, last, k)) if *k == id && *last + 1 == s.key_seq => *last = s.key_seq,
                _ => runs.push((s.key_seq, s.key_seq, id)),
            },
            Ok(None) => unsigned += 1,
            Err(why) => problems.push(Problem::new(ProblemKind::BadSignature, &s.key, why)),
        }
    }
    let whose = if keys_given {
        "(given)"
    } else {
        "(named by the seal: no key given, integrity not authorship)"
    };
    let mut said: Vec<String> = runs
        .iter()
        .map(|(a, b, k)| match a == b {
            true => format!("seal {a} signed by key {k} {whose}"),
            false => format!("seals {a}-{b} signed by key {k} {whose}"),
        })
        .collect();
    if unsigned > 0 {
        let from = trust
            .signed_from
            .map(|n| format!(" before seal {n}"))
            .unwrap_or_default();
        said.push(format!("{unsigned} unsigned{from} (allowed)"));
    }
    if !problems.is_empty() {
        said.push(format!(
            "{} seal{} not signed as required",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        ));
    }
    if said.is_empty() {
        said.push("the store has no seals".to_string());
    }
    let outcome = AnchorOutcome {
        anchor: AnchorKind::Keys,
        held: problems.is_empty(),
        statement: said.join("; "),
    };
    (outcome, problems)
}

/// The first 12 hex digits of a digest, and an ellipsis.
fn short(digest: &str) -> String {
    match digest.get(..12) {
        Some(s) if digest.len() > 12 => format!("{s}…"),
        _ => digest.to_string(),
    }
}

//! The anchors of a read since a seal ([`crate::read::snapshot()`] with `since_seal`): judged
//! on the seals that read read and checked (K..=N, [`SealRange`]), never by reading the
//! chain again. What the seals before K hold is vouched for by seal K's digest alone, so
//! an anchor binds the read only when it is checked against K..=N: an expected head must
//! be the digest of one of them (the incremental reader passes the head it recorded when
//! it last read seal K); a witness's records of seals K..=N must hold their digests
//! (those of earlier seals are counted, not checked). The witness keys are judged on the
//! newest seal, which such a read reads too ([`Anchors::check_since`]).

use crate::audit::anchor_outcome::{AnchorKind, AnchorOutcome};
use crate::audit::anchors::{head_outcome, judge_keys, AnchorCheck, Anchors};
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::base::param::{text, Param};
use crate::format::keys::seal_key;
use crate::publish::AtomicPublisher;
use crate::read::SealRange;

impl Anchors {
    /// Check every anchor against the seals of `range` (of the store described as
    /// `store`): the expected head among them (one of an earlier seal is refused: the read
    /// did not reach it), the signature rules on each of them, and the witness's records
    /// of the store at that location on them ([`crate::audit::anchors::WitnessAnchor::judge_range`]: the records
    /// of seals before K counted, not checked). Not the witness keys, which need the store:
    /// [`Self::check_since`] judges them too.
    pub async fn check_range(&self, range: &SealRange, store: &str) -> Result<AnchorCheck> {
        let mut out = AnchorCheck::default();
        if let Some(want) = &self.expect_head {
            let want = want.trim().to_lowercase();
            let found = range.seals.iter().find(|s| s.digest == want);
            match found {
                Some(s) => out
                    .outcomes
                    .push(head_outcome(&want, Some(s.key_seq), range.to)),
                None => {
                    let (outcome, problem) = head_before(range, &want);
                    out.outcomes.push(outcome);
                    out.problems.push(problem);
                }
            }
        }
        if !self.public_keys.is_empty() || self.signed_from.is_some() {
            let (mut o, p) = judge_keys(&range.seals, &self.trust(), !self.public_keys.is_empty());
            o.statement = format!(
                "of seals {}-{} (those read): {}",
                range.from, range.to, o.statement
            );
            out.outcomes.push(o);
            out.problems.extend(p);
        }
        if let Some(w) = &self.witness {
            let (o, p) = w.judge_range(range, store).await?;
            out.outcomes.push(o);
            out.problems.extend(p);
        }
        Ok(out)
    }

    /// [`Self::check_range`], refusing (an [`crate::Error::Integrity`] naming each problem, exit
    /// 1) when any anchor does not hold.
    pub async fn require_range(&self, range: &SealRange, store: &str) -> Result<AnchorCheck> {
        self.check_range(range, store).await?.into_result()
    }

    /// [`Self::check_range`] of `store`, and the witness keys judged on its newest seal.
    pub async fn check_since(
        &self,
        store: &dyn AtomicPublisher,
        range: &SealRange,
    ) -> Result<AnchorCheck> {
        let mut out = self.check_range(range, &store.describe()).await?;
        self.judge_witness_keys(store, &mut out).await?;
        Ok(out)
    }

    /// [`Self::check_since`], refusing (an [`crate::Error::Integrity`] naming each problem,
    /// exit 1) when any anchor does not hold: what a read since a seal calls after it.
    pub async fn require_since(
        &self,
        store: &dyn AtomicPublisher,
        range: &SealRange,
    ) -> Result<AnchorCheck> {
        self.check_since(store, range).await?.into_result()
    }
}

/// An expected head that is none of the range's seals: refused, saying why.
fn head_before(range: &SealRange, want: &str) -> (AnchorOutcome, Problem) {
    let (k, n) = (range.from, range.to);
    let detail = text![
        format!(
            "the expected head {want} is the digest of none of seals {k}-{n}, the seals read \
             (from "
        ),
        Param::SinceSeal,
        format!(
            " {k}): a head of a seal before {k} cannot vouch for this read, which did not \
             reach it (give the head of seal {k}, recorded when it was read, or of a later \
             one), or the store was rolled back or rewritten"
        )
    ];
    let outcome = AnchorOutcome {
        anchor: AnchorKind::Head,
        held: false,
        statement: detail.to_string(),
    };
    (
        outcome,
        Problem::new(ProblemKind::HeadNotFound, &seal_key(k), detail),
    )
}

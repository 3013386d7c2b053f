//! A witness store as an anchor ([`crate::audit::anchors::WitnessAnchor`]): what `--witness`
//! gives every read of sealed history and `verify`.

use std::sync::Arc;

use async_trait::async_trait;

use super::range::{check_range, RangeReport, RANGE_HELD};
use super::{check, WitnessProblem, WitnessReport};
use crate::audit::anchor_outcome::{AnchorKind, AnchorOutcome};
use crate::audit::anchors::WitnessAnchor;
use crate::audit::chain::Chain;
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::publish::AtomicPublisher;
use crate::read::SealRange;

/// A witness store, checked as an anchor.
pub struct Witness {
    store: Arc<dyn AtomicPublisher>,
}

impl Witness {
    /// The witness store `store` as an anchor.
    pub fn new(store: Arc<dyn AtomicPublisher>) -> Self {
        Self { store }
    }
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Witness({})", self.store.describe())
    }
}

#[async_trait]
impl WitnessAnchor for Witness {
    fn describe(&self) -> String {
        self.store.describe()
    }

    async fn judge(&self, chain: &Chain, store: &str) -> Result<(AnchorOutcome, Vec<Problem>)> {
        let r = check(chain, store, self.store.as_ref()).await?;
        Ok((outcome(&r), r.problems.iter().map(problem).collect()))
    }

    async fn judge_range(
        &self,
        range: &SealRange,
        store: &str,
    ) -> Result<(AnchorOutcome, Vec<Problem>)> {
        let r = check_range(range, store, self.store.as_ref()).await?;
        let problems = r.report.problems.iter().map(problem).collect();
        Ok((range_outcome(&r), problems))
    }
}

/// A witness check of the seals a read since a seal read, in words: what was checked
/// against them, and what was not (the records of seals before K, or after N).
pub(super) fn range_outcome(r: &RangeReport) -> AnchorOutcome {
    let w = &r.report;
    let (k, n) = (r.from, w.store_head_seq.unwrap_or(r.from));
    let id = w.store_id.as_deref().unwrap_or("(none)");
    let plural = |c: u64| if c == 1 { "" } else { "s" };
    let statement = if !w.is_clean() {
        format!(
            "witness {}: {} problem{} with its {} records of store {id}, judged on seals {k}-{n} (those read)",
            w.witness,
            w.problems.len(),
            plural(w.problems.len() as u64),
            w.records,
        )
    } else {
        let held = match r.checked {
            0 => format!(
                "no record of seals {k}-{n} (those read), so none checked and store id {id} (recorded at this location) not confirmed by this read"
            ),
            c => format!(
                "records of seals {k}-{n} {RANGE_HELD}{c} record{} of store {id} agree",
                plural(c)
            ),
        };
        let newest = w
            .newest_witnessed
            .as_ref()
            .map(|x| format!(" (newest witnessed: seal {} on {})", x.seq, x.witnessed_utc))
            .unwrap_or_default();
        let mut rest = String::new();
        if r.before > 0 {
            rest += &format!(
                "; {} record{} of seals before {k} not checked (vouched for by seal {k}'s digest)",
                r.before,
                plural(r.before)
            );
        }
        if r.after > 0 {
            rest += &format!(
                "; {} record{} of seals after {n} not checked (the read is as of seal {n})",
                r.after,
                plural(r.after)
            );
        }
        if w.unwitnessed_seals > 0 {
            rest += &format!(
                "; {} newer seal{} not witnessed yet",
                w.unwitnessed_seals,
                plural(w.unwitnessed_seals)
            );
        }
        format!("witness {}: {held}{newest}{rest}", w.witness)
    };
    AnchorOutcome {
        anchor: AnchorKind::Witness,
        held: w.is_clean(),
        statement,
    }
}

/// A witness check's outcome, in words.
pub fn outcome(r: &WitnessReport) -> AnchorOutcome {
    let statement = if !r.is_clean() {
        format!(
            "witness {}: {} problem{} with its {} records of store {}",
            r.witness,
            r.problems.len(),
            if r.problems.len() == 1 { "" } else { "s" },
            r.records,
            r.store_id.as_deref().unwrap_or("(none)")
        )
    } else {
        let newest = r
            .newest_witnessed
            .as_ref()
            .map(|w| format!(" (newest witnessed: seal {} on {})", w.seq, w.witnessed_utc))
            .unwrap_or_default();
        let later = match r.unwitnessed_seals {
            0 => String::new(),
            n => format!(
                "; {n} newer seal{} not witnessed yet",
                if n == 1 { "" } else { "s" }
            ),
        };
        format!(
            "witness {}: {} record{} of store {} agree{newest}{later}",
            r.witness,
            r.records,
            if r.records == 1 { "" } else { "s" },
            r.store_id.as_deref().unwrap_or("(none)")
        )
    };
    AnchorOutcome {
        anchor: AnchorKind::Witness,
        held: r.is_clean(),
        statement,
    }
}

/// A witness problem as a problem of the store.
fn problem(p: &WitnessProblem) -> Problem {
    let kind = serde_json::to_value(p.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Problem::new(
        ProblemKind::WitnessDisagrees,
        &p.key,
        format!("{kind}: {}", p.detail),
    )
}

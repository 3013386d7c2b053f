//! A witness store as an anchor ([`crate::audit::anchors::WitnessAnchor`]): what `--witness`
//! gives every read of sealed history and `verify`.

use std::sync::Arc;

use async_trait::async_trait;

use super::{check, WitnessProblem, WitnessReport};
use crate::audit::anchor_outcome::{AnchorKind, AnchorOutcome};
use crate::audit::anchors::WitnessAnchor;
use crate::audit::chain::Chain;
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::publish::AtomicPublisher;

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

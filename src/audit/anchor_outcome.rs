//! What became of each anchor ([`crate::audit::anchors`]), as every output states it: pure
//! data, which the verification's report carries.

use serde::{Deserialize, Serialize};

/// What a verdict is worth without any anchor: said wherever such a verdict is printed.
pub const UNANCHORED: &str =
    "internally consistent; no head, key or witness given: a rewrite or a cut-off would not show";

/// Which anchor an outcome is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnchorKind {
    /// A head digest kept outside the store.
    Head,
    /// The sealers' public keys (and the first seal that must be signed).
    Keys,
    /// A witness store's records of the store's heads.
    Witness,
    /// Outside witnesses' cosignatures of the newest checkpoint (`--witness-key`).
    WitnessKeys,
}

/// One anchor given, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnchorOutcome {
    /// Which anchor.
    pub anchor: AnchorKind,
    /// True when it held.
    pub held: bool,
    /// What was checked and found, in words ("expected head 5f1c… found at seal 5, the
    /// newest"; "seals 2-5 signed by key 032b… (given)"; "witness W: 5 records agree").
    pub statement: String,
}

impl AnchorKind {
    /// The snake_case name outputs use ("head", "keys", "witness").
    pub fn name(self) -> &'static str {
        match self {
            AnchorKind::Head => "head",
            AnchorKind::Keys => "keys",
            AnchorKind::Witness => "witness",
            AnchorKind::WitnessKeys => "witness_keys",
        }
    }
}

/// The outcomes in words, one per anchor (`anchor head held: …`), or [`UNANCHORED`] when
/// none was given.
pub(crate) fn outcome_lines(outcomes: &[AnchorOutcome]) -> Vec<String> {
    if outcomes.is_empty() {
        return vec![UNANCHORED.to_string()];
    }
    outcomes
        .iter()
        .map(|o| {
            let mark = if o.held { "held" } else { "FAILED" };
            format!("anchor {} {mark}: {}", o.anchor.name(), o.statement)
        })
        .collect()
}

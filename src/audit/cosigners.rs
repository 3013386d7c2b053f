//! The witness-key anchor: outside witnesses (`c2sp.org/tlog-witness`) whose verifier
//! keys an auditor holds, and how many of them must have cosigned the newest seal's
//! checkpoint (`--witness-key VKEY… [--witness-quorum K]` of every command that reads
//! sealed history; [`crate::audit::anchors::Anchors::witness_keys`]). A quorum of witnesses
//! that each saw the checkpoint, and checked it extends every checkpoint they saw of the
//! log before, is what shows the auditor sees the history everybody else sees (no split
//! view) without trusting the store's writers.
//!
//! Each key is looked up at its own name ([`keys::cosignature_key`]), so a cosignature
//! stored under another witness's name counts for nobody. The verdict names every key:
//! which cosigned and when (the witness's time), which did not and why (missing, or a
//! cosignature that does not verify, the latter a problem even when the quorum holds: a
//! forged cosignature was stored).

use serde::{Deserialize, Serialize};

use crate::audit::anchor_outcome::{AnchorKind, AnchorOutcome};
use crate::audit::findings::{Problem, ProblemKind, Report};
use crate::base::error::{Error, Result};
use crate::format::cosignature::{Cosigner, MAX_COSIGNED_BYTES};
use crate::format::keys;
use crate::history::cosignature::check_stored;
use crate::publish::AtomicPublisher;

/// The witness keys an auditor requires, and how many must hold.
#[derive(Debug, Clone, Default)]
pub struct WitnessKeys {
    /// The witnesses' cosigner keys.
    pub keys: Vec<Cosigner>,
    /// Cosignatures required; `None`: every key given.
    pub quorum: Option<usize>,
}

/// What one key was found to have done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyFound {
    /// The witness's key name.
    pub name: String,
    /// Its verifier key.
    pub vkey: String,
    /// Whether a valid cosignature of the newest checkpoint is stored.
    pub cosigned: bool,
    /// The witness's time of it (RFC 3339), when it verified; else why not.
    pub detail: String,
}

impl WitnessKeys {
    /// The quorum in effect: the one given, else every key.
    pub fn required(&self) -> usize {
        self.quorum.unwrap_or(self.keys.len())
    }

    /// Refuse a quorum of 0 or more than the keys given (a usage error, before any read).
    pub fn check(&self) -> Result<()> {
        let k = self.required();
        if k == 0 || k > self.keys.len() {
            return Err(Error::invalid(
                crate::base::param::Param::WitnessQuorum,
                crate::base::param::text![format!(
                    "{k}: must be from 1 to the number of witness keys given ({})",
                    self.keys.len()
                )],
            ));
        }
        Ok(())
    }

    /// Judge the newest seal's checkpoint: the outcome (held when at least the quorum of
    /// keys cosigned), each key's finding, and the problems (a cosignature that does not
    /// verify; a missing one when the quorum fails).
    pub async fn judge(
        &self,
        store: &dyn AtomicPublisher,
    ) -> Result<(AnchorOutcome, Vec<KeyFound>, Vec<Problem>)> {
        let fail = |statement: String| AnchorOutcome {
            anchor: AnchorKind::WitnessKeys,
            held: false,
            statement,
        };
        let heads = crate::history::head::find(store).await?;
        let Some(newest) = heads.newest() else {
            return Ok((
                fail("the store has no seals".into()),
                Vec::new(),
                Vec::new(),
            ));
        };
        let seq = newest.key_seq;
        let Some(note) = newest.seal.as_ref().ok().and_then(|s| s.checkpoint.clone()) else {
            let why = format!(
                "the newest seal {seq} carries no checkpoint (unsigned, or unreadable): nothing a witness could cosign"
            );
            let p = Problem::new(ProblemKind::BadCosignature, &newest.key, why.clone());
            return Ok((fail(why), Vec::new(), vec![p]));
        };
        let mut found = Vec::new();
        let mut problems = Vec::new();
        let mut missing = Vec::new();
        for c in &self.keys {
            let key = keys::cosignature_key(seq, &c.vkey());
            let (cosigned, detail) = match read(store, &key).await? {
                None => {
                    let why = format!(
                        "no cosignature by witness {} of seal {seq}, the newest",
                        c.name
                    );
                    missing.push(Problem::new(ProblemKind::BadCosignature, &key, why));
                    (false, format!("no cosignature stored ({key})"))
                }
                Some(text) => match check_stored(&text, &note, c) {
                    Ok(t) => (true, crate::base::time::posix_utc(t)),
                    Err(why) => {
                        let said = format!("the cosignature by {} of seal {seq}: {why}", c.name);
                        problems.push(Problem::new(ProblemKind::BadCosignature, &key, said));
                        (false, why)
                    }
                },
            };
            found.push(KeyFound {
                name: c.name.clone(),
                vkey: c.vkey(),
                cosigned,
                detail,
            });
        }
        let valid = found.iter().filter(|f| f.cosigned).count();
        let need = self.required();
        let held = valid >= need;
        if !held {
            problems.extend(missing);
        }
        let each: Vec<String> = found
            .iter()
            .map(|f| match f.cosigned {
                true => format!("{} cosigned at {}", f.name, f.detail),
                false => format!("{} did NOT: {}", f.name, f.detail),
            })
            .collect();
        let outcome = AnchorOutcome {
            anchor: AnchorKind::WitnessKeys,
            held: held && problems.is_empty(),
            statement: format!(
                "seal {seq}'s checkpoint cosigned by {valid} of {} witness keys (quorum {need}): {}",
                self.keys.len(),
                each.join("; ")
            ),
        };
        Ok((outcome, found, problems))
    }
}

impl WitnessKeys {
    /// [`Self::judge`] into `report` (its anchors and problems, the verdict settled again):
    /// each key's finding.
    pub async fn judge_into(
        &self,
        store: &dyn AtomicPublisher,
        report: &mut Report,
    ) -> Result<Vec<KeyFound>> {
        let (outcome, found, problems) = self.judge(store).await?;
        report.anchors.push(outcome);
        report.problems.extend(problems);
        report.settle();
        Ok(found)
    }
}

/// A stored cosigned checkpoint as text; a larger one than any is read as "not one".
async fn read(store: &dyn AtomicPublisher, key: &str) -> Result<Option<String>> {
    match store.get_at_most(key, MAX_COSIGNED_BYTES).await {
        Ok(b) => Ok(b.map(|b| String::from_utf8_lossy(&b).into_owned())),
        Err(Error::TooLarge { size, .. }) => Ok(Some(format!("{size} bytes"))),
        Err(e) => Err(e),
    }
}

//! What `repair` is asked to do, and what it did.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::audit::repair::adoption::Adoption;

/// What `repair` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepairOutcome {
    /// Pointers written (keys), one per adopted part.
    pub adopted: Vec<String>,
    /// Orphans left alone, with why (part key, reason): not well-formed, not at their
    /// place, of another store, or named for adoption but not adoptable.
    pub refused: Vec<(String, String)>,
    /// Well-formed orphans not named for adoption, left alone and listed (part key, what
    /// it is): `verify` reports each as `orphan_part` until it is adopted or removed.
    pub orphans: Vec<(String, String)>,
    /// Orphans within the grace period, or whose pointer appeared meanwhile.
    pub in_flight: u64,
    /// Objects restored byte-identical from the `from` store (keys; with `dry_run`, what
    /// would be).
    pub restored: Vec<String>,
    /// Objects the store's records prove existed that are gone and were not restored, with
    /// why and how to restore them (key, detail).
    pub missing: Vec<(String, String)>,
}

impl RepairOutcome {
    /// True when nothing was refused, no orphan was left alone and nothing is still
    /// missing.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty() && self.orphans.is_empty() && self.missing.is_empty()
    }
}

/// How `repair` runs.
#[derive(Debug, Clone)]
pub struct RepairOptions {
    /// The repairer's time.
    pub now: DateTime<Utc>,
    /// Orphans whose content says they are younger than this are left alone.
    pub grace: Duration,
    /// Only say what would be adopted or restored.
    pub dry_run: bool,
    /// Which orphan parts to adopt (by default none: they are listed).
    pub adopt: Adoption,
    /// The sha256 of the newest seal, known outside the store (an auditor's note, a
    /// witness): with a `from` store, the seals after the store's newest one up to the one
    /// with this digest are restored, the newest checked against it and each before it
    /// against the `prev_sha256` of the one after. Without it nothing in the store records
    /// the newest seals' digests, so they are never restored.
    pub expect_head: Option<String>,
    /// Writer public keys (`--writer-key`): when any is given, an orphan part is adopted
    /// only when its footer's writer signature verifies under one of them over its bytes
    /// as they are ([`crate::parts::writer_sig`]); any other is refused, naming why
    /// (unsigned, unknown key, bad signature, bytes changed).
    pub writer_keys: Vec<ed25519_dalek::VerifyingKey>,
}

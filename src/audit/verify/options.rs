//! How to verify: [`VerifyOptions`], and the shard of a sharded verify ([`ShardSpec`]).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};

use crate::audit::findings::Progress;
use crate::base::clock::{Clock, SystemClock};
use crate::base::digest::Check;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::history::pointers::READ_CONCURRENCY;

/// Default grace period for temps and orphans: far longer than any publish takes.
pub(crate) const DEFAULT_GRACE_MINUTES: i64 = 15;

/// How to verify.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// "Now", for the grace period.
    pub now: DateTime<Utc>,
    /// Temps and well-formed pointerless parts whose content says they were made within
    /// this period are in flight, not problems.
    pub grace: Duration,
    /// Hash only this many randomly chosen parts (existence, size and footer of all
    /// parts are still checked).
    pub sample: Option<usize>,
    /// Seed of the sample (random when `None`; reported, so a sample can be repeated).
    pub sample_seed: Option<u64>,
    /// Skip hashing parts of commits sealed by this seal or earlier whose pointers are
    /// unchanged; `Some(None)` means the newest seal.
    pub since_seal: Option<Option<u64>>,
    /// Every signed seal must verify under one of these keys (old and new during a key
    /// rotation); with any given, every seal from [`Self::signed_from`] (default: seal 1)
    /// must be signed.
    pub public_keys: Vec<VerifyingKey>,
    /// Seals before this one may be unsigned; this one and every later one must be signed.
    pub signed_from: Option<u64>,
    /// A head digest kept outside the store; some seal must have it.
    pub expect_head: Option<String>,
    /// Trust what [`Self::expect_head`] covers (an earlier verify checked it): show by an
    /// RFC 9162 consistency proof from the hash tiles that the newest seal's tree extends
    /// that seal's, and read only the seals from it on and the commits after it
    /// ([`crate::audit::verify::from_head`]).
    pub trust_expected_head: bool,
    /// Progress counters to update.
    pub progress: Option<Arc<Progress>>,
    /// Objects read at once.
    pub concurrency: usize,
    /// Check only this shard of the store ([`crate::audit::verify::shard`]).
    pub shard: Option<ShardSpec>,
    /// Cut the shards from the commits of this seal (default: the newest).
    pub plan_seal: Option<u64>,
    /// Which recorded digests of each hashed part to recompute.
    pub digest: Check,
    /// Accept the commits `repair` adopted that no anchor covers (sealed after the seal of
    /// [`Self::expect_head`], or all of them without it): reported as accepted, not as
    /// `adopted_commit` problems.
    pub accept_adopted: bool,
    /// The roots the seals' RFC 3161 tokens must chain to; `None`: the tokens are listed,
    /// unchecked ([`crate::audit::findings::Report::seal_times`]).
    pub tsa_roots: Option<crate::format::timestamp::Roots>,
}

impl VerifyOptions {
    /// The head and key anchors these options carry (the witness is checked beside
    /// `verify`, by its caller).
    pub fn anchors(&self) -> crate::audit::anchors::Anchors {
        crate::audit::anchors::Anchors {
            expect_head: self.expect_head.clone(),
            public_keys: self.public_keys.clone(),
            signed_from: self.signed_from,
            witness: None,
            witness_keys: None,
        }
    }

    /// These options with the head and key anchors of `a` (its witness is checked beside
    /// `verify`, by the caller).
    pub fn with_anchors(self, a: &crate::audit::anchors::Anchors) -> Self {
        Self {
            expect_head: a.expect_head.clone(),
            public_keys: a.public_keys.clone(),
            signed_from: a.signed_from,
            ..self
        }
    }

    /// The signature rules these options ask for.
    pub fn trust(&self) -> crate::history::seal::Trust {
        crate::history::seal::Trust {
            keys: self.public_keys.clone(),
            signed_from: self.signed_from,
        }
    }
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            now: SystemClock.now(),
            grace: Duration::minutes(DEFAULT_GRACE_MINUTES),
            sample: None,
            sample_seed: None,
            since_seal: None,
            public_keys: Vec::new(),
            signed_from: None,
            expect_head: None,
            trust_expected_head: false,
            progress: None,
            concurrency: READ_CONCURRENCY,
            shard: None,
            plan_seal: None,
            digest: Check::default(),
            accept_adopted: false,
            tsa_roots: None,
        }
    }
}

/// `i/n`: shard i (from 0) of n.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards.
    pub count: u32,
}

impl std::str::FromStr for ShardSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                Param::Shard,
                text![format!("{s:?}: expected I/N with 0 <= I < N, e.g. 0/4")],
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }
}

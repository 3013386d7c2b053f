//! What the history checks look at.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};

use crate::audit::chain::Chain;
use crate::audit::verify::shard::Scope;
use crate::format::pointer::Pointer;

/// What the history checks look at.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    /// The walked chain.
    pub chain: &'a Chain,
    /// Pointers read by this verify (this shard's), parsed.
    pub pointers: HashMap<&'a str, &'a Pointer>,
    /// Every pointer key listed by this verify, parseable or not.
    pub pointer_keys: HashSet<&'a str>,
    /// "Now", for the grace period.
    pub now: DateTime<Utc>,
    /// Younger commits and seals are in flight.
    pub grace: Duration,
    /// The shard, when verifying one.
    pub scope: Option<&'a Scope>,
    /// The roots the seals' RFC 3161 tokens must chain to (`--tsa-root`); without, the
    /// tokens are listed unchecked.
    pub tsa_roots: Option<&'a crate::format::timestamp::Roots>,
}

impl Context<'_> {
    /// Whether this verify (this shard) checks pointer `k`.
    pub(super) fn owns_pointer(&self, k: &str) -> bool {
        self.scope.is_none_or(|s| s.owns_pointer(k))
    }
    /// Whether this verify checks what only one shard checks.
    pub(super) fn first(&self) -> bool {
        self.scope.is_none_or(Scope::first)
    }
    /// Whether time `t` is older than the grace period (or unknown).
    pub(super) fn old(&self, t: Option<DateTime<Utc>>) -> bool {
        t.is_none_or(|t| t <= self.now - self.grace)
    }
}

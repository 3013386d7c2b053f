//! `lineage replicate`: copy a store into another store, on any backend, so that the copy
//! (the replica) holds the same bytes under the same keys, verifies on its own, and has
//! the same seals (so the same Merkle roots and head digests) as its source.
//!
//! One pass ([`Replicator::pass`]):
//! 1. walk the source's seal chain, then list both stores (the chain first, as `verify`
//!    does: every pointer a seal names existed before the listing);
//! 2. **commits**, `concurrency` at a time: read the source pointer (it must parse, agree
//!    with its key, and, when sealed, still have the sealed digest), then its part, which
//!    must have the pointer's size and sha256 before it is published; then the pointer;
//! 3. **claims** of commit keys; 4. **seals**, one after another in sequence order, each
//!    only when the source chain checks out up to it and every pointer it covers is at the
//!    destination with the sealed digest; 5. `_lineage/` objects this version does not
//!    know, verbatim ([`kinds`] holds the order and how to add a kind).
//!
//! Every publish is create-only ([`crate::writer::publish_checked`]: an ambiguous answer is
//! read back). An object already at the destination with the same bytes is accepted; with
//! other bytes it is a [`Conflict`] naming both digests, nothing is overwritten, and
//! nothing that would name it is published. A part already at the destination is hashed
//! before a pointer is published over it, unless its pointer is already there, identical
//! (an earlier run established the pair). Source objects that fail their checks are
//! refused, not copied, and reported ([`Summary::refused`]), as is everything that names
//! them. Objects in flight at the source (temps, parts whose pointer has not landed) and
//! foreign objects are skipped and reported ([`Summary::skipped`]).
//!
//! Memory: the listings of both stores, and one part per worker (a part is published in
//! one create-only PUT, so it is read whole, at most `concurrency` at a time).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::error::Result;
use crate::publish::AtomicPublisher;

pub mod compare;
mod history;
pub mod kinds;
mod pass;
pub mod stop;

pub use stop::Stop;

/// Default number of objects copied at once.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Called after each object this run created at the destination, with how many it has
/// created so far (from 1) and the key. The CLI's test hook uses it to hold the process
/// at a chosen point; it may await.
pub type PublishHook = Arc<dyn Fn(u64, String) -> BoxFuture<'static, ()> + Send + Sync>;

/// How to replicate.
#[derive(Clone)]
pub struct ReplicateOptions {
    /// Objects copied at once (at least 1).
    pub concurrency: usize,
    /// Live counters for a progress display.
    pub progress: Option<Arc<Progress>>,
    /// Once requested: start nothing new, finish what is in flight.
    pub stop: Stop,
    /// See [`PublishHook`].
    pub on_published: Option<PublishHook>,
}

impl std::fmt::Debug for ReplicateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicateOptions")
            .field("concurrency", &self.concurrency)
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl Default for ReplicateOptions {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            progress: None,
            stop: Stop::new(),
            on_published: None,
        }
    }
}

/// Live counters of one pass (reset at its start).
#[derive(Debug, Default)]
pub struct Progress {
    /// Objects the pass looks at.
    pub objects_total: AtomicU64,
    /// Objects done (copied, present, refused or skipped).
    pub objects_done: AtomicU64,
    /// Bytes of the parts the destination lacks.
    pub bytes_total: AtomicU64,
    /// Bytes copied.
    pub bytes_done: AtomicU64,
}

/// Objects copied, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// Objects created at the destination.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Data parts.
    pub parts: u64,
    /// Commit pointers.
    pub pointers: u64,
    /// Commit-key claims.
    pub claims: u64,
    /// Seals.
    pub seals: u64,
    /// `_lineage/` objects of kinds this version does not know.
    pub other: u64,
}

/// An object not copied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotCopied {
    /// The object's key.
    pub key: String,
    /// Why.
    pub reason: String,
}

/// A key the destination holds with other bytes than the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The object's key.
    pub key: String,
    /// sha256 of the source's object (`None`: the source has no such object).
    pub source_sha256: Option<String>,
    /// sha256 of the destination's object.
    pub destination_sha256: String,
}

/// A seal named by sequence number and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    /// Sequence number.
    pub seq: u64,
    /// sha256 of its bytes.
    pub sha256: String,
}

/// What replication did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// The source.
    pub from: String,
    /// The destination.
    pub to: String,
    /// What was created at the destination (all passes).
    pub copied: Copied,
    /// Objects already at the destination with the same bytes (last pass).
    pub already_present: u64,
    /// Not copied and not a problem: objects in flight at the source, foreign objects (last
    /// pass).
    pub skipped: Vec<NotCopied>,
    /// Not copied because the source object, or one it names, failed its check (last
    /// pass). Nothing that names a refused object is copied either.
    pub refused: Vec<NotCopied>,
    /// Keys the destination holds with other bytes (nothing was overwritten).
    pub conflicts: Vec<Conflict>,
    /// The source's newest seal.
    pub source_head: Option<Head>,
    /// The newest seal the destination holds in agreement with the source.
    pub destination_head: Option<Head>,
    /// Passes run (1 without `--follow`).
    pub passes: u64,
    /// A stop was requested before the last pass finished.
    pub stopped: bool,
}

impl Summary {
    /// True when the destination holds everything the source had to give: nothing
    /// refused, no conflict, not stopped early.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty() && self.conflicts.is_empty() && !self.stopped
    }

    /// Fold the next pass into a running total.
    fn absorb(&mut self, next: Summary) {
        let c = &mut self.copied;
        let n = &next.copied;
        c.objects += n.objects;
        c.bytes += n.bytes;
        c.parts += n.parts;
        c.pointers += n.pointers;
        c.claims += n.claims;
        c.seals += n.seals;
        c.other += n.other;
        self.from = next.from;
        self.to = next.to;
        self.already_present = next.already_present;
        self.skipped = next.skipped;
        self.refused = next.refused;
        self.conflicts.extend(next.conflicts);
        self.source_head = next.source_head;
        self.destination_head = next.destination_head;
        self.passes += next.passes;
        self.stopped = next.stopped;
    }
}

/// Copies one store into another, pass after pass. Between passes it remembers which
/// keys are settled (present at both sides with the same bytes), so a later pass reads
/// only what is new (every pass still lists both stores and walks the source chain).
#[derive(Debug)]
pub struct Replicator {
    src: Arc<dyn AtomicPublisher>,
    dst: Arc<dyn AtomicPublisher>,
    opts: ReplicateOptions,
    /// Settled key → sha256 of its bytes (pointers' digests are needed for seals).
    settled: HashMap<String, String>,
    /// Objects created by this replicator so far (for the hook).
    created: Arc<AtomicU64>,
}

impl Replicator {
    /// A replicator from `src` to `dst`.
    pub fn new(
        src: Arc<dyn AtomicPublisher>,
        dst: Arc<dyn AtomicPublisher>,
        opts: ReplicateOptions,
    ) -> Self {
        Self {
            src,
            dst,
            opts,
            settled: HashMap::new(),
            created: Arc::new(AtomicU64::new(0)),
        }
    }

    /// One pass: copy everything the destination lacks (see the module docs).
    pub async fn pass(&mut self) -> Result<Summary> {
        pass::run(self).await
    }
}

/// The snake_case name `verify` prints for a problem kind (used where a chain problem is
/// the reason for a refusal).
pub fn problem_name(k: crate::audit::verify::ProblemKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{k:?}"))
}

/// Copy everything `dst` lacks from `src`, once.
pub async fn replicate(
    src: Arc<dyn AtomicPublisher>,
    dst: Arc<dyn AtomicPublisher>,
    opts: ReplicateOptions,
) -> Result<Summary> {
    Replicator::new(src, dst, opts).pass().await
}

/// Replicate, then again every `interval`, until a stop is requested (or a pass finds a
/// conflict, which needs a person). `on_pass` sees each pass's own summary. Returns the
/// running total.
pub async fn follow(
    src: Arc<dyn AtomicPublisher>,
    dst: Arc<dyn AtomicPublisher>,
    opts: ReplicateOptions,
    interval: std::time::Duration,
    mut on_pass: impl FnMut(&Summary),
) -> Result<Summary> {
    let stop = opts.stop.clone();
    let mut r = Replicator::new(src, dst, opts);
    let mut total = Summary::default();
    loop {
        let pass = r.pass().await?;
        on_pass(&pass);
        let conflicted = !pass.conflicts.is_empty();
        total.absorb(pass);
        if conflicted || total.stopped {
            return Ok(total);
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = stop.wait() => {
                total.stopped = true;
                return Ok(total);
            }
        }
    }
}

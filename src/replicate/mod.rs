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
//!    know, verbatim ([`kinds`] holds the order and how to add a kind); 6. when the source
//!    has Iceberg metadata (`seal --iceberg`), the destination's own
//!    ([`crate::history::iceberg::complete_table`] at the destination, up to the newest
//!    seal both hold that the source has a metadata file for): Iceberg paths are
//!    absolute, so the source's would name the source's parts, and is never copied.
//!
//! Every publish is create-only ([`crate::publish::checked::publish_checked`]: an ambiguous answer is
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

use std::sync::Arc;

use crate::base::error::Result;
use crate::publish::AtomicPublisher;

pub mod compare;
mod hold;
pub mod kinds;
mod replicator;
pub mod stop;
pub(crate) mod types;

pub use replicator::Replicator;
pub use stop::Stop;
pub use types::{
    Conflict, Copied, Head, IcebergWritten, NotCopied, Progress, PublishHook, ReplicateOptions,
    Summary, DEFAULT_CONCURRENCY,
};

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

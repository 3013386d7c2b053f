//! `verify`: every pointer's part is present, byte-identical and carries the right footer;
//! the seal chain is intact and covers its pointers; everything else in the store is
//! accounted for (orphans, foreign objects, stale temps, corrupt pointers).
//!
//! # One pipeline, two strategies
//!
//! Every verification runs the same steps ([`verify_with`]): **list** what to look at and
//! **classify** it, read the **pointers** ([`pointers`]), **check** their parts
//! ([`parts`]), and **report** (problems sorted, verdict in words). What is listed and
//! what else is checked between the steps is the strategy's:
//! - [`full`]: the seal chain and the whole store (or one shard of it, [`shard`]), the
//!   history objects ([`history`]) and the parts no pointer names ([`flight`]);
//! - [`since`] (`--since-seal`): only the seals, pointers and index entries after a seal,
//!   in O(new + log n) requests; with `--trust-expected-head` ([`from_head`]) from the
//!   expected head's seal, what it covers shown by a consistency proof instead of read.
//!
//! Commits `repair` adopted are listed, and each one the auditor's anchor does not cover
//! is a problem unless the auditor accepts it ([`adopted`]).
//!
//! Safe while appends run: the writer publishes a part, then its pointer, and a POSIX
//! publish goes through a temp. A well-formed part without a pointer, or a temp, whose
//! *content* says it was made within [`VerifyOptions::grace`] is named as in flight
//! rather than reported (see [`flight`]: never judged by modification time), and an
//! orphan candidate's pointer is looked up again after the scan (it may have landed since
//! the listing). A pointer whose part was not in the listing is looked up again likewise.

pub(crate) mod adopted;
mod compaction;
mod delta;
mod delta_checkpoint;
pub(crate) mod flight;
mod from_head;
mod full;
pub(crate) mod history;
mod iceberg;
pub(crate) mod options;
mod parts;
mod pipeline;
mod planted;
pub mod platform;
mod pointers;
pub mod report_dir;
pub mod shard;
mod since;
mod since_log;

use crate::audit::findings::Report;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::publish::AtomicPublisher;

pub(crate) use delta::{versions_agree, versions_agree_since};
pub(crate) use options::VerifyOptions;

/// Verify the whole store with default options.
pub async fn verify(store: &dyn AtomicPublisher) -> Result<Report> {
    verify_with(store, &VerifyOptions::default()).await
}

/// Verify the store: everything, one shard ([`VerifyOptions::shard`]), or only what is new
/// since a seal ([`VerifyOptions::since_seal`]; a store whose newest seal is of an earlier
/// format, with no index to list from, gets a full verify).
pub async fn verify_with(store: &dyn AtomicPublisher, opts: &VerifyOptions) -> Result<Report> {
    if opts.trust_expected_head {
        if opts.since_seal.is_some() || opts.shard.is_some() || opts.tsa_roots.is_some() {
            return Err(Error::invalid(
                Param::TrustExpectedHead,
                text![
                    "checks from the expected head's seal on: leave out ",
                    Param::SinceSeal,
                    ", ",
                    Param::Shard,
                    " and ",
                    Param::TsaRoot
                ],
            ));
        }
        if let Some(s) = since::Since::from_head(store, opts).await? {
            return pipeline::run(store, opts, s).await;
        }
        return pipeline::run(store, opts, full::Full::default()).await;
    }
    if opts.since_seal.is_some() {
        if let Some(s) = since::Since::plan(store, opts).await? {
            return pipeline::run(store, opts, s).await;
        }
    }
    pipeline::run(store, opts, full::Full::default()).await
}

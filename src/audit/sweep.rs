//! `sweep`: remove stale temps, the startup sweep the design note asks for.
//!
//! Only objects the layout classifies as temps are touched ([`AtomicPublisher::delete_temp`]
//! refuses anything else). By default only temps older than `older_than` (at least a
//! minute) go: a temp is kept while *any* time it carries is recent, the creation time in
//! its name ([`crate::format::keys::temp_name`]) or its modification time (a temp still being
//! written is modified continuously and published within moments of its last write), and
//! kept when it carries no time at all. Sweeping is about not breaking a running writer
//! (whose publish would then fail); judging temps for an audit is `verify`'s job, which
//! trusts only the name.
//!
//! After a crash, an operator who has stopped every writer can remove every temp at once
//! with [`sweep_all`] (`lineage sweep --i-know-no-writer-is-running`).
//!
//! lineage-store publishes every object with one create-only PUT and never starts a
//! multipart upload, so on object stores there are no incomplete uploads of its own to
//! abort; the trait therefore has no such operation.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::publish::AtomicPublisher;

/// Shortest accepted age: anything younger may belong to a publish in progress.
pub(crate) const MIN_OLDER_THAN_SECONDS: i64 = 60;

/// What `sweep` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SweepOutcome {
    /// Temps removed (or, with a dry run, that would be).
    pub removed: Vec<String>,
    /// Bytes they held.
    pub bytes: u64,
    /// Temps kept because they are recent (or their age is unknown).
    pub kept: u64,
    /// Temps not removed, each with why: a directory on the way was swapped for a symlink
    /// since the listing (nothing is ever deleted through one), or the removal failed.
    pub refused: Vec<String>,
}

/// Remove temps older than `older_than` (at least a minute) relative to `now`.
pub async fn sweep(
    store: &dyn AtomicPublisher,
    now: DateTime<Utc>,
    older_than: Duration,
    dry_run: bool,
) -> Result<SweepOutcome> {
    if older_than < Duration::seconds(MIN_OLDER_THAN_SECONDS) {
        return Err(Error::invalid(
            Param::OlderThan,
            text![format!("must be at least {MIN_OLDER_THAN_SECONDS}s: a younger temp may belong to a publish in progress; \
             after stopping every writer, `lineage sweep --i-know-no-writer-is-running` removes every temp at once")],
        ));
    }
    let cutoff = now - older_than;
    sweep_where(store, dry_run, |o| {
        let named = keys::parse_temp_name(o.key.rsplit('/').next().unwrap_or(&o.key))
            .and_then(|n| n.created);
        let times = [named, o.modified];
        times.iter().any(Option::is_some) && times.iter().flatten().all(|t| *t <= cutoff)
    })
    .await
}

/// Remove every temp, whatever its age: for an operator who knows that no writer is
/// running (say, after stopping the job that crashed). A temp of a running publish would
/// be removed too, and that publish would fail (cleanly: nothing partial is published).
pub async fn sweep_all(store: &dyn AtomicPublisher, dry_run: bool) -> Result<SweepOutcome> {
    sweep_where(store, dry_run, |_| true).await
}

async fn sweep_where(
    store: &dyn AtomicPublisher,
    dry_run: bool,
    stale: impl Fn(&crate::publish::ObjectInfo) -> bool,
) -> Result<SweepOutcome> {
    let mut out = SweepOutcome::default();
    for o in store.list("").await? {
        // A symlink named like a temp is not one of ours: `verify` reports it.
        if o.link.is_some() || keys::classify(&o.key) != KeyKind::Temp {
            continue;
        }
        if !stale(&o) {
            out.kept += 1;
            continue;
        }
        if !dry_run {
            match store.delete_temp(&o.key).await {
                Ok(()) => tracing::info!(key = %o.key, "removed stale temp"),
                // One hostile directory does not stop the sweep of the others.
                Err(e @ Error::Symlink { .. }) => {
                    out.refused.push(format!("{}: {e}", o.key));
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        out.bytes += o.size;
        out.removed.push(o.key);
    }
    Ok(out)
}

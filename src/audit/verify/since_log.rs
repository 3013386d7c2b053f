//! What `verify --since-seal` checks of the Delta log and the compactions beside the
//! versions of the seals since SEQ ([`super::delta::check_since`]): everything under
//! `_delta_log/` from version SEQ−1 on (one listing that starts there on the server),
//! and the compactions the seals since SEQ put into effect.
//!
//! - a version no seal has (a planted version N+1): `bad_delta_version`;
//! - anything under `_delta_log/` that is not ours (`_last_checkpoint`, a multi-part
//!   checkpoint, a planted file): `unknown_delta_object`;
//! - a checkpoint of a version from SEQ−1 on (rewritten, planted, of a future version):
//!   judged against the replay of the versions it covers, as a full verify judges it
//!   (`bad_delta_checkpoint`; this reads the versions 0..=N);
//! - when a seal since SEQ puts compactions into effect: the chain is walked and every
//!   record in effect read (a commit held by two compactions is `compacted_twice`), and
//!   the records of the seals since SEQ checked as a full verify checks them, their
//!   compacted parts' rows recounted from both sides (`bad_compaction_record`,
//!   `bad_compacted_part`, `compaction_rows_differ`);
//! - the Iceberg metadata ([`iceberg::check_since`]): the objects of the seals from SEQ
//!   on against the seals, anything under `_iceberg/` not ours by name, and the table
//!   location (`bad_iceberg_object`, `missing_iceberg_object`, `unknown_iceberg_object`,
//!   `iceberg_location_mismatch`).

use std::collections::{BTreeMap, HashMap};

use crate::audit::chain;
use crate::audit::findings::Report;
use crate::audit::verify::compaction;
use crate::audit::verify::delta::{foreign_objects, unsealed_versions};
use crate::audit::verify::delta_checkpoint;
use crate::audit::verify::flight::Window;
use crate::audit::verify::iceberg;
use crate::audit::verify::options::VerifyOptions;
use crate::base::error::Result;
use crate::format::keys::{self, KeyKind, DELTA_LOG_PREFIX};
use crate::history::seal::StoredSeal;
use crate::publish::{list_pages, AtomicPublisher, ObjectInfo};

/// Check the Delta log from version `since − 1` on, and the compactions of `seals` (the
/// seals from `since` to the newest, `newest`), into `report`.
pub(crate) async fn check(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    (since, newest): (u64, u64),
    seals: &[StoredSeal],
    report: &mut Report,
) -> Result<()> {
    // Every key of version since−1 and later (its checkpoint sorts before its version,
    // both after this prefix of theirs), and every name sorting after the digits.
    let after = format!("{DELTA_LOG_PREFIX}{:020}", since.saturating_sub(1));
    let listed = list_pages(store, DELTA_LOG_PREFIX, &after, None).await?;
    let mut versions: BTreeMap<u64, &ObjectInfo> = BTreeMap::new();
    let mut checkpoints: BTreeMap<u64, &ObjectInfo> = BTreeMap::new();
    let mut others = Vec::new();
    for o in &listed {
        match keys::classify(&o.key) {
            KeyKind::DeltaVersion(v) => {
                versions.insert(v, o);
            }
            KeyKind::DeltaCheckpoint(v) => {
                checkpoints.insert(v, o);
            }
            KeyKind::Temp => {}
            _ => others.push(o),
        }
    }
    report.problems.extend(foreign_objects(&others));
    report
        .problems
        .extend(unsealed_versions(store, &versions, newest).await?);
    report
        .problems
        .extend(delta_checkpoint::check(store, &checkpoints).await?);
    check_compactions(store, opts, since, seals, report).await?;
    // The Iceberg objects of the seals from SEQ on, and what is not ours under `_iceberg/`.
    report
        .problems
        .extend(iceberg::check_since(store, since, newest).await?);
    Ok(())
}

/// The compactions the seals from `since` on put into effect, when there are any.
async fn check_compactions(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    since: u64,
    seals: &[StoredSeal],
    report: &mut Report,
) -> Result<()> {
    let any = seals
        .iter()
        .filter_map(|s| s.seal.as_ref().ok())
        .any(|s| s.compactions.as_ref().is_some_and(|c| !c.is_empty()));
    if !any {
        return Ok(());
    }
    let chain = chain::walk(store, Some(&opts.trust())).await?;
    let sealed = HashMap::new();
    let cx = compaction::Context {
        chain: &chain,
        sealed: &sealed,
        listed: Vec::new(),
        versions: Vec::new(),
        all_pointers: false,
        window: Window {
            now: opts.now,
            grace: opts.grace,
        },
        from_seal: since,
    };
    let found = compaction::check(store, &cx).await?;
    report.problems.extend(found.problems);
    Ok(())
}

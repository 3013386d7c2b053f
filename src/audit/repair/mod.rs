//! `repair`: put back what a crash or a deletion took, without ever writing history the
//! store's own records contradict.
//!
//! **Adopting** an orphan part (a crash between part and pointer, or a part planted by
//! anyone who can write: nothing in the store tells which) writes its pointer from the
//! part's own footer and columns, create-only, marked `"adopted": true` (a mark the seal
//! that seals it repeats, and every output shows). A part is adopted only when all of
//! these hold:
//!
//! - it is asked for by name ([`Adoption`]): orphans not asked for are listed, not
//!   adopted;
//! - no seal, index entry or leaf locator names its pointer: those prove the commit *had* a
//!   pointer, and a pointer written now would differ from it (another `committed_utc`,
//!   `adopted`), which a seal reports as `sealed_pointer_changed` forever. Such a pointer is
//!   reported missing, with how to restore it (`--from`);
//! - its footer names this store (`lineage_store_id`, parts written since part encoding 3),
//!   so a well-formed part copied in from another store is never adopted. A part that names
//!   no store (written before parts did) is adopted only with [`Adoption::unidentified`]:
//!   nothing in it can tell this store's part from another's;
//! - its footer carries its file name's commit id and a registered schema version, its
//!   Arrow schema is the contract, and its `run_id`/`target_crs` values all match its path;
//! - its content says it was made longer ago than the grace period (the UUIDv7 time of the
//!   commit id, or the claim time of a commit key; never the modification time, see
//!   [`crate::audit::verify::flight`]): its writer may still publish the pointer itself.
//!
//! **Restoring** (`from`: a replica or a backup of this store) copies back, byte-identical
//! and create-only, what the store's records prove is missing, each checked before it is
//! published: a seal against the `prev_sha256` of the seal after it, a sealed pointer
//! against the digest its seal records, a pointer only an index entry names against the
//! index entry (same commit, run and time) and against its part, a part against the sha256,
//! BLAKE3 and size its pointer records. The other store must have this store's identity.
//!
//! **Delta versions** the log lacks are written again, create-only, with or without
//! `from`: a version is a pure function of its seal, the pointers it seals and their
//! parts' footers ([`crate::history::delta_restore::restore_missing`]), so once those are back the
//! rebuilt bytes are the bytes that were there; a version whose parts are still missing is
//! reported, not written.

mod adopt;
pub(crate) mod adoption;
mod metadata;
pub(crate) mod options;
mod restore;
mod writer_filter;

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, Utc};

use crate::audit::chain;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::identity::StoreIdentity;
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::history::identity::read_identity;
use crate::publish::{require_objects, AtomicPublisher, ObjectInfo};

pub use adoption::Adoption;
pub use options::{RepairOptions, RepairOutcome};

/// Adopt the orphan parts `adopt` names that are older than `grace` (relative to `now`),
/// and list the others. With `dry_run`, only say what would be adopted. See
/// [`repair_with`].
pub async fn repair(
    store: &dyn AtomicPublisher,
    now: DateTime<Utc>,
    grace: Duration,
    adopt: &Adoption,
    dry_run: bool,
) -> Result<RepairOutcome> {
    let opts = RepairOptions {
        now,
        grace,
        dry_run,
        adopt: adopt.clone(),
        expect_head: None,
        writer_keys: Vec::new(),
    };
    repair_with(store, None, &opts).await
}

/// Restore what `from` (a replica or backup of this store) holds of what the store's
/// records prove is missing, then adopt the orphan parts [`RepairOptions::adopt`] names
/// and list the others (see the module documentation for every rule).
pub async fn repair_with(
    store: &dyn AtomicPublisher,
    from: Option<&dyn AtomicPublisher>,
    opts: &RepairOptions,
) -> Result<RepairOutcome> {
    opts.adopt.check()?;
    require_objects(store).await?;
    let identity = read_identity(store).await?;
    let mut out = RepairOutcome::default();
    let mut restored_pointers: HashSet<String> = HashSet::new();
    if let Some(src) = from {
        require_objects(src).await?;
        same_store(src, identity.as_ref()).await?;
        restored_pointers = restore::restore(store, src, opts, &mut out).await?;
        metadata::restore_metadata(store, src, opts, &mut out).await?;
    }
    // The identity may have just been restored (or, on a dry run, would be).
    let identity = match identity {
        Some(i) => Some(i),
        None => read_identity(store).await?,
    };
    let listing = store.list("").await?;
    let chain = chain::walk(store, None).await?;
    let vouched = vouchers(&chain, &listing);
    let present: HashSet<&str> = listing
        .iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. }))
        .map(|o| o.key.as_str())
        .chain(restored_pointers.iter().map(String::as_str))
        .collect();
    report_missing(from, &chain, &vouched, &present, &mut out);
    adopt::adopt(
        store,
        &listing,
        &present,
        &vouched,
        identity.as_ref().map(|i| i.store_id.as_str()),
        opts,
        &mut out,
    )
    .await?;
    if let Some((head, _)) = chain.head() {
        restore_delta(store, head, opts, &mut out).await?;
    }
    Ok(out)
}

/// Refuse a `from` store with another store's identity.
async fn same_store(src: &dyn AtomicPublisher, ours: Option<&StoreIdentity>) -> Result<()> {
    match (read_identity(src).await?, ours) {
        (Some(theirs), Some(ours)) if theirs.store_id != ours.store_id => {
            Err(Error::invalid(Param::From, text![format!("{}: another store (identity {}); this store is {}: a replica or backup of this store has its identity", src.describe(), theirs.store_id, ours.store_id)]))
        }
        _ => Ok(()),
    }
}

/// Seals the chain lacks and vouched-for pointers that are gone (and were not restored),
/// into `out.missing` with how to restore them.
fn report_missing(
    from: Option<&dyn AtomicPublisher>,
    chain: &chain::Chain,
    vouched: &BTreeMap<String, String>,
    present: &HashSet<&str>,
    out: &mut RepairOutcome,
) {
    let hint = match from {
        Some(src) => format!("{} does not hold it as recorded", src.describe()),
        None => "restore it byte-identical from a replica or backup: `lineage repair --from <URL>`"
            .to_string(),
    };
    for p in &chain.problems {
        if p.kind == crate::audit::findings::ProblemKind::SealMissing
            && !out.restored.contains(&p.key)
        {
            out.missing
                .push((p.key.clone(), format!("{}; {hint}", p.detail)));
        }
    }
    for (pkey, why) in vouched {
        if !present.contains(pkey.as_str()) {
            out.missing.push((
                pkey.clone(),
                format!("{why}, but the pointer is gone (a pointer written now would differ from it, so its part is never adopted); {hint}"),
            ));
        }
    }
}

/// The Delta versions the log lacks, rebuilt from the (restored) seals, pointers and
/// parts: a version is a pure function of them, so the bytes are the ones that were there.
async fn restore_delta(
    store: &dyn AtomicPublisher,
    head: u64,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    let delta = crate::history::delta_restore::restore_missing(store, head, opts.dry_run).await?;
    out.restored.extend(
        delta
            .restored
            .iter()
            .map(|&v| crate::format::keys::delta_version_key(v)),
    );
    out.missing
        .extend(delta.missing.into_iter().map(|(v, why)| {
            (
                crate::format::keys::delta_version_key(v),
                format!("Delta version {v} cannot be rebuilt byte-identical: {why}"),
            )
        }));
    Ok(())
}

/// Every pointer key the store's records say existed, with what says so: the seal that
/// sealed it, else its index entry or leaf locator.
fn vouchers(chain: &chain::Chain, listing: &[ObjectInfo]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in &chain.leaves {
        out.entry(l.key.clone())
            .or_insert_with(|| format!("seal {} sealed it with sha256 {}", l.seq, l.digest));
    }
    for o in listing {
        if let KeyKind::History(h) = keys::classify(&o.key) {
            if let Some(pkey) = h.pointer_key() {
                let what = match h {
                    HistoryKey::Index { .. } => "index entry",
                    _ => "leaf locator",
                };
                out.entry(pkey)
                    .or_insert_with(|| format!("{what} {} records it", o.key));
            }
        }
    }
    out
}

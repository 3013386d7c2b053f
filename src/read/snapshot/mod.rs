//! A snapshot: exactly the commits sealed up to one seal, each pointer checked against the
//! digest its seal records.
//!
//! The seals 1..N are read and chained (dense sequence numbers, each `prev_sha256` the
//! digest of the seal before, each `tree_size` and `root` what the entries so far give,
//! each signature valid where there is one); their entries, in seal order, are the
//! snapshot's commits. Each sealed pointer is then read and must have the exact bytes its
//! seal recorded: a missing or changed one is an [`Error::Integrity`] naming it (all of
//! them, not just the first). Nothing is listed to find the data: a part planted under a
//! part's name, or anywhere else, is never seen. Unsealed commits are read only when asked
//! for ([`ReadOptions::include_unsealed`]), each checked against its own key.
//!
//! A read since a seal ([`ReadOptions::since_seal`], [`since`]) reads only the seals from
//! that one on, and gives the commits sealed after it.

mod chain;
mod compacted;
mod since;
pub(crate) mod types;

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::{check_pointer, Pointer};
use crate::history::pointers::{commit_order, READ_CONCURRENCY};
use crate::history::seal::read_seals;
use crate::publish::AtomicPublisher;
use chain::{chain_up_to, Entry};
use compacted::with_compacted;
pub use types::{Compacted, CompactedCommit, SealRange, SealRef, SnapshotPart, SnapshotSeal};

/// What to read: which seal, and which commits of it.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The commits sealed by seals 1..=N (default: the newest seal).
    pub as_of_seal: Option<u64>,
    /// Only this run.
    pub run_id: Option<String>,
    /// Only this target CRS (any spelling `EPSG:<n>` canonicalises to).
    pub target_crs: Option<String>,
    /// Also the commits no seal covers yet (each checked against its own key only: no seal
    /// vouches for them). Commits sealed after `as_of_seal` are not among them.
    pub include_unsealed: bool,
    /// Read compacted parts ([`crate::format::compaction`]) for the commits a compaction
    /// in effect as of the seal covers (each record checked against the digest its seal
    /// records, its sources against the snapshot's sealed pointers; the part then against
    /// the record like any part against its pointer), the originals for the rest. Such a
    /// part appears as one [`SnapshotPart`] whose "pointer" is made from the record
    /// (`commit_id` the compaction id, `pointer_key` the record's key).
    pub prefer_compacted: bool,
    /// Only the commits sealed after seal K (by seals K+1..=N, N being `as_of_seal` or the
    /// newest), reading only seals K..=N ([`since`]): O(new seals + log n) requests, however
    /// large the seals before K. Seal K must record a frontier (`lineage-seal/2`; an
    /// earlier one is refused, [`Error::Invalid`]). K = N gives no commits. The original
    /// parts are read (a compaction's part holds rows of earlier commits): `prefer_compacted`
    /// is not applied. With `include_unsealed`: also the commits after the newest seal
    /// (from the index after its watermark; `as_of_seal` must then be unset). The anchors
    /// are checked against [`Snapshot::since`]
    /// ([`crate::audit::anchors::Anchors::check_range`]), not the whole chain.
    pub since_seal: Option<u64>,
}

/// The commits a read covers.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The seal it is as of (`None`: the store has no seal yet).
    pub seal: Option<SnapshotSeal>,
    /// Sealed commits in seal order, then (when asked for) unsealed ones in commit order;
    /// only those the filters select.
    pub parts: Vec<SnapshotPart>,
    /// Commits the seal covers before the filters (its tree size).
    pub sealed_total: u64,
    /// With [`ReadOptions::since_seal`]: the seals read and checked (the others were not).
    pub since: Option<SealRange>,
}

impl Snapshot {
    /// The selected commits no seal covers.
    pub fn unsealed(&self) -> usize {
        self.parts.iter().filter(|p| p.sealed_by.is_none()).count()
    }

    /// Rows of the selected commits.
    pub fn rows(&self) -> u64 {
        self.parts.iter().map(|p| p.pointer.row_count).sum()
    }

    /// Bytes of the selected parts.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.pointer.size_bytes).sum()
    }
}

/// Read the snapshot `opts` asks for. Refuses (with [`Error::Integrity`], naming every
/// object) a seal chain that does not hold up to the seal asked for, and sealed pointers
/// that are missing or not the bytes sealed.
pub async fn snapshot(store: &dyn AtomicPublisher, opts: &ReadOptions) -> Result<Snapshot> {
    if let Some(r) = &opts.run_id {
        keys::check_run_id(r)?;
    }
    let target_crs = opts
        .target_crs
        .as_deref()
        .map(|c| {
            crate::schema::crs::canonicalize(c)
                .map_err(|e| Error::invalid(Param::TargetCrs, text![format!("{c:?}: {e}")]))
        })
        .transpose()?;
    let (seal, entries, later, compactions, since) = match opts.since_seal {
        Some(k) => {
            if opts.include_unsealed && opts.as_of_seal.is_some() {
                return Err(Error::invalid(
                    Param::IncludeUnsealed,
                    text![
                        "with ",
                        Param::SinceSeal,
                        " reads the commits after the newest seal: give no ",
                        Param::AsOfSeal
                    ],
                ));
            }
            let s = since::chain_since(store, k, opts.as_of_seal).await?;
            (
                Some(s.seal),
                s.entries,
                Vec::new(),
                Vec::new(),
                Some(s.range),
            )
        }
        None => {
            let seals = read_seals(store).await?;
            let (seal, entries, later, compactions) = chain_up_to(&seals, opts.as_of_seal)?;
            (seal, entries, later, compactions, None)
        }
    };
    if seal.is_none() && !opts.include_unsealed {
        return Err(Error::NotFound(format!(
            "{} has no seal: nothing is vouched for (run `lineage seal`, or read unsealed commits explicitly)",
            store.describe()
        )));
    }
    let sealed_total = seal.as_ref().map_or(0, |s| s.tree_size);
    let selected: Vec<Entry> = entries
        .into_iter()
        .filter(|e| {
            opts.run_id
                .as_deref()
                .is_none_or(|r| run_of(&e.key) == Some(r))
        })
        .collect();
    let mut parts = read_sealed(store, selected).await?;
    if opts.include_unsealed {
        let covered: HashSet<&str> = parts
            .iter()
            .map(|p| p.pointer_key.as_str())
            .chain(later.iter().map(String::as_str))
            .collect();
        let mut extra = match &since {
            None => unsealed(store, opts.run_id.as_deref(), &covered).await?,
            Some(r) => {
                let keys = since::unsealed_keys(store, r, opts.run_id.as_deref(), &covered);
                read_unsealed(store, keys.await?).await?
            }
        };
        parts.append(&mut extra);
    }
    if let (Some(r), true) = (&opts.run_id, parts.is_empty()) {
        refuse_unknown_run(store, r).await?;
    }
    if let Some(t) = &target_crs {
        parts.retain(|p| &p.pointer.target_crs == t);
    }
    if opts.prefer_compacted && !compactions.is_empty() {
        parts = with_compacted(store, parts, &compactions).await?;
    }
    Ok(Snapshot {
        seal,
        parts,
        sealed_total,
        since,
    })
}

/// One rule for a run the store never had, in every read (`files`, `scan`, `log`, the
/// exports; CLI and Python alike): it is refused ([`Error::NotFound`], exit 2), since an
/// empty answer to a mistyped run id reads as "that run holds nothing". A run that has
/// commits but none in the snapshot (not sealed yet, or after the seal asked for) is an
/// empty answer.
async fn refuse_unknown_run(store: &dyn AtomicPublisher, run_id: &str) -> Result<()> {
    let prefix = format!("{}run_id={run_id}/", keys::COMMITS_PREFIX);
    if store.list_after(&prefix, "", 1).await?.is_empty() {
        return Err(Error::NotFound(format!(
            "no commits of run_id {run_id} in {}",
            store.describe()
        )));
    }
    Ok(())
}

/// The sealed pointers `selected`, each read and checked against the digest sealed; any
/// missing or changed is an [`Error::Integrity`] naming every one.
async fn read_sealed(
    store: &dyn AtomicPublisher,
    selected: Vec<Entry>,
) -> Result<Vec<SnapshotPart>> {
    let results: Vec<std::result::Result<SnapshotPart, Failed>> =
        futures::stream::iter(selected.into_iter().map(|e| sealed_part(store, e)))
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
    let mut failed = Vec::new();
    let mut parts = Vec::new();
    for r in results {
        match r {
            Ok(p) => parts.push(p),
            Err(f) => failed.push(f),
        }
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    Ok(parts)
}

fn run_of(pointer_key: &str) -> Option<&str> {
    let rest = pointer_key.strip_prefix(keys::COMMITS_PREFIX)?;
    rest.strip_prefix("run_id=")?.split('/').next()
}

/// A sealed pointer, read and checked against the digest sealed; `Err(Failed)` when it is
/// missing or changed (an `Err` of the outer result is a failure to read at all).
async fn sealed_part(
    store: &dyn AtomicPublisher,
    e: Entry,
) -> Result<std::result::Result<SnapshotPart, Failed>> {
    let seq = e.by.seq;
    let got = match crate::history::pointers::get_pointer(store, &e.key).await {
        Err(Error::Corrupt { message, .. }) => {
            return Ok(Err(Failed::new(e.key, message.to_string())))
        }
        got => got?,
    };
    let Some(bytes) = got else {
        return Ok(Err(Failed::new(
            e.key,
            format!("sealed by seal {seq}, is missing"),
        )));
    };
    let got = sha256_hex(&bytes);
    if got != e.sha256 {
        return Ok(Err(Failed::new(
            e.key,
            format!(
                "has sha256 {got}, but seal {seq} sealed {}: it changed after sealing",
                e.sha256
            ),
        )));
    }
    Ok(checked_pointer(&e.key, &bytes).map(|pointer| SnapshotPart {
        pointer_key: e.key,
        pointer_sha256: got,
        pointer,
        sealed_by: Some(e.by),
        compacted: None,
    }))
}

/// Parse a pointer and check it names the part its own key says.
fn checked_pointer(key: &str, bytes: &[u8]) -> std::result::Result<Pointer, Failed> {
    let KeyKind::Pointer { run_id, commit_id } = keys::classify(key) else {
        return Err(Failed::new(key, "is not a pointer key"));
    };
    check_pointer(key, bytes, &run_id, &commit_id).map_err(|e| Failed::new(key, e.to_string()))
}

/// The pointers no seal covers (`covered`: every sealed key), in commit order.
async fn unsealed(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
    covered: &HashSet<&str>,
) -> Result<Vec<SnapshotPart>> {
    let prefix = match run_id {
        Some(r) => format!("{}run_id={r}/", keys::COMMITS_PREFIX),
        None => keys::COMMITS_PREFIX.to_string(),
    };
    let todo: Vec<String> = store
        .list(&prefix)
        .await?
        .into_iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. }))
        .filter(|o| !covered.contains(o.key.as_str()))
        .map(|o| o.key)
        .collect();
    read_unsealed(store, todo).await
}

/// The unsealed pointers `todo`, each read and checked against its own key (one gone since
/// it was listed is left out), in commit order.
async fn read_unsealed(
    store: &dyn AtomicPublisher,
    todo: Vec<String>,
) -> Result<Vec<SnapshotPart>> {
    let read: Vec<Option<std::result::Result<SnapshotPart, Failed>>> =
        futures::stream::iter(todo.into_iter().map(|key| async move {
            // Gone since the listing: not part of what is read.
            let got = match crate::history::pointers::get_pointer(store, &key).await {
                Err(Error::Corrupt { message, .. }) => {
                    return Ok::<_, Error>(Some(Err(Failed::new(key, message.to_string()))))
                }
                got => got?,
            };
            let Some(bytes) = got else {
                return Ok::<_, Error>(None);
            };
            Ok(Some(checked_pointer(&key, &bytes).map(|pointer| {
                SnapshotPart {
                    pointer_sha256: sha256_hex(&bytes),
                    pointer_key: key,
                    pointer,
                    sealed_by: None,
                    compacted: None,
                }
            })))
        }))
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for r in read.into_iter().flatten() {
        match r {
            Ok(p) => out.push(p),
            Err(f) => failed.push(f),
        }
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    out.sort_by(|a, b| commit_order(&a.pointer, &b.pointer));
    Ok(out)
}

//! Compaction: sealed commits of one (`run_id`, `target_crs`, contract version) merged into
//! parts of about `target_rows` rows, without deleting or changing anything
//! ([`crate::format::compaction`]).
//!
//! 1. The newest seal's snapshot ([`crate::read::snapshot()`]): every sealed pointer checked
//!    against its seal. Commits that a seal already put into a compaction are left out
//!    (a commit is compacted at most once; compacted parts are never compacted again).
//! 2. Per partition and contract version with at least `min_parts` such commits, in seal
//!    order, consecutive commits are cut into chunks of at least `target_rows` rows (a
//!    source part is never split, so each record's rows are exactly its sources'); a
//!    chunk of one commit is left alone.
//! 3. Chunk by chunk (one chunk's rows in memory at a time): the sources are read through
//!    the trusted scan (each part checked against its sealed pointer), the rows' multiset
//!    digest taken, sorted by (`event_time_utc`, `sequence`, `event_id`), encoded like a
//!    new part (zstd, statistics, bloom filters; the footer names the compaction) and
//!    published create-only under `_lineage/compacted/parts/`, then its record under
//!    `_lineage/compacted/records/`.
//! 4. A seal naming the records ([`crate::history::seal::Seal::compactions`]): it seals any
//!    new commits as `lineage seal` would, and its Delta version removes the sources
//!    (`dataChange` false) and adds the compacted parts. The seal's create-only key decides
//!    between compactors: one whose plan is overtaken by another compaction's seal stops
//!    with a conflict, leaving its parts and records unreferenced (`verify` names them).
//!
//! Until that seal lands nothing a reader sees has changed: a compactor killed at any
//! point leaves at most unreferenced objects under `_lineage/compacted/`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use ed25519_dalek::SigningKey;
use serde::Serialize;

use crate::base::clock::{Clock, IdGen};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::compaction::{CompactionRecord, CompactionRef};
use crate::format::keys;
use crate::history::identity::read_identity;
use crate::history::seal::{read_seals, StoredSeal};
use crate::history::sealer::{seal_with, SealOptions, SealOutcome};
use crate::publish::AtomicPublisher;
use crate::read::snapshot::types::SnapshotPart;
use crate::read::snapshot::{snapshot, ReadOptions, Snapshot};

mod chunk;

use self::chunk::compact_chunk;

/// Default `min_parts`: a partition with fewer uncompacted sealed parts is left alone.
pub const DEFAULT_MIN_PARTS: usize = 2;

/// What to compact.
#[derive(Debug, Clone)]
pub struct CompactOptions {
    /// Only this run.
    pub run_id: Option<String>,
    /// Rows per compacted part, about (a part holds whole source parts, at least this many
    /// rows unless it is a partition's last).
    pub target_rows: usize,
    /// Partitions with fewer uncompacted sealed parts are left alone.
    pub min_parts: usize,
    /// Plan only: publish nothing.
    pub dry_run: bool,
    /// Seal without a key after signed seals (as `seal --unsigned`).
    pub allow_unsigned: bool,
    /// Write a Delta checkpoint for the compaction's table version (`seal
    /// --delta-checkpoint-interval`): Delta readers then read the few compacted files from
    /// one Parquet file instead of replaying every add and remove.
    pub delta_checkpoint: bool,
    /// Make the compaction's seal an Iceberg snapshot too (as `seal --iceberg`): a
    /// `replace` snapshot whose manifest removes the sources and adds the compacted parts.
    pub iceberg: bool,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            run_id: None,
            target_rows: crate::write::flush::DEFAULT_BATCH_ROWS,
            min_parts: DEFAULT_MIN_PARTS,
            dry_run: false,
            allow_unsigned: false,
            delta_checkpoint: false,
            iceberg: false,
        }
    }
}

/// One compacted part, planned or made.
#[derive(Debug, Clone, Serialize)]
pub struct Compaction {
    /// Partition value.
    pub run_id: String,
    /// Partition value.
    pub target_crs: String,
    /// Contract version.
    pub schema_version: String,
    /// The source commits' ids.
    pub commits: Vec<String>,
    /// Their rows.
    pub rows: u64,
    /// Their bytes.
    pub source_bytes: u64,
    /// The record's key (not in a dry run).
    pub record: Option<String>,
    /// The compacted part's key (not in a dry run).
    pub part_path: Option<String>,
    /// The compacted part's size (not in a dry run).
    pub size_bytes: Option<u64>,
}

/// What [`compact`] did.
#[derive(Debug, Clone, Serialize)]
pub struct CompactOutcome {
    /// The seal the plan was made as of (0: no seal).
    pub as_of_seal: u64,
    /// Planned (dry run) or made.
    pub compactions: Vec<Compaction>,
    /// The seal that put them into effect (none in a dry run or with nothing to do).
    pub seal: Option<SealOutcome>,
    /// Whether nothing was published.
    pub dry_run: bool,
}

/// The compaction records the seals put into effect, each read and checked against the
/// digest its seal records.
pub async fn sealed_records(
    store: &dyn AtomicPublisher,
    seals: &[StoredSeal],
) -> Result<Vec<(u64, CompactionRecord)>> {
    let mut out = Vec::new();
    for s in seals {
        let Ok(seal) = &s.seal else { continue };
        for r in seal.compactions.iter().flatten() {
            let bytes = crate::history::delta::read_record(store, &r.key)
                .await?
                .ok_or_else(|| Error::Corrupt {
                    what: "compaction record",
                    key: r.key.clone(),
                    message: format!("named by {} but missing; run `lineage verify`", s.key).into(),
                })?;
            let got = sha256_hex(&bytes);
            if !got.eq_ignore_ascii_case(&r.sha256) {
                return Err(Error::Corrupt {
                    what: "compaction record",
                    key: r.key.clone(),
                    message: format!(
                        "sha256 {got}, {} records {}; run `lineage verify`",
                        s.key, r.sha256
                    )
                    .into(),
                });
            }
            out.push((s.key_seq, CompactionRecord::from_bytes(&r.key, &bytes)?));
        }
    }
    Ok(out)
}

/// Cut one partition's commits (seal order) into chunks of at least `target` rows; a
/// chunk of one commit is dropped.
fn chunks(parts: Vec<SnapshotPart>, target: u64) -> Vec<Vec<SnapshotPart>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut rows = 0u64;
    for p in parts {
        rows += p.pointer.row_count;
        cur.push(p);
        if rows >= target {
            out.push(std::mem::take(&mut cur));
            rows = 0;
        }
    }
    out.push(cur);
    out.retain(|c| c.len() >= 2);
    out
}

/// Plan and (unless a dry run) make the compactions of the store's sealed commits, and seal
/// them (see the module docs).
pub async fn compact(
    store: Arc<dyn AtomicPublisher>,
    clock: &dyn Clock,
    ids: &dyn IdGen,
    signing: Option<&SigningKey>,
    opts: &CompactOptions,
) -> Result<CompactOutcome> {
    if opts.target_rows == 0 {
        return Err(Error::invalid(
            Param::TargetRows,
            text!["must be at least 1"],
        ));
    }
    let snap = snapshot(
        store.as_ref(),
        &ReadOptions {
            run_id: opts.run_id.clone(),
            ..ReadOptions::default()
        },
    )
    .await?;
    let head = snap.seal.as_ref().map_or(0, |s| s.seq);
    let (seals, plan) = plan(store.as_ref(), &snap, head, opts).await?;
    let mut out = CompactOutcome {
        as_of_seal: head,
        compactions: Vec::new(),
        seal: None,
        dry_run: opts.dry_run,
    };
    if plan.is_empty() {
        return Ok(out);
    }
    check_signing(&seals, signing, opts)?;
    let store_id = read_identity(store.as_ref()).await?.map(|i| i.store_id);
    let mut refs = Vec::new();
    for chunk in plan {
        let mut c = planned(&chunk);
        if !opts.dry_run {
            let (record, bytes) =
                compact_chunk(store.clone(), clock, ids, &snap, chunk, store_id.as_deref()).await?;
            refs.push(made(&mut c, &record, &bytes));
        }
        out.compactions.push(c);
    }
    if opts.dry_run {
        return Ok(out);
    }
    let sealed = seal_with(
        store.as_ref(),
        clock,
        signing,
        &SealOptions {
            allow_unsigned: opts.allow_unsigned,
            compactions: refs,
            compactions_planned_at: head,
            delta_checkpoint_interval: u64::from(opts.delta_checkpoint),
            iceberg: opts.iceberg,
            ..SealOptions::default()
        },
    )
    .await?;
    out.seal = Some(sealed);
    Ok(out)
}

/// Fill in what was made of `c` from its `record`; returns the reference the seal makes
/// to the record (`bytes`).
fn made(c: &mut Compaction, record: &CompactionRecord, bytes: &[u8]) -> CompactionRef {
    c.record = Some(keys::compaction_record_key(&record.compaction_id));
    c.part_path = Some(record.part_path.clone());
    c.size_bytes = Some(record.size_bytes);
    CompactionRef {
        key: keys::compaction_record_key(&record.compaction_id),
        sha256: sha256_hex(bytes),
    }
}

/// Refuse before writing anything what the seal would refuse after (see `seal`): an
/// unsigned seal after a signed one, unless `allow_unsigned`. A dry run writes no seal, so
/// it needs no key.
fn check_signing(
    seals: &[StoredSeal],
    signing: Option<&SigningKey>,
    opts: &CompactOptions,
) -> Result<()> {
    if opts.dry_run {
        return Ok(());
    }
    let signed = seals
        .last()
        .and_then(|s| s.seal.as_ref().ok())
        .is_some_and(|s| s.signature.is_some());
    if signed && signing.is_none() && !opts.allow_unsigned {
        return Err(Error::usage(text![
            "the newest seal is signed: sign the compaction's seal too (",
            Param::SigningKey,
            "), or pass ",
            Param::Unsigned
        ]));
    }
    Ok(())
}

/// The seals up to `head`, and the chunks to compact: the sealed commits of `snap` no
/// compaction took yet, grouped by partition and contract version (groups of at least
/// `min_parts`), each group cut into chunks.
async fn plan(
    store: &dyn AtomicPublisher,
    snap: &Snapshot,
    head: u64,
    opts: &CompactOptions,
) -> Result<(Vec<StoredSeal>, Vec<Vec<SnapshotPart>>)> {
    let seals: Vec<StoredSeal> = read_seals(store)
        .await?
        .into_iter()
        .filter(|s| s.key_seq <= head)
        .collect();
    let done: HashSet<String> = sealed_records(store, &seals)
        .await?
        .into_iter()
        .flat_map(|(_, r)| r.sources.into_iter().map(|s| s.commit_id))
        .collect();
    let mut groups: BTreeMap<(String, String, String), Vec<SnapshotPart>> = BTreeMap::new();
    for p in &snap.parts {
        if done.contains(&p.pointer.commit_id) || p.sealed_by.is_none() {
            continue;
        }
        let k = (
            p.pointer.run_id.clone(),
            p.pointer.target_crs.clone(),
            p.pointer.schema_version.clone(),
        );
        groups.entry(k).or_default().push(p.clone());
    }
    let plan = groups
        .into_values()
        .filter(|g| g.len() >= opts.min_parts.max(2))
        .flat_map(|g| chunks(g, opts.target_rows as u64))
        .collect();
    Ok((seals, plan))
}

/// The compaction of `chunk` as planned (nothing made yet).
fn planned(chunk: &[SnapshotPart]) -> Compaction {
    let first = &chunk[0].pointer;
    Compaction {
        run_id: first.run_id.clone(),
        target_crs: first.target_crs.clone(),
        schema_version: first.schema_version.clone(),
        commits: chunk.iter().map(|p| p.pointer.commit_id.clone()).collect(),
        rows: chunk.iter().map(|p| p.pointer.row_count).sum(),
        source_bytes: chunk.iter().map(|p| p.pointer.size_bytes).sum(),
        record: None,
        part_path: None,
        size_bytes: None,
    }
}

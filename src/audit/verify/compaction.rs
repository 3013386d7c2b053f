//! What a full `verify` checks of compactions ([`crate::format::compaction`]):
//!
//! - every record a seal names is there with the bytes the seal records, reads, agrees
//!   with itself, and names as sources commits sealed *before* that seal, each with the
//!   pointer digest its seal records and the part key, size, sha256 and rows its pointer
//!   records (`bad_compaction_record`);
//! - no commit is held by two compactions in effect (`compacted_twice`);
//! - each compacted part is there with the size and digests its record names
//!   (`bad_compacted_part`), and its rows are exactly the multiset union of its sources'
//!   rows: counts and the order-independent digest, recomputed part by part from both
//!   sides (one part in memory at a time), equal to each other and to the record
//!   (`compaction_rows_differ`);
//! - records and compacted parts that no seal puts into effect are named
//!   (`orphan_compaction`) once the grace period after their compaction id's time is over
//!   (before, they are in flight);
//! - the Delta table's newest version, replayed (adds minus removes), holds exactly the
//!   rows of the sealed commits (`delta_rows_differ`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;
use futures::StreamExt;

use crate::audit::chain::Chain;
use crate::audit::findings::{InFlight, InFlightKind, Problem, ProblemKind};
use crate::audit::verify::flight::Window;
use crate::base::digest::sha256_hex;
use crate::base::error::Result;
use crate::base::time::rfc3339;
use crate::format::compaction::{CompactionRecord, CompactionRef, CompactionSource};
use crate::format::delta::{decode_path, parse_actions};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::Pointer;
use crate::history::seal::StoredSeal;
use crate::parts::multiset::RowMultiset;
use crate::publish::AtomicPublisher;

/// Records checked at once (each reads its sources one at a time).
const CONCURRENCY: usize = 4;

/// What the check needs.
pub(crate) struct Context<'a> {
    /// The seal chain.
    pub chain: &'a Chain,
    /// Sealed pointers read by the pointers step, by key.
    pub sealed: &'a HashMap<String, Pointer>,
    /// Listed keys under `_lineage/compacted/`.
    pub listed: Vec<&'a str>,
    /// Listed Delta version keys, in version order (for the replay).
    pub versions: Vec<&'a str>,
    /// Whether every sealed pointer was read (then the Delta replay is compared).
    pub all_pointers: bool,
    /// The grace window.
    pub window: Window,
    /// Rows are recounted for the records of seals from this one on (0: every record;
    /// `--since-seal`: those put into effect since its seal).
    pub from_seal: u64,
}

/// What was found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub problems: Vec<Problem>,
    pub flying: Vec<InFlight>,
    /// Compacted parts in effect that checked out (digest and rows).
    pub parts_ok: u64,
}

/// Rows of a Parquet file's bytes, into `m`; `Err` says why they cannot be read.
fn rows_into(
    bytes: Bytes,
    limits: crate::base::limits::ReadLimits,
    m: &mut RowMultiset,
) -> std::result::Result<(), String> {
    // A problem's words are the reference wording (a verify report reads the same from
    // every front end).
    let reader = crate::parts::decoded::builder(bytes, limits)
        .map_err(|t| t.to_string())?
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| e.to_string())?;
    for batch in reader {
        let batch = batch.map_err(|e| e.to_string())?;
        m.add_batch(&batch).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The multiset of one part, fetched whole and checked against (size, sha256) first.
async fn part_rows(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    sha256: &str,
) -> std::result::Result<RowMultiset, String> {
    // Never more than the recorded size: a larger object is not the part, and not read.
    let bytes = match store.get_at_most(key, size).await {
        Ok(Some(b)) => b,
        Ok(None) => return Err("is missing".into()),
        Err(crate::base::error::Error::TooLarge { size: big, .. }) => {
            return Err(format!("is {big} bytes, not {size} (not read)"))
        }
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    if bytes.len() as u64 != size {
        return Err(format!("is {} bytes, not {size}", bytes.len()));
    }
    let b = bytes.clone();
    let got = crate::base::pool::run(move || sha256_hex(&b))
        .await
        .map_err(|e| e.to_string())?;
    if !got.eq_ignore_ascii_case(sha256) {
        return Err(format!("has sha256 {got}, not {sha256}"));
    }
    let limits = store.read_limits();
    crate::base::pool::run(move || {
        let mut m = RowMultiset::default();
        rows_into(bytes, limits, &mut m).map(|()| m)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// One record in effect: its rows from both sides.
async fn check_rows(store: &dyn AtomicPublisher, key: &str, r: &CompactionRecord) -> Vec<Problem> {
    let mut out = Vec::new();
    match part_rows(store, &r.part_path, r.size_bytes, &r.sha256).await {
        Err(why) => out.push(Problem::new(
            ProblemKind::BadCompactedPart,
            &r.part_path,
            format!("{why} (its record {key} names it)"),
        )),
        Ok(m) if m.rows != r.row_count || m.hex() != r.rows_digest => out.push(Problem::new(
            ProblemKind::CompactionRowsDiffer,
            &r.part_path,
            format!(
                "holds {} rows with digest {}; its record {key} says {} rows, {}",
                m.rows,
                m.hex(),
                r.row_count,
                r.rows_digest
            ),
        )),
        Ok(_) => {}
    }
    let mut sources = RowMultiset::default();
    for s in &r.sources {
        match part_rows(store, &s.part_path, s.size_bytes, &s.sha256).await {
            Ok(m) => sources.merge(&m),
            // The part is named by the part checks; its rows cannot be compared.
            Err(why) => {
                tracing::debug!(part = %s.part_path, %why, "source part unreadable; rows not compared");
                return out;
            }
        }
    }
    if sources.rows != r.row_count || sources.hex() != r.rows_digest {
        out.push(Problem::new(
            ProblemKind::CompactionRowsDiffer,
            key,
            format!(
                "its {} sources hold {} rows with digest {}; the record says {} rows, {}",
                r.sources.len(),
                sources.rows,
                sources.hex(),
                r.row_count,
                r.rows_digest
            ),
        ));
    }
    out
}

/// Run every check (see the module docs).
pub(crate) async fn check(store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<Found> {
    let mut found = Found::default();
    let in_effect = records_in_effect(store, cx, &mut found).await?;
    let recent: BTreeSet<&str> = cx
        .chain
        .seals
        .iter()
        .filter(|s| s.key_seq >= cx.from_seal)
        .filter_map(|s| s.seal.as_ref().ok())
        .flat_map(|s| s.compactions.iter().flatten().map(|r| r.key.as_str()))
        .collect();
    let rows: Vec<Vec<Problem>> = futures::stream::iter(in_effect.iter())
        .filter(|(k, _)| futures::future::ready(recent.contains(k.as_str())))
        .map(|(k, r)| check_rows(store, k, r))
        .buffered(CONCURRENCY)
        .collect()
        .await;
    found.parts_ok = rows.iter().filter(|p| p.is_empty()).count() as u64;
    found.problems.extend(rows.into_iter().flatten());
    orphans(cx, &in_effect, &mut found);
    if cx.all_pointers && !cx.versions.is_empty() {
        found.problems.extend(replay(store, cx).await?);
    }
    Ok(found)
}

/// A `bad_compaction_record` problem.
fn bad(key: &str, detail: String) -> Problem {
    Problem::new(ProblemKind::BadCompactionRecord, key, detail)
}

/// Every record the seals name, read and checked against its seal and its sources: the
/// records in effect (key, record); the problems found go into `found`.
async fn records_in_effect(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    found: &mut Found,
) -> Result<Vec<(String, CompactionRecord)>> {
    let mut in_effect: Vec<(String, CompactionRecord)> = Vec::new();
    let mut holder: HashMap<String, String> = HashMap::new();
    for s in &cx.chain.seals {
        let Ok(seal) = &s.seal else { continue };
        for r in seal.compactions.iter().flatten() {
            let rec = match read_record(store, s, r).await? {
                Ok(rec) => rec,
                Err(why) => {
                    found.problems.push(bad(&r.key, why));
                    continue;
                }
            };
            let mut ok = true;
            for src in &rec.sources {
                if let Some(why) = source_problem(cx, s, &rec, src) {
                    ok = false;
                    found.problems.push(bad(
                        &r.key,
                        format!(
                            "source {} (commit {}) {why}",
                            src.pointer_key, src.commit_id
                        ),
                    ));
                }
                if let Some(other) = holder.insert(src.commit_id.clone(), r.key.clone()) {
                    found.problems.push(Problem::new(
                        ProblemKind::CompactedTwice,
                        &r.key,
                        format!(
                            "commit {} is already compacted by {other}: readers of the table would read its rows twice",
                            src.commit_id
                        ),
                    ));
                }
            }
            if ok {
                in_effect.push((r.key.clone(), rec));
            }
        }
    }
    Ok(in_effect)
}

/// The record `r` that seal `s` names, read and parsed; the inner `Err` says why it is a
/// `bad_compaction_record`.
async fn read_record(
    store: &dyn AtomicPublisher,
    s: &StoredSeal,
    r: &CompactionRef,
) -> Result<std::result::Result<CompactionRecord, String>> {
    let bytes = match crate::history::delta::read_record(store, &r.key).await {
        Err(crate::base::error::Error::TooLarge { size, max, .. }) => {
            return Ok(Err(format!(
                "is {size} bytes, more than any compaction record can be ({max}, \
                 --max-seal-bytes); not read; {} names it",
                s.key
            )));
        }
        other => other?,
    };
    let Some(bytes) = bytes else {
        return Ok(Err(format!("is missing; {} names it", s.key)));
    };
    let got = sha256_hex(&bytes);
    if !got.eq_ignore_ascii_case(&r.sha256) {
        return Ok(Err(format!(
            "has sha256 {got}; {} records {}",
            s.key, r.sha256
        )));
    }
    Ok(CompactionRecord::from_bytes(&r.key, &bytes).map_err(|e| e.to_string()))
}

/// Why source `src` of record `rec` (named by seal `s`) does not match what the chain and
/// the sealed pointers say of it, if it does not.
fn source_problem(
    cx: &Context<'_>,
    s: &StoredSeal,
    rec: &CompactionRecord,
    src: &CompactionSource,
) -> Option<String> {
    let Some(&i) = cx.chain.by_key.get(&src.pointer_key) else {
        return Some("is not a sealed commit".to_string());
    };
    let leaf = &cx.chain.leaves[i];
    if leaf.seq >= s.key_seq {
        return Some(format!(
            "is sealed by seal {}, not before {}",
            leaf.seq, s.key
        ));
    }
    if !leaf.digest.eq_ignore_ascii_case(&src.pointer_sha256) {
        return Some(format!(
            "was sealed with pointer sha256 {}, not {}",
            leaf.digest, src.pointer_sha256
        ));
    }
    match cx.sealed.get(&src.pointer_key) {
        Some(p)
            if p.commit_id != src.commit_id
                || p.part_path != src.part_path
                || p.size_bytes != src.size_bytes
                || !p.sha256.eq_ignore_ascii_case(&src.sha256)
                || p.row_count != src.row_count
                || p.run_id != rec.run_id
                || p.target_crs != rec.target_crs
                || p.schema_version != rec.schema_version =>
        {
            Some(format!(
                "records part {} ({} bytes, {} rows, sha256 {}) of {}/{} {}; the record says {} ({} bytes, {} rows, sha256 {})",
                p.part_path, p.size_bytes, p.row_count, p.sha256,
                p.run_id, p.target_crs, p.schema_version,
                src.part_path, src.size_bytes, src.row_count, src.sha256
            ))
        }
        _ => None,
    }
}

/// Records and compacted parts listed that no seal puts into effect: in flight within the
/// grace window, orphans after it.
fn orphans(cx: &Context<'_>, in_effect: &[(String, CompactionRecord)], found: &mut Found) {
    let named: BTreeSet<&str> = cx
        .chain
        .seals
        .iter()
        .filter_map(|s| s.seal.as_ref().ok())
        .flat_map(|s| s.compactions.iter().flatten().map(|r| r.key.as_str()))
        .collect();
    let parts: BTreeSet<&str> = in_effect
        .iter()
        .map(|(_, r)| r.part_path.as_str())
        .collect();
    for &key in &cx.listed {
        let id = match keys::classify(key) {
            KeyKind::CompactionRecord { compaction_id } if !named.contains(key) => compaction_id,
            KeyKind::CompactedPart { compaction_id, .. } if !parts.contains(key) => {
                // A part of a record named by a seal that failed its checks is named
                // there; beside a record in effect, a file its record does not name (in
                // another directory) is not accounted for.
                let rec = keys::compaction_record_key(&compaction_id);
                if named.contains(rec.as_str()) && !in_effect.iter().any(|(k, _)| *k == rec) {
                    continue;
                }
                compaction_id
            }
            _ => continue,
        };
        let time = uuid::Uuid::try_parse(&id)
            .ok()
            .and_then(|u| keys::uuid_v7_time(&u));
        let verdict = match time {
            Some(t) => cx.window.admits(t).map(|()| t),
            None => Err("its compaction id carries no time".into()),
        };
        match verdict {
            Ok(t) => found.flying.push(InFlight {
                key: key.to_string(),
                kind: InFlightKind::Compaction,
                since: rfc3339(t),
                detail: "no seal puts this compaction into effect yet".into(),
            }),
            Err(why) => found.problems.push(Problem::new(
                ProblemKind::OrphanCompaction,
                key,
                format!(
                    "no seal puts this compaction into effect ({why}): readers never see it; a compactor that lost a race or stopped left it"
                ),
            )),
        }
    }
}

/// The newest Delta version's rows (replayed) against the sealed commits' rows.
async fn replay(store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<Vec<Problem>> {
    let mut live: BTreeMap<String, Option<u64>> = BTreeMap::new();
    let mut last = "";
    for &key in &cx.versions {
        let Ok(Some(bytes)) = store
            .get_at_most(key, crate::history::delta::max_version_bytes(store))
            .await
        else {
            return Ok(Vec::new()); // missing or too large: named by the Delta check
        };
        let Ok(actions) = parse_actions(key, &bytes) else {
            return Ok(Vec::new()); // named by the Delta check
        };
        for (k, v) in actions {
            let path = v.get("path").and_then(|p| p.as_str()).and_then(decode_path);
            match (k.as_str(), path) {
                ("add", Some(p)) => {
                    let rows = v
                        .get("stats")
                        .and_then(|s| s.as_str())
                        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
                        .and_then(|s| s.get("numRecords").and_then(|n| n.as_u64()));
                    live.insert(p, rows);
                }
                ("remove", Some(p)) => {
                    live.remove(&p);
                }
                _ => {}
            }
        }
        last = key;
    }
    let Some(table) = live.values().copied().sum::<Option<u64>>() else {
        return Ok(Vec::new()); // a file without stats: named by the Delta check
    };
    let sealed: u64 = cx
        .chain
        .leaves
        .iter()
        .filter_map(|l| cx.sealed.get(&l.key))
        .map(|p| p.row_count)
        .sum();
    // Only a version of the newest seal says what the sealed commits are.
    let newest = cx.chain.head().map(|(s, _)| keys::delta_version_key(s));
    if table == sealed || newest.as_deref() != Some(last) {
        return Ok(Vec::new());
    }
    Ok(vec![Problem::new(
        ProblemKind::DeltaRowsDiffer,
        last,
        format!(
            "the table's {} files hold {table} rows; the sealed commits hold {sealed}",
            live.len()
        ),
    )])
}

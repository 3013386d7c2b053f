//! Reading compacted parts in place of their sources ([`super::ReadOptions::prefer_compacted`]).

use super::types::{Compacted, CompactedCommit, SealRef, SnapshotPart};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Failed, Result};
use crate::format::compaction::{CompactionRecord, CompactionRef};
use crate::format::pointer::Pointer;
use crate::publish::AtomicPublisher;

/// Replace the sources of every compaction in effect by its compacted part (see
/// [`super::ReadOptions::prefer_compacted`]), at the place of its first source. A record
/// that is missing or not as sealed, or whose sources are not the snapshot's sealed commits
/// as recorded, is an [`Error::Integrity`]; one whose sources the filters left out is
/// skipped.
pub(super) async fn with_compacted(
    store: &dyn AtomicPublisher,
    parts: Vec<SnapshotPart>,
    compactions: &[(SealRef, CompactionRef)],
) -> Result<Vec<SnapshotPart>> {
    let mut at: std::collections::HashMap<String, usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.sealed_by.is_some())
        .map(|(i, p)| (p.pointer_key.clone(), i))
        .collect();
    let mut slots: Vec<Option<SnapshotPart>> = parts.into_iter().map(Some).collect();
    let mut failed = Vec::new();
    for (by, r) in compactions {
        let rec = match read_compaction(store, by, r).await? {
            Ok(rec) => rec,
            Err(f) => {
                failed.push(f);
                continue;
            }
        };
        let idx: Vec<Option<usize>> = rec
            .sources
            .iter()
            .map(|s| at.get(&s.pointer_key).copied())
            .collect();
        if idx.iter().all(Option::is_none) {
            continue; // not selected
        }
        if !sources_agree(&rec, &idx, &slots) {
            failed.push(Failed::new(
                r.key.clone(),
                "its sources are not the sealed commits it names (or another compaction holds one); run `lineage verify`".to_string(),
            ));
            continue;
        }
        let first = idx.iter().flatten().copied().min().unwrap_or_default();
        let mut commits = Vec::with_capacity(rec.sources.len());
        for (s, i) in rec.sources.iter().zip(idx.into_iter().flatten()) {
            let (committed_utc, adopted) = slots[i]
                .take()
                .map(|p| (p.pointer.committed_utc, p.pointer.adopted))
                .unwrap_or_default();
            commits.push(CompactedCommit {
                commit_id: s.commit_id.clone(),
                committed_utc,
                sealed_by: s.sealed_by,
                rows: s.row_count,
                adopted,
            });
            at.remove(&s.pointer_key);
        }
        slots[first] = Some(compacted_part(by, r, &rec, commits));
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    Ok(slots.into_iter().flatten().collect())
}

/// The compaction record `r` that seal `by` puts into effect, read and checked against the
/// digest sealed; `Err(Failed)` when it is missing, changed or unreadable.
async fn read_compaction(
    store: &dyn AtomicPublisher,
    by: &SealRef,
    r: &CompactionRef,
) -> Result<std::result::Result<CompactionRecord, Failed>> {
    let Some(bytes) = crate::history::delta::read_record(store, &r.key).await? else {
        return Ok(Err(Failed::new(
            r.key.clone(),
            format!("is missing (seal {} puts it into effect)", by.seq),
        )));
    };
    let got = sha256_hex(&bytes);
    if !got.eq_ignore_ascii_case(&r.sha256) {
        return Ok(Err(Failed::new(
            r.key.clone(),
            format!("has sha256 {got}, but seal {} records {}", by.seq, r.sha256),
        )));
    }
    Ok(CompactionRecord::from_bytes(&r.key, &bytes)
        .map_err(|e| Failed::new(r.key.clone(), e.to_string())))
}

/// Whether every source of `rec` is in the snapshot (at `idx` in `slots`, not taken by
/// another compaction) as the record names it.
fn sources_agree(
    rec: &CompactionRecord,
    idx: &[Option<usize>],
    slots: &[Option<SnapshotPart>],
) -> bool {
    let mut ok = idx.iter().all(Option::is_some);
    for (s, i) in rec.sources.iter().zip(idx) {
        let Some(p) = i.and_then(|i| slots[i].as_ref()) else {
            ok = false;
            continue;
        };
        if p.pointer_sha256 != s.pointer_sha256.to_lowercase()
            || p.pointer.part_path != s.part_path
            || p.pointer.sha256 != s.sha256
            || p.pointer.size_bytes != s.size_bytes
        {
            ok = false;
        }
    }
    ok
}

/// The snapshot part a compaction in effect (record `r` of seal `by`) reads as, holding
/// the rows of `commits`.
fn compacted_part(
    by: &SealRef,
    r: &CompactionRef,
    rec: &CompactionRecord,
    commits: Vec<CompactedCommit>,
) -> SnapshotPart {
    SnapshotPart {
        pointer_key: r.key.clone(),
        pointer_sha256: r.sha256.to_lowercase(),
        pointer: Pointer {
            format: crate::format::pointer::POINTER_FORMAT.to_string(),
            commit_id: rec.compaction_id.clone(),
            run_id: rec.run_id.clone(),
            target_crs: rec.target_crs.clone(),
            part_path: rec.part_path.clone(),
            row_count: rec.row_count,
            size_bytes: rec.size_bytes,
            schema_version: rec.schema_version.clone(),
            sha256: rec.sha256.clone(),
            blake3: Some(rec.blake3.clone()),
            committed_utc: rec.compacted_utc.clone(),
            first_sequence: rec.first_sequence,
            last_sequence: rec.last_sequence,
            min_event_time_utc: rec.min_event_time_utc.clone(),
            max_event_time_utc: rec.max_event_time_utc.clone(),
            tool_version: rec.tool_version.clone(),
            commit_key: None,
            tail_offset: rec.tail_offset,
            tail_sha256: rec.tail_sha256.clone(),
            adopted: false,
            writer: None,
            existed: false,
        },
        sealed_by: Some(by.clone()),
        compacted: Some(Compacted {
            compaction_id: rec.compaction_id.clone(),
            record: r.key.clone(),
            compacted_utc: rec.compacted_utc.clone(),
            sealed_by: by.clone(),
            commits,
        }),
    }
}

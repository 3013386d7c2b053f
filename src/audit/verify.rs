//! `verify`: every pointer's part is present and byte-identical; everything else in the
//! store is accounted for (orphans, foreign objects, stale temps, corrupt pointers).

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use serde::Serialize;

use crate::encode::sha256_hex;
use crate::error::Result;
use crate::keys::{self, KeyKind};
use crate::pointer::Pointer;
use crate::publish::{AtomicPublisher, ObjectInfo};

use super::log::READ_CONCURRENCY;

/// What kind of problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A pointer names a part that does not exist.
    MissingPart,
    /// The part's size differs from the pointer's.
    SizeMismatch,
    /// The part's sha256 differs from the pointer's.
    DigestMismatch,
    /// A pointer cannot be parsed, or its content contradicts its key.
    CorruptPointer,
    /// A part no pointer names (a crash between part and pointer, or a dropped file).
    OrphanPart,
    /// An object lineage-store did not write.
    ForeignObject,
    /// A temp left by an interrupted publish.
    StaleTemp,
}

/// One problem, naming the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// The object it is about.
    pub key: String,
    /// Details for a person.
    pub detail: String,
}

/// The result of a verification.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The store verified.
    pub store: String,
    /// Pointers read.
    pub commits: u64,
    /// Parts whose size and digest matched.
    pub parts_ok: u64,
    /// Rows recorded by the pointers that checked out.
    pub rows: u64,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// Everything wrong, sorted by kind then key.
    pub problems: Vec<Problem>,
}

impl Report {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    fn push(&mut self, kind: ProblemKind, key: impl Into<String>, detail: impl Into<String>) {
        self.problems.push(Problem {
            kind,
            key: key.into(),
            detail: detail.into(),
        });
    }
}

/// Verify the whole store.
pub async fn verify(store: &dyn AtomicPublisher) -> Result<Report> {
    let mut report = Report {
        store: store.describe(),
        ..Report::default()
    };
    let listing = store.list("").await?;
    let by_key: HashMap<&str, &ObjectInfo> = listing.iter().map(|o| (o.key.as_str(), o)).collect();
    let mut parts: BTreeMap<&str, &ObjectInfo> = BTreeMap::new();
    let mut pointer_keys = Vec::new();
    for o in &listing {
        match keys::classify(&o.key) {
            KeyKind::Part { .. } => {
                parts.insert(o.key.as_str(), o);
            }
            KeyKind::Pointer { run_id, commit_id } => {
                pointer_keys.push((o.key.clone(), run_id, commit_id))
            }
            KeyKind::Temp => report.push(
                ProblemKind::StaleTemp,
                &o.key,
                format!("temp of an interrupted publish ({} bytes)", o.size),
            ),
            KeyKind::Foreign => report.push(
                ProblemKind::ForeignObject,
                &o.key,
                "not written by lineage-store",
            ),
            KeyKind::Seal(_) | KeyKind::Meta => {}
        }
    }
    // Read and check pointers, then hash their parts, READ_CONCURRENCY at a time.
    let results: Vec<(String, Result<Option<Pointer>>)> = futures::stream::iter(pointer_keys)
        .map(|(key, run_id, commit_id)| async move {
            let r = read_pointer(store, &key, &run_id, &commit_id).await;
            (key, r)
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    let mut pointers = Vec::new();
    for (key, r) in results {
        match r {
            Ok(Some(p)) => pointers.push((key, p)),
            Ok(None) => {}
            Err(e) => report.push(ProblemKind::CorruptPointer, key, e.to_string()),
        }
    }
    report.commits = pointers.len() as u64
        + report
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::CorruptPointer)
            .count() as u64;
    for (_, p) in &pointers {
        parts.remove(p.part_path.as_str());
    }
    let checks: Vec<(String, Pointer, Result<Option<String>>)> = futures::stream::iter(pointers)
        .map(|(key, p)| {
            let present = by_key.get(p.part_path.as_str()).map(|o| o.size);
            async move {
                let r = match present {
                    None => Ok(None),
                    Some(size) if size != p.size_bytes => Ok(Some(format!("size {size}"))),
                    Some(_) => store
                        .get(&p.part_path)
                        .await
                        .map(|b| b.map(|b| sha256_hex(&b))),
                };
                (key, p, r)
            }
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    for (key, p, r) in checks {
        match r {
            Ok(None) => report.push(
                ProblemKind::MissingPart,
                &p.part_path,
                format!("recorded by {key}, not in the store"),
            ),
            Ok(Some(got)) if got.starts_with("size ") => report.push(
                ProblemKind::SizeMismatch,
                &p.part_path,
                format!("{got} bytes, pointer {key} records {}", p.size_bytes),
            ),
            Ok(Some(got)) if got != p.sha256 => report.push(
                ProblemKind::DigestMismatch,
                &p.part_path,
                format!("sha256 {got}, pointer {key} records {}", p.sha256),
            ),
            Ok(Some(_)) => {
                report.parts_ok += 1;
                report.rows += p.row_count;
                report.bytes_hashed += p.size_bytes;
            }
            Err(e) => report.push(
                ProblemKind::MissingPart,
                &p.part_path,
                format!("cannot read: {e}"),
            ),
        }
    }
    for (key, o) in parts {
        report.push(
            ProblemKind::OrphanPart,
            key,
            format!("{} bytes, no pointer records it", o.size),
        );
    }
    report
        .problems
        .sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
    Ok(report)
}

/// Read a pointer and check it agrees with its own key.
async fn read_pointer(
    store: &dyn AtomicPublisher,
    key: &str,
    run_id: &str,
    commit_id: &str,
) -> Result<Option<Pointer>> {
    let Some(bytes) = store.get(key).await? else {
        return Ok(None); // removed since the listing: nothing to check
    };
    let p = Pointer::from_bytes(key, &bytes)?;
    let expect_part = keys::part_key(&p.run_id, &p.target_crs, &p.commit_id);
    let bad = if p.run_id != run_id || p.commit_id != commit_id {
        Some(format!(
            "records run_id={} commit {}, but is stored under run_id={run_id} commit {commit_id}",
            p.run_id, p.commit_id
        ))
    } else if p.part_path != expect_part {
        Some(format!(
            "part_path {} is not where commit {} belongs ({expect_part})",
            p.part_path, p.commit_id
        ))
    } else {
        None
    };
    match bad {
        Some(m) => Err(crate::error::Error::Corrupt {
            what: "pointer",
            key: key.to_string(),
            message: m,
        }),
        None => Ok(Some(p)),
    }
}

//! The "pointers" step of the verify pipeline: read every pointer a strategy wants, digest
//! its exact bytes, parse it and check it against its own key, and hold a sealed one to
//! the digest its seal recorded.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;

use crate::audit::findings::{Problem, ProblemKind, Report};
use crate::base::digest::sha256_hex;
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::{check_pointer, Pointer, MAX_POINTER_BYTES};
use crate::publish::AtomicPublisher;

/// What a seal recorded of a pointer.
#[derive(Debug, Clone)]
pub(crate) struct SealedAs {
    /// The seal that added it.
    pub(crate) seq: u64,
    /// sha256 of the pointer's bytes, as sealed.
    pub(crate) digest: String,
    /// The seal marks it adopted.
    pub(crate) adopted: bool,
}

/// One pointer to read.
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    /// Its key.
    pub(crate) key: String,
    /// What a seal recorded of it, when sealed: then its absence or another digest is a
    /// problem. An unsealed pointer that is gone was removed since the listing.
    pub(crate) sealed: Option<SealedAs>,
    /// Its size in the listing, when listed: a pointer larger than any pointer can be is
    /// reported without being read.
    pub(crate) listed_size: Option<u64>,
}

/// What the pointers step read.
#[derive(Debug, Default)]
pub(crate) struct ReadBack {
    /// Pointers that parse and agree with their keys, by key.
    pub(crate) parsed: HashMap<String, Pointer>,
    /// Every pointer present, by key: the sha256 of its bytes.
    pub(crate) present: HashMap<String, String>,
    /// Keys whose pointer is present but unreadable, unparseable or not its key's.
    pub(crate) corrupt: HashSet<String>,
}

/// Read `wanted`, `concurrency` at a time; problems go into `report`.
pub(crate) async fn read(
    store: &dyn AtomicPublisher,
    wanted: Vec<Wanted>,
    concurrency: usize,
    report: &mut Report,
) -> ReadBack {
    let read: Vec<(Wanted, crate::base::error::Result<Option<bytes::Bytes>>)> =
        futures::stream::iter(wanted)
            .map(|w| async move {
                let got = get(store, &w).await;
                (w, got)
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
    let mut out = ReadBack::default();
    for (w, got) in read {
        let bytes = match got {
            Ok(Some(b)) => b,
            Ok(None) => {
                if let Some(s) = &w.sealed {
                    report.push_problem(Problem::new(
                        ProblemKind::SealedPointerMissing,
                        &w.key,
                        format!(
                            "sealed by seal {} but no longer in the store; `lineage repair --from <replica or backup>` restores it byte-identical (never adopt its part: a new pointer would differ from the sealed one)",
                            s.seq
                        ),
                    ));
                }
                continue;
            }
            Err(e) => {
                report.push_problem(Problem::new(
                    ProblemKind::CorruptPointer,
                    &w.key,
                    e.to_string(),
                ));
                out.corrupt.insert(w.key);
                continue;
            }
        };
        judge(w, &bytes, &mut out, report);
    }
    out
}

/// The bytes of pointer `w`; one listed larger than any pointer can be is not read.
async fn get(
    store: &dyn AtomicPublisher,
    w: &Wanted,
) -> crate::base::error::Result<Option<bytes::Bytes>> {
    match w.listed_size {
        Some(n) if n > MAX_POINTER_BYTES as u64 => Err(crate::base::error::Error::Corrupt {
            what: "pointer",
            key: w.key.clone(),
            message: format!("{n} bytes; a pointer is at most {MAX_POINTER_BYTES} (not read)")
                .into(),
        }),
        _ => crate::history::pointers::get_pointer(store, &w.key).await,
    }
}

/// Pointer `w` as read (`bytes`): against the digest sealed, parsed and checked against
/// its key, into `out`; problems go into `report`.
fn judge(w: Wanted, bytes: &[u8], out: &mut ReadBack, report: &mut Report) {
    let digest = sha256_hex(bytes);
    if let Some(s) = w.sealed.as_ref().filter(|s| s.digest != digest) {
        report.push_problem(Problem::new(
            ProblemKind::SealedPointerChanged,
            &w.key,
            format!(
                "sha256 {digest}, but seal {} sealed {}: the pointer was edited",
                s.seq, s.digest
            ),
        ));
    }
    let parsed = match keys::classify(&w.key) {
        KeyKind::Pointer { run_id, commit_id } => check_pointer(&w.key, bytes, &run_id, &commit_id),
        _ => Pointer::from_bytes(&w.key, bytes),
    };
    match parsed {
        Ok(p) => {
            if p.adopted || w.sealed.as_ref().is_some_and(|s| s.adopted) {
                let sealed_by = w.sealed.as_ref().map(|s| s.seq);
                report
                    .adopted_commits
                    .push(super::adopted::found(&w.key, &p, sealed_by));
            }
            out.parsed.insert(w.key.clone(), p);
        }
        Err(e) => {
            report.push_problem(Problem::new(
                ProblemKind::CorruptPointer,
                &w.key,
                e.to_string(),
            ));
            out.corrupt.insert(w.key.clone());
        }
    }
    out.present.insert(w.key, digest);
}

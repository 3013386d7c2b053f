//! The compactions `lineage log` lists beside the commits: each compaction record a seal
//! put into effect, read and checked against the digest that seal records. A compaction
//! writes no commit (its seal adds no leaf), so without this list a seal that re-laid
//! hundreds of parts would leave no trace in `log`.

use serde::Serialize;

use crate::base::digest::sha256_hex;
use crate::base::error::Result;
use crate::format::compaction::CompactionRecord;
use crate::history::head;
use crate::history::seal::{read_seals, StoredSeal};
use crate::publish::AtomicPublisher;

/// One compaction in effect, as `log` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct LoggedCompaction {
    /// Always `compaction` (a commit's line has no `kind`).
    pub kind: &'static str,
    /// The seal that put it into effect.
    pub sealed_by: u64,
    /// The record's key.
    pub record_key: String,
    /// The record.
    #[serde(flatten)]
    pub record: CompactionRecord,
}

/// A record `log` could not list: its key, and why.
#[derive(Debug, Clone)]
pub struct UnlistedCompaction {
    /// The record's key.
    pub key: String,
    /// Why (missing, changed since sealed, unreadable).
    pub detail: String,
}

/// The seals after `after` (every seal when `None`), in sequence order: only those are
/// read, one by one from `after + 1` until a number has no seal (as [`head::find`] reads
/// the seals after the newest marker), so that `log --since-seal` reads none after the
/// newest and `--since-seal N` the seals after N, not every seal of the store.
async fn seals_after(store: &dyn AtomicPublisher, after: Option<u64>) -> Result<Vec<StoredSeal>> {
    let Some(a) = after else {
        return read_seals(store).await;
    };
    let mut out = Vec::new();
    let mut next = a.checked_add(1);
    while let Some(n) = next {
        match head::read_seal(store, n).await? {
            Some(s) => out.push(s),
            None => break,
        }
        next = n.checked_add(1);
    }
    Ok(out)
}

/// The compactions put into effect by the seals after `after` (every seal when `None`),
/// of one run if given, in seal order; and the records that could not be read as sealed.
pub async fn compactions(
    store: &dyn AtomicPublisher,
    after: Option<u64>,
    run_id: Option<&str>,
) -> Result<(Vec<LoggedCompaction>, Vec<UnlistedCompaction>)> {
    let mut listed = Vec::new();
    let mut unlisted = Vec::new();
    for s in seals_after(store, after).await? {
        let Ok(seal) = s.seal.as_ref() else { continue };
        if after.is_some_and(|a| s.key_seq <= a) {
            continue;
        }
        for r in seal.compactions.iter().flatten() {
            match read_checked(store, &r.key, &r.sha256, s.key_seq).await? {
                Ok(record) if run_id.is_none_or(|id| id == record.run_id) => {
                    listed.push(LoggedCompaction {
                        kind: "compaction",
                        sealed_by: s.key_seq,
                        record_key: r.key.clone(),
                        record,
                    })
                }
                Ok(_) => {}
                Err(detail) => unlisted.push(UnlistedCompaction {
                    key: r.key.clone(),
                    detail,
                }),
            }
        }
    }
    Ok((listed, unlisted))
}

/// The record at `key`, checked against `sha256` (as seal `seq` records it).
async fn read_checked(
    store: &dyn AtomicPublisher,
    key: &str,
    sha256: &str,
    seq: u64,
) -> Result<std::result::Result<CompactionRecord, String>> {
    let Some(bytes) = crate::history::delta::read_record(store, key).await? else {
        return Ok(Err(format!("is missing (seal {seq} puts it into effect)")));
    };
    let got = sha256_hex(&bytes);
    if !got.eq_ignore_ascii_case(sha256) {
        return Ok(Err(format!(
            "has sha256 {got}, but seal {seq} records {sha256}"
        )));
    }
    Ok(CompactionRecord::from_bytes(key, &bytes).map_err(|e| e.to_string()))
}

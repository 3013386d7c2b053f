//! Retries that resume: a job that died after some of its flushes were committed under a
//! commit key is run again with the same key and `resume`, and ends with every event
//! committed once.
//!
//! **The same flush.** Flushes are cut per partition (run_id, target_crs), in the order
//! rows arrive, `batch_rows` rows each; a flush is named by its partition and its 0-based
//! index in that partition, and its commit id is derived from (run_id, target_crs, key,
//! index) ([`crate::format::claim::derived_commit_id`]). A rerun that feeds the same rows
//! in the same order with the same `batch_rows` cuts the same flushes.
//!
//! **Resuming.** Each flush is encoded as usual; when a pointer already stands under its
//! derived commit id, that commit is *kept*: nothing is published for the flush, the stored
//! pointer is returned, and it is recorded here ([`Kept`]), saying whether its part holds
//! the same bytes as this attempt's flush. A kept flush whose payload differs (a retry
//! that rebuilt its events with new timestamps) is reported, not refused: the rows already
//! committed stand. A kept commit must still be the same flush: as many rows and the same
//! `sequence` range as this attempt's; otherwise (another `batch_rows`, events reordered or
//! added before it) it is refused as a conflict, since keeping it would lose or duplicate
//! rows. Flushes with no pointer are published. Without `resume`, a flush whose
//! payload differs from a committed one is refused, as before.
//!
//! A part published without its pointer (the job died between the two) is an orphan:
//! resuming over it with a different payload is refused; `lineage repair` adopts the orphan
//! (writing its pointer), after which resuming keeps it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::keys;
use crate::format::pointer::Pointer;
use crate::publish::AtomicPublisher;

/// A flush a resumed append kept instead of publishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The commit that stands (derived from the key).
    pub commit_id: String,
    /// True when this attempt's flush encoded to other bytes than the kept part (its
    /// rows differ, e.g. timestamps taken at run time): the committed rows stand.
    pub payload_differs: bool,
}

/// The flushes kept so far, by commit id (shared by a writer's clones).
#[derive(Debug, Default)]
pub(crate) struct KeptLog(Mutex<BTreeMap<String, bool>>);

impl KeptLog {
    /// Record `commit_id` as kept.
    pub(crate) fn record(&self, commit_id: &str, payload_differs: bool) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(commit_id.to_string(), payload_differs);
    }
    /// Whether `commit_id` was kept (and how), not published.
    pub(crate) fn get(&self, commit_id: &str) -> Option<Kept> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(commit_id)
            .map(|&d| Kept {
                commit_id: commit_id.to_string(),
                payload_differs: d,
            })
    }
}

/// The pointer already committed as `commit_id` in run `run_id`, if any (read back
/// whole: a kept commit is reported as stored).
pub(crate) async fn committed(
    store: &dyn AtomicPublisher,
    run_id: &str,
    commit_id: &str,
) -> Result<Option<Pointer>> {
    let key = keys::pointer_key(run_id, commit_id);
    match store.get(&key).await? {
        Some(b) => Ok(Some(Pointer::from_bytes(&key, &b)?)),
        None => Ok(None),
    }
}

/// Refuse a commit key that is empty, over 256 characters or holds a control character.
pub(crate) fn check_key(key: Option<&str>) -> Result<()> {
    match key {
        Some(k) if k.is_empty() || k.len() > 256 || k.chars().any(char::is_control) => {
            Err(Error::invalid(
                Param::CommitKey,
                text!["must be 1 to 256 printable characters"],
            ))
        }
        _ => Ok(()),
    }
}

//! A witness binds a location to one store: the stores whose newest record names a
//! location (the store's URL as the witness reached it), and those a first record replaces
//! there on an explicit request.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::{WitnessOptions, WitnessRecord, WitnessReport, HEADS_PREFIX, MAX_RECORD_BYTES};
use crate::base::error::Result;
use crate::publish::AtomicPublisher;

/// The newest record of a store whose newest record names the location asked about.
pub(super) struct AtLocation {
    /// The store's id.
    pub id: String,
    /// The newest record's seal number, from its key.
    pub seq: u64,
    /// Its key.
    pub key: String,
    /// Its exact bytes.
    pub bytes: Bytes,
}

/// The stores a first record replaces at location `store`: those the witness recorded
/// there, when `opts` asks to record a new store at a witnessed location (else none).
pub(super) async fn replaced(
    witness: &dyn AtomicPublisher,
    store: &str,
    report: &WitnessReport,
    opts: &WitnessOptions,
) -> Result<Vec<String>> {
    let (true, 0, Some(id)) = (
        opts.new_store_at_location,
        report.records,
        report.store_id.as_deref(),
    ) else {
        return Ok(Vec::new());
    };
    Ok(others_at_location(witness, store, Some(id))
        .await?
        .into_iter()
        .map(|(o, _)| o)
        .collect())
}

/// The other stores the witness recorded at location `store` (the URL as the witness
/// reached it): each id but `own`, with the newest seal recorded, whose newest record
/// names this location.
pub(super) async fn others_at_location(
    witness: &dyn AtomicPublisher,
    store: &str,
    own: Option<&str>,
) -> Result<Vec<(String, u64)>> {
    Ok(at_location(witness, store, own)
        .await?
        .into_iter()
        .map(|a| (a.id, a.seq))
        .collect())
}

/// The newest record of each store but `skip` whose newest record names location `store`
/// (one listing of every record's name, one read per store the witness recorded).
pub(super) async fn at_location(
    witness: &dyn AtomicPublisher,
    store: &str,
    skip: Option<&str>,
) -> Result<Vec<AtLocation>> {
    let mut out = Vec::new();
    for (id, (seq, key)) in newest_keys(witness, skip).await? {
        if let Ok(Some(bytes)) = witness.get_at_most(&key, MAX_RECORD_BYTES).await {
            if let Ok(r) = serde_json::from_slice::<WitnessRecord>(&bytes) {
                if r.store == store {
                    out.push(AtLocation {
                        id,
                        seq,
                        key,
                        bytes,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Store id → the newest record's (seal number, key), for every store but `skip`.
async fn newest_keys(
    witness: &dyn AtomicPublisher,
    skip: Option<&str>,
) -> Result<BTreeMap<String, (u64, String)>> {
    let listed = witness.list(HEADS_PREFIX).await?;
    let mut newest: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for o in listed {
        let Some((id, file)) = o
            .key
            .strip_prefix(HEADS_PREFIX)
            .and_then(|r| r.split_once('/'))
        else {
            continue;
        };
        let Some(n) = file
            .strip_suffix(".json")
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue;
        };
        if Some(id) == skip {
            continue;
        }
        let e = newest.entry(id.to_string()).or_insert((0, String::new()));
        if n >= e.0 {
            *e = (n, o.key);
        }
    }
    Ok(newest)
}

//! The read limits of the stores this package opens.
//!
//! Every `Store` has its own limits (`lineage_store.open(url, max_seal_bytes=...,
//! max_page_bytes=..., max_decoded_bytes=...)`); the library holds no process-wide limit. `set_read_limits`
//! sets the defaults that `open` uses for a limit it is not given: the package's own
//! setting, read only when a store is opened (a store already open keeps its limits).

use std::sync::Mutex;

use lineage_store::ReadLimits;
use pyo3::prelude::*;

/// The defaults for stores opened later (`set_read_limits`); `None`: the library's.
static DEFAULTS: Mutex<Option<ReadLimits>> = Mutex::new(None);

fn defaults() -> ReadLimits {
    DEFAULTS
        .lock()
        .map(|d| d.unwrap_or_default())
        .unwrap_or_default()
}

/// The limits of a store opened with these arguments (`None`: the defaults).
pub fn for_store(
    max_seal_bytes: Option<u64>,
    max_page_bytes: Option<u64>,
    max_decoded_bytes: Option<u64>,
) -> ReadLimits {
    let d = defaults();
    ReadLimits {
        max_seal_bytes: max_seal_bytes.unwrap_or(d.max_seal_bytes),
        max_page_bytes: max_page_bytes.unwrap_or(d.max_page_bytes),
        max_decoded_bytes: max_decoded_bytes.unwrap_or(d.max_decoded_bytes),
    }
}

/// Set the read limits of the stores opened from now on, when `open` is not given them
/// (docs/security.md): the largest seal (also bounding Delta versions, 8 times it, and
/// compaction records), the largest decoded page of a part and the most a whole Parquet
/// object may decode to. `None` leaves a default as it is. A store already open keeps its
/// own. Returns the seal and page defaults now in force.
#[pyfunction]
#[pyo3(signature = (*, max_seal_bytes=None, max_page_bytes=None, max_decoded_bytes=None))]
pub fn set_read_limits(
    max_seal_bytes: Option<u64>,
    max_page_bytes: Option<u64>,
    max_decoded_bytes: Option<u64>,
) -> (u64, u64) {
    let now = for_store(max_seal_bytes, max_page_bytes, max_decoded_bytes);
    if let Ok(mut d) = DEFAULTS.lock() {
        *d = Some(now);
    }
    (now.max_seal_bytes, now.max_page_bytes)
}

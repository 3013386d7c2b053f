//! The seal a read is as of (`as_of_seal=` or `as_of_time=`, as `--as-of-seal` and
//! `--as-of-time`), for `files`, `scan`, `plan` and `report`.

use lineage_store::{AtomicPublisher, Error};

use crate::errors::LResult;

/// Refuse `as_of_seal` and `as_of_time` together.
pub fn one_as_of(as_of_seal: Option<u64>, as_of_time: Option<&str>) -> LResult<()> {
    match (as_of_seal, as_of_time) {
        (Some(_), Some(_)) => Err(Error::usage(
            "give either as_of_seal or as_of_time, not both",
        )),
        _ => Ok(()),
    }
}

/// The seal to read as of: `as_of_seal`, or the newest sealed at or before `as_of_time`.
pub async fn as_of(
    store: &dyn AtomicPublisher,
    as_of_seal: Option<u64>,
    as_of_time: Option<&str>,
) -> LResult<Option<u64>> {
    match as_of_time {
        Some(t) => Ok(Some(lineage_store::seal_as_of_time(store, t).await?)),
        None => Ok(as_of_seal),
    }
}

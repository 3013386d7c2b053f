//! A time as a seal: "the archive as of 3 November" is the newest seal sealed at or before
//! that time, so every read that takes a seal number takes a time too.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::history::seal::read_seals;
use crate::publish::AtomicPublisher;

/// Parse an as-of time: RFC 3339 (`2026-11-03T17:00:00Z`, any offset), or a date alone
/// (`2026-11-03`), which means the end of that day in UTC (every seal sealed on it counts).
pub fn parse_as_of_time(t: &str) -> Result<DateTime<Utc>> {
    let t = t.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(d.with_timezone(&Utc));
    }
    let end_of_day = NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999);
    match (NaiveDate::parse_from_str(t, "%Y-%m-%d"), end_of_day) {
        (Ok(d), Some(end)) => Ok(d.and_time(end).and_utc()),
        _ => Err(Error::invalid(
            Param::AsOfTime,
            text![format!(
                "{t:?} is not a time (RFC 3339, e.g. 2026-11-03T17:00:00Z) or a date (2026-11-03: the end of that day, UTC)"
            )],
        )),
    }
}

/// The sequence number of the newest seal sealed at or before `t` ([`parse_as_of_time`]).
/// [`Error::NotFound`] (naming the first seal's time) when no seal is that old. A seal
/// that does not parse is left to the read that follows, which refuses the chain.
pub async fn seal_as_of_time(store: &dyn AtomicPublisher, t: &str) -> Result<u64> {
    let at = parse_as_of_time(t)?;
    let seals = read_seals(store).await?;
    let mut best = None;
    let mut first: Option<String> = None;
    for s in &seals {
        let Ok(seal) = &s.seal else { continue };
        let Ok(when) = DateTime::parse_from_rfc3339(&seal.sealed_utc) else {
            continue;
        };
        first.get_or_insert_with(|| seal.sealed_utc.clone());
        if when.with_timezone(&Utc) <= at {
            best = best.max(Some(s.key_seq));
        }
    }
    best.ok_or_else(|| {
        Error::NotFound(match first {
            Some(f) => format!(
                "a seal sealed at or before {} in {} (the first seal was sealed at {f})",
                crate::base::time::rfc3339(at),
                store.describe()
            ),
            None => format!("a seal in {}: it has none", store.describe()),
        })
    })
}

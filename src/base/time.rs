//! Time as every object records it (RFC 3339, microseconds, `Z`), and durations as every
//! command takes them (`90s`, `15m`, `1h`, `2d`, also `1h 30m`: humantime's syntax).

use chrono::{DateTime, Duration, SecondsFormat, TimeZone, Utc};

use crate::base::error::{Error, Result};

/// RFC 3339 with microseconds and `Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Microseconds since the epoch as RFC 3339.
pub fn rfc3339_us(us: i64) -> String {
    match Utc.timestamp_micros(us) {
        chrono::LocalResult::Single(t) => rfc3339(t),
        _ => us.to_string(),
    }
}

/// Parse a duration flag: a whole number and a unit (`90s`, `15m`, `1h`, `2d`), or several
/// (`1h 30m`), as [`humantime`] reads them.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    let bad = || {
        Error::Usage(format!(
            "duration {s:?}: expected a whole number and a unit s, m, h or d (e.g. 1h)"
        ))
    };
    let d = humantime::parse_duration(s).map_err(|_| bad())?;
    Duration::from_std(d).map_err(|_| bad())
}

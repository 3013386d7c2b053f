//! Time as every object records it (RFC 3339, microseconds, `Z`), and durations as every
//! command takes them (`90s`, `15m`, `1h`, `2d`).

use chrono::{DateTime, Duration, SecondsFormat, TimeZone, Utc};

use crate::base::error::{Error, Result};

/// RFC 3339 with microseconds and `Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A POSIX time (seconds since the Epoch, as a cosignature states it) as RFC 3339 (the
/// number itself when out of range).
pub fn posix_utc(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(|t| DateTime::from_timestamp(t, 0))
        .map_or_else(|| t.to_string(), rfc3339)
}

/// Microseconds since the epoch as RFC 3339.
pub fn rfc3339_us(us: i64) -> String {
    match Utc.timestamp_micros(us) {
        chrono::LocalResult::Single(t) => rfc3339(t),
        _ => us.to_string(),
    }
}

/// Nanoseconds since the epoch (a file system's clock) as RFC 3339 with nanoseconds (the
/// number itself when out of range).
pub fn rfc3339_ns(ns: i128) -> String {
    let (secs, nanos) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    i64::try_from(secs)
        .ok()
        .and_then(|s| DateTime::from_timestamp(s, u32::try_from(nanos).ok()?))
        .map_or_else(
            || ns.to_string(),
            |t| t.to_rfc3339_opts(SecondsFormat::Nanos, true),
        )
}

/// Parse a duration flag: a whole number and one unit, `s`, `m`, `h` or `d` (`90s`, `15m`,
/// `1h`, `2d`), the syntax the README documents. (humantime was tried: it also takes
/// weeks, months, years and sums such as `1h 30m`, none of which a flag here needs, and
/// `1M`, a month, beside `1m`, a minute, is an easy mistake to make with a grace period.)
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    let bad = || {
        Error::usage(format!(
            "duration {s:?}: expected a whole number and a unit s, m, h or d (e.g. 1h)"
        ))
    };
    let unit = s.chars().last().ok_or_else(bad)?;
    let n: i64 = s[..s.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    let secs = match unit {
        's' => Some(n),
        'm' => n.checked_mul(60),
        'h' => n.checked_mul(3600),
        'd' => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(bad)?;
    Duration::try_seconds(secs).ok_or_else(bad)
}

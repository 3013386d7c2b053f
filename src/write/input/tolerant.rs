//! What ordinary tools write, accepted where no value changes (docs/input.md, "Input from
//! ordinary tools"):
//!
//! - **whole floats for integer fields** in NDJSON: pandas' `to_json` writes an integer
//!   column that holds a null as floats (`"sequence": 3.0`). A number whose value is an
//!   integer is read as that integer when it is within ±2^53 (where every integer is a
//!   float exactly, so the float cannot have been rounded from another integer) and fits
//!   the field; `3.5`, `1e300` or `9007199254740993.0` stay refused;
//! - **`+HH` and `+HHMM` offsets** on times: DuckDB's `COPY … (FORMAT JSON)` writes
//!   `2026-07-13 06:00:00+00`. They are read as `+HH:00` and `+HH:MM` (ISO 8601's basic
//!   forms, the same instant); anything else after the seconds stays refused.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// Largest integer every smaller one of which a float holds exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// An integer field's value: an integer, or a float whose value is one (see the module).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Whole<T>(pub T);

impl<'de, T: TryFrom<i64>> Deserialize<'de> for Whole<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WholeVisitor(PhantomData))
    }
}

struct WholeVisitor<T>(PhantomData<T>);

impl<T: TryFrom<i64>> WholeVisitor<T> {
    fn fit<E: de::Error>(&self, n: i64) -> Result<Whole<T>, E> {
        T::try_from(n)
            .map(Whole)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), self))
    }
}

impl<'de, T: TryFrom<i64>> Visitor<'de> for WholeVisitor<T> {
    type Value = Whole<T>;
    // As serde says it for the plain integer types (`expected i64`).
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(std::any::type_name::<T>())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.fit(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        match i64::try_from(v) {
            Ok(n) => self.fit(n),
            Err(_) => Err(E::invalid_value(de::Unexpected::Unsigned(v), &self)),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        if v.is_finite() && v.fract() == 0.0 && v.abs() <= EXACT {
            // Exact: integral and |v| ≤ 2^53.
            #[allow(clippy::cast_possible_truncation)]
            return self.fit(v as i64);
        }
        Err(E::custom(format!(
            "invalid type: floating point `{v}`, expected {}: a float is read as an integer only when it is a whole number within ±2^53",
            std::any::type_name::<T>()
        )))
    }
}

/// `s` with a `+HH` or `+HHMM` offset at its end written `+HH:MM`, or `None` when it has
/// no such offset (then it is parsed as it is).
pub(crate) fn colon_offset(s: &str) -> Option<String> {
    let t = s.trim_matches(' ');
    // The offset's sign comes after the time (`…:SS[.f]±…`), past the date's hyphens.
    let at = t.rfind(['+', '-']).filter(|&i| i > 10)?;
    let (head, digits) = (&t[..at + 1], &t[at + 1..]);
    if !head[..at].ends_with(|c: char| c.is_ascii_digit())
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    match digits.len() {
        2 => Some(format!("{head}{digits}:00")),
        4 => Some(format!("{head}{}:{}", &digits[..2], &digits[2..])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floats_are_read_only_when_exact() {
        let int = |j: &str| {
            serde_json::from_str::<Whole<i64>>(j)
                .map(|w| w.0)
                .map_err(|e| e.to_string())
        };
        assert_eq!(int("3").unwrap(), 3);
        assert_eq!(int("3.0").unwrap(), 3);
        assert_eq!(int("-0.0").unwrap(), 0);
        assert_eq!(int("9007199254740992.0").unwrap(), 1 << 53);
        assert!(int("3.5").unwrap_err().contains("floating point"));
        assert!(int("9007199254740994.0").is_err());
        assert!(int("1e300").is_err());
        assert!(int("\"3\"").is_err());
        let small = serde_json::from_str::<Whole<i32>>("3000000000.0");
        assert!(small.unwrap_err().to_string().contains("expected i32"));
    }

    #[test]
    fn basic_offsets_gain_their_colon_and_nothing_else_changes() {
        assert_eq!(
            colon_offset("2026-07-13 06:00:00+00").as_deref(),
            Some("2026-07-13 06:00:00+00:00")
        );
        assert_eq!(
            colon_offset("2026-07-13T06:00:00.5-0230").as_deref(),
            Some("2026-07-13T06:00:00.5-02:30")
        );
        assert_eq!(colon_offset("2026-07-13T06:00:00+02:00"), None);
        assert_eq!(colon_offset("2026-07-13T06:00:00Z"), None);
        assert_eq!(colon_offset("2026-07-13"), None);
        assert_eq!(colon_offset("2026-07-13T06:00:00+123"), None);
        assert_eq!(colon_offset("2026-07-13T06:00:00+1"), None);
    }
}

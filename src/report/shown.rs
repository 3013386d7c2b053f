//! What the HTML and Markdown reports show of a value from the store: its control
//! characters written out visibly (ESC, C0, C1, line separators and the bidirectional
//! controls U+202A–U+202E and U+2066–U+2069 as `\u{…}`: a planted name can neither drive a
//! terminal showing the Markdown nor reorder the text around it in a browser), and a value
//! longer than [`MAX_SHOWN_CHARS`] cut, with a marker saying how long it was (a planted
//! 17 KB name, repeated in every row that names it, made a 400 MB page). The JSON report
//! keeps every value whole: it is data, and JSON escapes its control characters.

use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::report::model::AuditReport;

/// Characters of one value shown at most (a part key with the longest `run_id` is about
/// 250).
pub(super) const MAX_SHOWN_CHARS: usize = 512;

/// `r` with every string (and map key) as [`shown`] makes it.
pub(crate) fn shown_report(r: &AuditReport) -> Result<AuditReport> {
    let v = serde_json::to_value(r).map_err(Error::internal_from)?;
    serde_json::from_value(walk(v)).map_err(Error::internal_from)
}

fn walk(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(shown(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(walk).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (shown(&k), walk(v))).collect())
        }
        other => other,
    }
}

/// `s` with control characters escaped and cut to [`MAX_SHOWN_CHARS`] characters, then
/// `… (N bytes in all, cut)`.
pub(crate) fn shown(s: &str) -> String {
    let printable = crate::base::text::printable(s);
    match printable.char_indices().nth(MAX_SHOWN_CHARS) {
        None => printable.into_owned(),
        Some((at, _)) => format!("{}… ({} bytes in all, cut)", &printable[..at], s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_visible_and_long_values_cut() {
        assert_eq!(shown("plain"), "plain");
        assert_eq!(
            shown("a\u{1b}[31mb\u{202e}c\u{2066}d\u{85}e\u{7}"),
            "a\\u{1b}[31mb\\u{202e}c\\u{2066}d\\u{85}e\\u{7}"
        );
        let long = "x".repeat(17_000);
        let s = shown(&long);
        assert_eq!(s, format!("{}… (17000 bytes in all, cut)", "x".repeat(512)));
    }
}

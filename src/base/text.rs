//! Text from a store or an input made safe to print: control characters escaped (a file
//! name or a pointer field holding a newline or an escape sequence cannot forge a line of
//! a report, nor drive the terminal). Values quoted in messages are cut short by
//! `schema::rules::quote`.

use std::borrow::Cow;

/// `s` with every control character (C0, DEL, C1) and every Unicode line or paragraph
/// separator or bidirectional control written as a Rust escape (`\n`, `\u{1b}`); `s`
/// itself when it holds none.
pub(crate) fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_text_is_not_copied() {
        assert!(matches!(printable("run_id=a/b.json"), Cow::Borrowed(_)));
        assert_eq!(
            printable("x\nclean: no problems\u{1b}[2K"),
            "x\\nclean: no problems\\u{1b}[2K"
        );
        assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
    }
}

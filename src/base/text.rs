//! Text from a store or an input made safe to print: control characters escaped (a file
//! name or a pointer field holding a newline or an escape sequence cannot forge a line of
//! a report, nor drive the terminal). Values quoted in messages are cut short by
//! `schema::rules::quote`.

use std::borrow::Cow;

/// `s` with every control character (C0, DEL, C1) and every Unicode line or paragraph
/// separator or bidirectional control written as a Rust escape (`\n`, `\u{1b}`); `s`
/// itself when it holds none. (Used by the command line's output; the library without
/// its `cli` feature does not print.)
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
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

#[cfg_attr(not(feature = "cli"), allow(dead_code))]
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// A URL (or what was meant as one, parseable or not) for a message: any userinfo
/// (`user:password@`) replaced by `***@`, every query value (`X-Amz-Signature=…`, a SAS
/// token) by `***`, a fragment by `#***`. A refused URL is then named without echoing
/// the secret that may be why it was refused.
pub(crate) fn redact_url(url: &str) -> String {
    let (head, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, _)) => (r, "#***"),
        None => (rest, ""),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => {
            let q: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None => "***".to_string(),
                })
                .collect();
            (r, format!("?{}", q.join("&")))
        }
        None => (rest, String::new()),
    };
    let end = if head.is_empty() {
        0
    } else {
        rest.find('/').unwrap_or(rest.len())
    };
    let rest = match rest[..end].rfind('@') {
        Some(at) => format!("***{}", &rest[at..]),
        None if head.is_empty() => rest.to_string(),
        // `file://u:pw@/path`: the authority is empty, the userinfo sits before `/`.
        None => match rest.find('@').filter(|&at| !rest[..at].contains('/')) {
            Some(at) => format!("***{}", &rest[at..]),
            None => rest.to_string(),
        },
    };
    format!("{head}{rest}{query}{fragment}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_named_without_their_secrets() {
        for (url, want) in [
            ("http://user:pw@host:9000/p", "http://***@host:9000/p"),
            (
                "https://h/b/k?X-Amz-Signature=abc&X-Amz-Credential=AKIA",
                "https://h/b/k?X-Amz-Signature=***&X-Amz-Credential=***",
            ),
            ("file://u:pw@/data/lake", "file://***@/data/lake"),
            ("s3://bucket/prefix", "s3://bucket/prefix"),
            ("http://h/p#tok", "http://h/p#***"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(super::redact_url(url), want);
        }
    }

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

//! An HTTP exchange that failed, in words: what the outside services the applications
//! talk to (a TSA, a C2SP witness) are told apart by, without the URL.

/// A transport error in words, without the URL (whose query may hold a token): what
/// failed (timeout, connection, the exchange) and the innermost cause, when it says more.
pub(crate) fn words(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "no answer within the timeout"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "the exchange failed"
    };
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = src {
        detail = s.to_string();
        src = s.source();
    }
    if detail.is_empty() || detail == what {
        what.to_string()
    } else {
        format!("{what} ({detail})")
    }
}

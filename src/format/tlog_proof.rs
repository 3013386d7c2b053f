//! C2SP transparency-log proofs (`c2sp.org/tlog-proof@v1`): pure data.
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! extra <base64 opaque data>          (optional; ours: the commit pointer's exact bytes)
//! index <leaf index>
//! <base64 hash>                        (the RFC 6962 audit path, leaf's sibling first)
//! …
//!
//! <the checkpoint, verbatim>
//! ```

use base64::Engine;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The first line of a proof.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// A parsed proof (nothing checked but its form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// The extra data (unauthenticated by the format: ours is checked through the leaf).
    pub extra: Option<Vec<u8>>,
    /// The leaf's index.
    pub index: u64,
    /// The audit path.
    pub path: Vec<[u8; 32]>,
    /// The checkpoint, verbatim.
    pub checkpoint: String,
}

/// The proof's text.
pub fn render(p: &TlogProof) -> String {
    let mut s = format!("{TLOG_PROOF_HEADER}\n");
    if let Some(e) = &p.extra {
        s.push_str(&format!("extra {}\n", B64.encode(e)));
    }
    s.push_str(&format!("index {}\n", p.index));
    for h in &p.path {
        s.push_str(&B64.encode(h));
        s.push('\n');
    }
    s.push('\n');
    s.push_str(&p.checkpoint);
    s
}

/// Whether `text` is a tlog proof (its first line).
pub fn is_tlog_proof(text: &str) -> bool {
    text.split('\n').next() == Some(TLOG_PROOF_HEADER)
}

/// Parse a proof; `Err` says what is wrong with its form.
pub fn parse(text: &str) -> Result<TlogProof, String> {
    let (head, checkpoint) = text
        .split_once("\n\n")
        .ok_or("no empty line before the checkpoint")?;
    let mut lines = head.split('\n');
    if lines.next() != Some(TLOG_PROOF_HEADER) {
        return Err(format!("the first line is not {TLOG_PROOF_HEADER}"));
    }
    let mut line = lines.next().ok_or("no index line")?;
    let mut extra = None;
    if let Some(e) = line.strip_prefix("extra ") {
        extra = Some(B64.decode(e).map_err(|_| "the extra data is not base64")?);
        line = lines.next().ok_or("no index line")?;
    }
    let index = line
        .strip_prefix("index ")
        .and_then(|i| i.parse::<u64>().ok().filter(|n| n.to_string() == i))
        .ok_or("no valid index line")?;
    let path = lines
        .map(|l| {
            B64.decode(l)
                .ok()
                .and_then(|h| <[u8; 32]>::try_from(h).ok())
                .ok_or_else(|| format!("path line {l:?} is not a base64 SHA-256 hash"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TlogProof {
        extra,
        index,
        path,
        checkpoint: checkpoint.to_string(),
    })
}

#[cfg(test)]
mod tests {
    //! The proof text round-trips; malformed ones are refused.

    use super::*;

    #[test]
    fn a_proof_renders_and_parses_back() {
        let p = TlogProof {
            extra: Some(b"{\"a\":1}".to_vec()),
            index: 5,
            path: vec![[1; 32], [2; 32]],
            checkpoint: "o\n6\nAAAA\n\n\u{2014} o AAAA\n".into(),
        };
        let t = render(&p);
        assert!(t.starts_with("c2sp.org/tlog-proof@v1\nextra eyJhIjoxfQ==\nindex 5\n"));
        assert!(is_tlog_proof(&t));
        assert_eq!(parse(&t), Ok(p.clone()));
        let no_extra = TlogProof { extra: None, ..p };
        assert_eq!(parse(&render(&no_extra)), Ok(no_extra));
        assert!(parse(&t.replace("index 5", "index 05")).is_err());
        assert!(parse(&t.replace("c2sp.org/tlog-proof@v1", "x")).is_err());
    }
}

//! The bodies of `c2sp.org/tlog-witness`'s `add-checkpoint`: pure data, no I/O.
//!
//! The request is `old <size>\n`, one base64 hash per line of the RFC 6962 consistency
//! proof from that size to the checkpoint's (none when the old size is 0), a blank line,
//! then the checkpoint with its signatures. A witness answers 200 with its cosignature
//! lines, or 409 with the size it last cosigned for the origin (`text/x.tlog.size`:
//! decimal and a newline), or 400/403/404/422 ([`crate::base::cosign::CosignError`]).

use base64::Engine;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The path below a witness's submission prefix.
pub const ADD_CHECKPOINT: &str = "add-checkpoint";

/// Most consistency proof lines a request may carry (the protocol's limit).
pub const MAX_PROOF_LINES: usize = 63;

/// The most of a witness's answer read: cosignature lines are about 130 bytes each, a
/// size line a few; more is refused, not read.
pub const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The `add-checkpoint` request body: `old`, the proof from it, and the signed
/// checkpoint `note`. `None` when the proof has more lines than the protocol allows.
pub fn request(old: u64, proof: &[[u8; 32]], note: &str) -> Option<String> {
    if proof.len() > MAX_PROOF_LINES {
        return None;
    }
    let mut s = format!("old {old}\n");
    for h in proof {
        s.push_str(&B64.encode(h));
        s.push('\n');
    }
    s.push('\n');
    s.push_str(note);
    Some(s)
}

/// The size a 409 answer states: a decimal without leading zeroes and a newline.
pub fn parse_size(body: &str) -> Option<u64> {
    let line = body.strip_suffix('\n')?;
    let n: u64 = line.parse().ok()?;
    (n.to_string() == line).then_some(n)
}

/// A parsed request (what a witness reads): the old size, the proof and the note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The old size.
    pub old: u64,
    /// The consistency proof.
    pub proof: Vec<[u8; 32]>,
    /// The checkpoint with its signatures.
    pub note: String,
}

/// Parse a request body; `Err` says what is malformed.
pub fn parse_request(body: &str) -> Result<Request, String> {
    let (head, note) = body
        .split_once("\n\n")
        .ok_or("no blank line before the checkpoint")?;
    let mut lines = head.split('\n');
    let old = lines
        .next()
        .and_then(|l| l.strip_prefix("old "))
        .and_then(|n| parse_size(&format!("{n}\n")))
        .ok_or("the first line is not `old <size>`")?;
    let proof = lines
        .map(|l| {
            B64.decode(l)
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
        })
        .collect::<Option<Vec<_>>>()
        .ok_or("a proof line that is not a base64 SHA-256 hash")?;
    if proof.len() > MAX_PROOF_LINES {
        return Err(format!("{} proof lines, more than 63", proof.len()));
    }
    Ok(Request {
        old,
        proof,
        note: note.to_string(),
    })
}

#[cfg(test)]
mod tests {
    //! Request and size bodies as the spec writes them.

    use super::*;

    #[test]
    fn a_request_is_old_the_proof_a_blank_line_and_the_checkpoint() {
        let note = "o\n5\nAAAA\n\n\u{2014} o AAAA\n";
        let r = request(3, &[[0; 32], [255; 32]], note).unwrap();
        assert_eq!(
            r,
            format!(
                "old 3\n{}\n{}\n\n{note}",
                B64.encode([0u8; 32]),
                B64.encode([255u8; 32])
            )
        );
        let p = parse_request(&r).unwrap();
        assert_eq!((p.old, p.proof.len(), p.note.as_str()), (3, 2, note));
        assert_eq!(request(0, &[], note).unwrap(), format!("old 0\n\n{note}"));
        assert!(request(1, &[[0; 32]; 64], note).is_none());
        assert!(parse_request("old 03\n\nx").is_err());
        assert!(parse_request("old 3\nnot base64\n\nx").is_err());
    }

    #[test]
    fn a_size_answer_is_a_decimal_and_a_newline() {
        assert_eq!(parse_size("20852014\n"), Some(20852014));
        assert_eq!(parse_size("0\n"), Some(0));
        for bad in ["12", "012\n", "-1\n", "1 \n", "\n"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }
}

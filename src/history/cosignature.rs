//! Checking cosignatures (`cosignature/v1`, [`crate::format::cosignature`]) on a seal's
//! checkpoint, and the cosigned checkpoint as stored: the checkpoint's note with the
//! witness's cosignature line after the log's signature, a signed note any C2SP tool
//! checks with the log's and the witness's verifier keys.

use ed25519_dalek::{Signature, Verifier, VerifyingKey};

use crate::format::checkpoint::{self as cp, NoteSignature};
use crate::format::cosignature::{message, split, Cosigner};

/// What a note holds by one cosigner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A cosignature that verifies, made at this POSIX time; its line.
    Valid {
        /// The witness's timestamp (seconds since the Epoch).
        timestamp: u64,
        /// The signature line, as in a note.
        line: String,
    },
    /// No signature line by the cosigner (name and key id).
    Missing,
    /// A line by the cosigner that does not verify, and why.
    Forged(String),
}

/// Check one signature line by `c` over the checkpoint text `body`: the timestamp.
pub fn check(c: &Cosigner, body: &str, s: &NoteSignature) -> Result<u64, String> {
    let (timestamp, sig) = split(s)?;
    let key = VerifyingKey::from_bytes(&c.key)
        .map_err(|_| "the witness key is not a valid Ed25519 point")?;
    key.verify(
        message(body, timestamp).as_bytes(),
        &Signature::from_bytes(&sig),
    )
    .map_err(|_| {
        format!(
            "the cosignature by {} does not verify over this checkpoint at time {timestamp}",
            c.name
        )
    })?;
    Ok(timestamp)
}

/// What `signatures` hold by `c` over `body`: the first valid one, else the first reason a
/// line by it fails, else missing.
pub fn find(c: &Cosigner, body: &str, signatures: &[NoteSignature]) -> Found {
    let mut forged = None;
    for s in signatures.iter().filter(|s| c.names(s)) {
        match check(c, body, s) {
            Ok(timestamp) => {
                return Found::Valid {
                    timestamp,
                    line: cp::signature_line(&s.name, s.id, &s.signature),
                }
            }
            Err(why) => {
                forged.get_or_insert(why);
            }
        }
    }
    forged.map_or(Found::Missing, Found::Forged)
}

/// The cosigned checkpoint stored for a witness: the log's `note` (its text and the
/// log's signatures) with the cosignature `line` appended.
pub fn cosigned(note: &str, line: &str) -> String {
    format!("{note}{line}")
}

/// Check a stored cosigned checkpoint against the seal's `checkpoint` (its note) and the
/// cosigner `c`: it parses, its text is the checkpoint's, and it holds a valid
/// cosignature by `c`. The witness's timestamp, or why not.
pub fn check_stored(stored: &str, checkpoint: &str, c: &Cosigner) -> Result<u64, String> {
    let have = cp::parse(stored).map_err(|e| format!("not a signed checkpoint: {e}"))?;
    let want = cp::parse(checkpoint).map_err(|e| format!("the seal's checkpoint: {e}"))?;
    if have.body != want.body {
        return Err(format!(
            "cosigns another checkpoint (tree size {}) than the seal's (tree size {})",
            have.tree_size, want.tree_size
        ));
    }
    match find(c, &have.body, &have.signatures) {
        Found::Valid { timestamp, .. } => Ok(timestamp),
        Found::Missing => Err(format!(
            "holds no cosignature by {} (key id {:08x})",
            c.name, c.id
        )),
        Found::Forged(why) => Err(why),
    }
}

#[cfg(test)]
mod tests {
    //! A cosignature made here by the spec's recipe verifies; any change is refused.

    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn cosign(k: &SigningKey, c: &Cosigner, body: &str, t: u64) -> NoteSignature {
        let sig = k.sign(message(body, t).as_bytes());
        let mut raw = t.to_be_bytes().to_vec();
        raw.extend_from_slice(&sig.to_bytes());
        NoteSignature {
            name: c.name.clone(),
            id: c.id,
            signature: raw,
        }
    }

    #[test]
    fn a_cosignature_verifies_and_a_changed_one_is_named() {
        let k = SigningKey::from_bytes(&[4; 32]);
        let c = Cosigner::new("w.example/w1", k.verifying_key().to_bytes());
        let body = "o\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
        let s = cosign(&k, &c, body, 1_800_000_000);
        assert_eq!(check(&c, body, &s), Ok(1_800_000_000));
        assert!(matches!(
            find(&c, body, std::slice::from_ref(&s)),
            Found::Valid {
                timestamp: 1_800_000_000,
                ..
            }
        ));
        assert_eq!(find(&c, body, &[]), Found::Missing);
        let mut later = s.clone();
        later.signature[7] ^= 1;
        let Found::Forged(why) = find(&c, body, &[later]) else {
            panic!("a changed timestamp verified");
        };
        assert!(
            why.contains("does not verify over this checkpoint at time 1800000001"),
            "{why}"
        );
        assert!(check(&c, &body.replace('3', "4"), &s).is_err());
        let other = Cosigner::new("w.example/w2", c.key);
        assert_eq!(find(&other, body, &[s]), Found::Missing);
    }
}

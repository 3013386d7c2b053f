//! Cosignatures (`c2sp.org/tlog-cosignature`, the Ed25519 type `cosignature/v1`): pure
//! data, no I/O and no cryptography (the signatures are checked in
//! [`crate::history::cosignature`]).
//!
//! A cosignature is a note signature line on a checkpoint, by a witness (a *cosigner*):
//! `— <witness name> base64(key id (4 bytes) || timestamp (8 bytes, big-endian) ||
//! Ed25519 signature (64 bytes))`. The key id is the first four bytes of
//! `sha256(name || 0x0A || 0x04 || public key)`, and the witness's verifier key is
//! published as `<name>+<key id, 8 hex digits>+base64(0x04 || public key)`. The signed
//! message is `cosignature/v1\ntime <timestamp>\n` followed by the checkpoint's text (its
//! lines up to the blank line, final newline included): the witness states that, at
//! that time, this was the largest consistent tree it had seen for the origin.

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::format::checkpoint::{name_problem, NoteSignature, ED25519_TYPE};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The signature type byte of Ed25519 cosignatures (`cosignature/v1`).
pub const COSIGNATURE_TYPE: u8 = 0x04;

/// The first line of the signed message (domain separation).
pub const HEADER: &str = "cosignature/v1";

/// Bytes of a cosignature after the key id: timestamp and Ed25519 signature.
pub const SIGNATURE_BYTES: usize = 8 + 64;

/// The most a stored cosigned checkpoint can hold (a checkpoint and a few signature lines:
/// well under 1 KiB); a larger object is refused unread.
pub const MAX_COSIGNED_BYTES: u64 = 64 * 1024;

/// A witness as a verifier of its cosignatures: its name, Ed25519 public key and key id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cosigner {
    /// The key name (a schema-less URL by convention).
    pub name: String,
    /// The Ed25519 public key.
    pub key: [u8; 32],
    /// The key id ([`key_id`]).
    pub id: u32,
}

impl Cosigner {
    /// The cosigner `name` with `key`.
    pub fn new(name: &str, key: [u8; 32]) -> Self {
        Cosigner {
            name: name.to_string(),
            key,
            id: key_id(name, &key),
        }
    }

    /// Its verifier key (`<name>+<id>+<base64(0x04 || key)>`).
    pub fn vkey(&self) -> String {
        let mut k = vec![COSIGNATURE_TYPE];
        k.extend_from_slice(&self.key);
        format!("{}+{:08x}+{}", self.name, self.id, B64.encode(k))
    }

    /// Whether a signature line is by this cosigner (name and key id; not yet checked).
    pub fn names(&self, s: &NoteSignature) -> bool {
        s.name == self.name && s.id == self.id
    }
}

/// The key id of an Ed25519 cosigner key under `name`.
pub fn key_id(name: &str, public_key: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', COSIGNATURE_TYPE]);
    h.update(public_key);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// Parse a witness's verifier key; `Err` says what is wrong (a log's key, of type 0x01,
/// is named as such: a checkpoint signer is not a cosigner).
pub fn parse_vkey(vkey: &str) -> Result<Cosigner, String> {
    let mut parts = vkey.trim().splitn(3, '+');
    let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("is not <name>+<key id>+<base64 key>".into());
    };
    if let Some(why) = name_problem(name) {
        return Err(format!("its name {why}"));
    }
    let bytes = B64.decode(key).map_err(|_| "its key is not base64")?;
    let Some((&t, key)) = bytes.split_first() else {
        return Err("its key is empty".into());
    };
    if t == ED25519_TYPE {
        return Err("is a log's signing key (type 0x01), not a witness's cosignature key (type 0x04, cosignature/v1)".into());
    }
    if t != COSIGNATURE_TYPE {
        return Err(format!(
            "has key type 0x{t:02x}; only Ed25519 cosignatures (cosignature/v1, type 0x04) are supported"
        ));
    }
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| "its key is not 32 bytes (Ed25519)")?;
    let c = Cosigner::new(name, key);
    if id.len() != 8 || u32::from_str_radix(id, 16).ok() != Some(c.id) {
        return Err(format!(
            "its key id {id} is not the one its name and key give ({:08x})",
            c.id
        ));
    }
    Ok(c)
}

/// The message a cosignature at `timestamp` signs over the checkpoint text `body` (its
/// lines up to the blank line, final newline included).
pub fn message(body: &str, timestamp: u64) -> String {
    format!("{HEADER}\ntime {timestamp}\n{body}")
}

/// A cosignature split into its timestamp (POSIX seconds) and Ed25519 signature; `Err`
/// when the signature line does not hold exactly those 72 bytes or the timestamp is zero
/// or past 2^63 - 1.
pub fn split(s: &NoteSignature) -> Result<(u64, [u8; 64]), String> {
    if s.signature.len() != SIGNATURE_BYTES {
        return Err(format!(
            "a cosignature of {} bytes, not the {SIGNATURE_BYTES} of cosignature/v1 (timestamp and Ed25519 signature)",
            s.signature.len()
        ));
    }
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&s.signature[..8]);
    let timestamp = u64::from_be_bytes(ts);
    if timestamp == 0 || timestamp > i64::MAX as u64 {
        return Err(format!(
            "a cosignature timestamp of {timestamp} (must be from 1 to 2^63 - 1)"
        ));
    }
    let mut sig = [0u8; 64];
    sig.copy_from_slice(&s.signature[8..]);
    Ok((timestamp, sig))
}

#[cfg(test)]
mod tests {
    //! The cosignature format: key ids, vkeys and the signed message, from the spec.

    use super::*;

    #[test]
    fn a_vkey_round_trips_and_refuses_a_log_key_or_a_wrong_id() {
        let c = Cosigner::new("witness.example/w1", [9; 32]);
        let v = c.vkey();
        assert_eq!(parse_vkey(&v), Ok(c.clone()));
        let log = crate::format::checkpoint::vkey("witness.example/w1", &[9; 32]);
        let e = parse_vkey(&log).unwrap_err();
        assert!(e.contains("a log's signing key (type 0x01)"), "{e}");
        let wrong = v.replacen(&format!("{:08x}", c.id), "00000000", 1);
        let e = parse_vkey(&wrong).unwrap_err();
        assert!(e.contains("key id 00000000 is not"), "{e}");
        assert!(parse_vkey("a b+00000000+AA==").is_err());
        // The key id commits to the type byte: it differs from the note key id.
        assert_ne!(
            c.id,
            crate::format::checkpoint::key_id("witness.example/w1", &[9; 32])
        );
    }

    #[test]
    fn the_signed_message_is_the_header_the_time_and_the_checkpoint_text() {
        let body =
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        assert_eq!(
            message(body, 1679315147),
            "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        );
    }

    #[test]
    fn a_cosignature_splits_into_its_timestamp_and_signature_or_is_refused() {
        let mut raw = 1_700_000_000u64.to_be_bytes().to_vec();
        raw.extend_from_slice(&[5; 64]);
        let s = NoteSignature {
            name: "w".into(),
            id: 1,
            signature: raw.clone(),
        };
        assert_eq!(split(&s), Ok((1_700_000_000, [5; 64])));
        let short = NoteSignature {
            signature: raw[..71].to_vec(),
            ..s.clone()
        };
        assert!(split(&short).unwrap_err().contains("71 bytes"));
        let mut zero = raw.clone();
        zero[..8].copy_from_slice(&[0; 8]);
        let zero = NoteSignature {
            signature: zero,
            ..s
        };
        assert!(split(&zero).unwrap_err().contains("timestamp of 0"));
    }
}

//! C2SP checkpoints (`c2sp.org/tlog-checkpoint`) as signed notes (`c2sp.org/signed-note`):
//! pure data, no I/O and no cryptography (the signatures are made and checked in
//! [`crate::history::checkpoint`]).
//!
//! A checkpoint's text is three lines: the log's *origin* (a schema-less name), the tree
//! size in decimal, and the base64 RFC 6962 root of the tree at that size. A blank line and
//! one or more signature lines follow: `— <key name> base64(key id (4 bytes, big-endian)
//! || signature)`. The Ed25519 key id is the first four bytes of
//! `sha256(key name || 0x0A || 0x01 || public key)`, and a verifier key is published as
//! `<name>+<key id, 8 hex digits>+base64(0x01 || public key)` (the *vkey*).

use base64::Engine;
use sha2::{Digest, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The signature type byte of Ed25519 note signatures.
pub const ED25519_TYPE: u8 = 0x01;

/// The em dash (U+2014) and space that open a signature line.
const SIG_LEAD: &str = "\u{2014} ";

/// The origin a store's checkpoints carry unless one is given: `lineage-store/<store id>`
/// (stable for the store's lifetime, since its identity is create-only).
pub fn default_origin(store_id: &str) -> String {
    format!("lineage-store/{store_id}")
}

/// The origin used for a store that has no identity (written by versions before
/// identities): `seal --origin` names a better one.
pub const UNIDENTIFIED_ORIGIN: &str = "lineage-store/unidentified";

/// Why `name` is not a valid origin or key name, or `None`: non-empty, no Unicode space,
/// no `+`, no control character (signed-note's rules for key names, which checkpoints'
/// signature lines use for the origin).
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.chars().any(char::is_whitespace) {
        Some("contains a space")
    } else if name.contains('+') {
        Some("contains `+`")
    } else if name.chars().any(char::is_control) {
        Some("contains a control character")
    } else {
        None
    }
}

/// The note key id of an Ed25519 key under `name`.
pub fn key_id(name: &str, public_key: &[u8; 32]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ED25519_TYPE]);
    h.update(public_key);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// The verifier key (`<name>+<id>+<base64(0x01 || key)>`).
pub fn vkey(name: &str, public_key: &[u8; 32]) -> String {
    let mut k = vec![ED25519_TYPE];
    k.extend_from_slice(public_key);
    format!("{name}+{:08x}+{}", key_id(name, public_key), B64.encode(k))
}

/// A parsed verifier key: its name and Ed25519 public key (the id is checked on parsing).
pub fn parse_vkey(vkey: &str) -> Option<(String, [u8; 32])> {
    let mut parts = vkey.trim().splitn(3, '+');
    let (name, id, key) = (parts.next()?, parts.next()?, parts.next()?);
    let bytes = B64.decode(key).ok()?;
    let (&t, key) = bytes.split_first()?;
    let key: [u8; 32] = key.try_into().ok()?;
    let ok = t == ED25519_TYPE
        && name_problem(name).is_none()
        && id.len() == 8
        && u32::from_str_radix(id, 16).ok()? == key_id(name, &key);
    ok.then(|| (name.to_string(), key))
}

/// The checkpoint text (the signed part of the note): origin, size, base64 root.
pub fn body(origin: &str, tree_size: u64, root: &[u8; 32]) -> String {
    format!("{origin}\n{tree_size}\n{}\n", B64.encode(root))
}

/// One signature line (with its newline).
pub fn signature_line(name: &str, id: u32, signature: &[u8]) -> String {
    let mut b = id.to_be_bytes().to_vec();
    b.extend_from_slice(signature);
    format!("{SIG_LEAD}{name} {}\n", B64.encode(b))
}

/// A signed note of `body` with its signature lines.
pub fn note(body: &str, signature_lines: &[String]) -> String {
    format!("{body}\n{}", signature_lines.concat())
}

/// One signature of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name.
    pub name: String,
    /// The key id.
    pub id: u32,
    /// The signature bytes (after the id).
    pub signature: Vec<u8>,
}

/// A parsed checkpoint: its text and fields, and its signatures (unchecked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The signed text, final newline included.
    pub body: String,
    /// The origin line.
    pub origin: String,
    /// The tree size.
    pub tree_size: u64,
    /// The root hash.
    pub root: [u8; 32],
    /// The signature lines, in order.
    pub signatures: Vec<NoteSignature>,
}

/// Parse a signed checkpoint; `Err` says what is wrong. Extension lines are refused (ours
/// carry none).
pub fn parse(note: &str) -> Result<Checkpoint, String> {
    if note.chars().any(|c| c.is_control() && c != '\n') {
        return Err("contains a control character".into());
    }
    let split = note
        .rfind("\n\n")
        .ok_or("no blank line before the signatures")?;
    let (body, sigs) = (&note[..=split], &note[split + 2..]);
    let lines: Vec<&str> = body.trim_end_matches('\n').split('\n').collect();
    let [origin, size, root] = lines[..] else {
        return Err(format!(
            "the text has {} lines, a checkpoint of ours 3",
            lines.len()
        ));
    };
    if let Some(why) = name_problem(origin) {
        return Err(format!("the origin {why}"));
    }
    let tree_size: u64 = size
        .parse()
        .ok()
        .filter(|n: &u64| n.to_string() == size)
        .ok_or("the tree size is not a decimal number without leading zeroes")?;
    let root: [u8; 32] = B64
        .decode(root)
        .ok()
        .and_then(|r| r.try_into().ok())
        .ok_or("the root is not 32 bytes of base64")?;
    let signatures = parse_signatures(sigs)?;
    Ok(Checkpoint {
        body: body.to_string(),
        origin: origin.to_string(),
        tree_size,
        root,
        signatures,
    })
}

/// Parse signature lines (each `— <name> <base64>` and its newline), as a note carries
/// them after its blank line and a tlog witness answers them.
pub fn parse_signatures(sigs: &str) -> Result<Vec<NoteSignature>, String> {
    if sigs.is_empty() || !sigs.ends_with('\n') {
        return Err("no signature line, or one without its newline".into());
    }
    sigs.trim_end_matches('\n')
        .split('\n')
        .map(|line| {
            let rest = line
                .strip_prefix(SIG_LEAD)
                .ok_or("a signature line that does not start with an em dash")?;
            let (name, b64) = rest
                .split_once(' ')
                .ok_or("a signature line without a signature")?;
            let raw = B64
                .decode(b64)
                .map_err(|_| "a signature that is not base64")?;
            if name_problem(name).is_some() || raw.len() < 5 {
                return Err("a malformed signature line".into());
            }
            Ok(NoteSignature {
                name: name.to_string(),
                id: u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]),
                signature: raw[4..].to_vec(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! The checkpoint format: round trip, the vkey's id, and refusals.

    use super::*;

    #[test]
    fn a_note_parses_back_to_its_fields_and_refuses_edits() {
        let root = [7u8; 32];
        let b = body("example.com/log", 42, &root);
        assert_eq!(
            b,
            "example.com/log\n42\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n"
        );
        let n = note(
            &b,
            &[signature_line("example.com/log", 0xdead_beef, &[1; 64])],
        );
        let c = parse(&n).unwrap();
        assert_eq!(
            (c.origin.as_str(), c.tree_size, c.root),
            ("example.com/log", 42, root)
        );
        assert_eq!(c.body, b);
        assert_eq!(c.signatures.len(), 1);
        assert_eq!(c.signatures[0].id, 0xdead_beef);
        assert_eq!(c.signatures[0].signature, vec![1; 64]);
        for bad in [
            n.replace("\n42\n", "\n042\n"),
            n.replace("\n\n", "\n"),
            n.replace('\u{2014}', "-"),
            format!("x\n{n}"),
            n.trim_end().to_string(),
        ] {
            assert!(parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_vkey_carries_the_signed_note_key_id_and_parses_back() {
        let pk = [3u8; 32];
        let v = vkey("example.com/log", &pk);
        let (name, id, _) = {
            let mut p = v.splitn(3, '+');
            (p.next().unwrap(), p.next().unwrap(), p.next().unwrap())
        };
        assert_eq!(name, "example.com/log");
        assert_eq!(id, format!("{:08x}", key_id("example.com/log", &pk)));
        assert_eq!(parse_vkey(&v), Some(("example.com/log".to_string(), pk)));
        assert_eq!(parse_vkey(&v.replacen("example", "exbmple", 1)), None);
        assert!(name_problem("a b").is_some() && name_problem("a+b").is_some());
        assert!(name_problem("").is_some() && name_problem("lineage-store/x").is_none());
    }
}

//! Writer signatures: a part its writer made provable with an Ed25519 key
//! (`append --signing-key`), so that `repair --writer-key` adopts an orphan part only when a
//! known writer signed it, and `verify` names a signed part whose signature does not hold.
//!
//! A part's footer cannot hold a digest of itself, so the signature covers the bytes
//! before it: the encoder flushes every row group (the `PAR1` magic, the column chunks and
//! their bloom filters), hashes the `signed_bytes` bytes written so far, and only then adds
//! the signature to the key-value metadata the footer is written with. The signed message
//! ([`message`]) is the ASCII text
//!
//! ```text
//! lineage-store writer signature v1\n
//! store_id <lineage_store_id>\n
//! commit_id <lineage_commit_id>\n
//! rows <the footer's row count>\n
//! signed_bytes <N>\n
//! body_sha256 <lower-case hex sha256 of the part's first N bytes>\n
//! ```
//!
//! The footer carries five keys ([`crate::schema::contract`] `META_WRITER_*`): the public
//! key (base64), its key id, `signed_bytes`, `body_sha256` and the signature (base64).
//! Not covered: the page indexes and the footer itself, except the values the message
//! names. A part written without a key carries none of them and is byte-identical to a
//! part written before signatures existed.

use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use parquet::file::metadata::{KeyValue, ParquetMetaData};

use crate::base::digest::sha256_hex;
use crate::schema::contract;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The first line of every signed message: what the signature is for, so a writer
/// signature can never be taken for a seal's or a checkpoint's.
pub const DOMAIN: &str = "lineage-store writer signature v1";

/// A short, printable id of a public key: the first 16 hex digits of its sha256 (what
/// `lineage keygen` prints, and seals name).
pub fn key_id(k: &VerifyingKey) -> String {
    sha256_hex(k.as_bytes())[..16].to_string()
}

/// The message a writer signs for a part of store `store_id`, commit `commit_id`, `rows`
/// rows, whose first `signed_bytes` bytes hash to `body_sha256` (see the module
/// documentation).
pub fn message(
    store_id: &str,
    commit_id: &str,
    rows: u64,
    signed_bytes: u64,
    body_sha256: &str,
) -> Vec<u8> {
    format!(
        "{DOMAIN}\nstore_id {store_id}\ncommit_id {commit_id}\nrows {rows}\nsigned_bytes {signed_bytes}\nbody_sha256 {body_sha256}\n"
    )
    .into_bytes()
}

/// The footer entries that sign a part of store `store_id`, commit `commit_id`, `rows`
/// rows, whose bytes before the footer are `body`.
pub fn sign(
    key: &SigningKey,
    store_id: &str,
    commit_id: &str,
    rows: u64,
    body: &[u8],
) -> Vec<KeyValue> {
    let vk = key.verifying_key();
    let body_sha256 = sha256_hex(body);
    let n = body.len() as u64;
    let sig = key.sign(&message(store_id, commit_id, rows, n, &body_sha256));
    [
        (contract::META_WRITER_PUBLIC_KEY, B64.encode(vk.as_bytes())),
        (contract::META_WRITER_KEY_ID, key_id(&vk)),
        (contract::META_WRITER_SIGNED_BYTES, n.to_string()),
        (contract::META_WRITER_BODY_SHA256, body_sha256),
        (contract::META_WRITER_SIGNATURE, B64.encode(sig.to_bytes())),
    ]
    .into_iter()
    .map(|(k, v)| KeyValue::new(k.to_string(), v))
    .collect()
}

/// The writer-signature entries of a part's footer, as found (nothing parsed yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignatureFields {
    /// `lineage_writer_public_key`.
    pub public_key: Option<String>,
    /// `lineage_writer_key_id`.
    pub key_id: Option<String>,
    /// `lineage_writer_signed_bytes`.
    pub signed_bytes: Option<String>,
    /// `lineage_writer_body_sha256`.
    pub body_sha256: Option<String>,
    /// `lineage_writer_signature`.
    pub signature: Option<String>,
}

impl SignatureFields {
    /// The entries of the footer `meta`'s key-value metadata.
    pub fn of(meta: &ParquetMetaData) -> Self {
        let kv = |name: &str| {
            meta.file_metadata()
                .key_value_metadata()
                .and_then(|kv| kv.iter().find(|k| k.key == name))
                .and_then(|k| k.value.clone())
        };
        Self {
            public_key: kv(contract::META_WRITER_PUBLIC_KEY),
            key_id: kv(contract::META_WRITER_KEY_ID),
            signed_bytes: kv(contract::META_WRITER_SIGNED_BYTES),
            body_sha256: kv(contract::META_WRITER_BODY_SHA256),
            signature: kv(contract::META_WRITER_SIGNATURE),
        }
    }

    /// True when the footer carries none of them (an unsigned part).
    pub fn is_unsigned(&self) -> bool {
        *self == Self::default()
    }

    /// How many bytes the signature says it covers, when the footer says so readably.
    pub fn signed_len(&self) -> Option<u64> {
        self.signed_bytes.as_deref()?.parse().ok()
    }
}

/// What a footer says of a part, as far as its writer signature is concerned.
#[derive(Debug, Clone, Copy)]
pub struct SignedFooter<'a> {
    /// The footer's `lineage_store_id`.
    pub store_id: Option<&'a str>,
    /// The footer's `lineage_commit_id`.
    pub commit_id: Option<&'a str>,
    /// The footer's row count.
    pub rows: u64,
    /// Its writer-signature entries.
    pub fields: &'a SignatureFields,
}

/// Which keys a signature must be made with.
#[derive(Debug, Clone, Copy)]
pub enum WriterKeys<'a> {
    /// Whichever key the footer names (`verify`: does the part hold together?).
    Any,
    /// One of these (`repair --writer-key`: did a known writer sign it?).
    Only(&'a [VerifyingKey]),
}

/// The outcome of [`check_writer_signature`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by the key `key_id` over the footer's store id, commit id and row count and
    /// (when the bytes were hashed) over the part's bytes as they are.
    Verified {
        /// The signing key's id.
        key_id: String,
    },
    /// The footer carries no writer signature.
    Unsigned,
    /// A valid signature by a key that is not one of the keys given.
    UnknownKey {
        /// The signing key's id.
        key_id: String,
    },
    /// The signature entries are incomplete or malformed, or the signature does not verify
    /// over the footer's own store id, commit id, row count and body digest.
    BadSignature {
        /// The key id the footer names, if any.
        key_id: Option<String>,
        /// What is wrong.
        why: String,
    },
    /// A valid signature, but the part's signed bytes no longer hash to the digest signed.
    BytesChanged {
        /// The signing key's id.
        key_id: String,
        /// How many bytes the signature covers.
        signed_bytes: u64,
        /// The sha256 signed.
        signed: String,
        /// The sha256 of those bytes as they are.
        actual: String,
    },
}

impl Verdict {
    /// True for [`Verdict::Verified`].
    pub fn is_verified(&self) -> bool {
        matches!(self, Verdict::Verified { .. })
    }

    /// The verdict as a sentence, naming its evidence.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Verified { key_id } => format!("signed by writer key {key_id}"),
            Verdict::Unsigned => "unsigned: its footer carries no writer signature".into(),
            Verdict::UnknownKey { key_id } => format!(
                "signed by writer key {key_id}, which is not one of the writer keys given"
            ),
            Verdict::BadSignature { key_id, why } => match key_id {
                Some(k) => format!("bad writer signature (key {k}): {why}"),
                None => format!("bad writer signature: {why}"),
            },
            Verdict::BytesChanged {
                key_id,
                signed_bytes,
                signed,
                actual,
            } => format!(
                "bytes changed since writer key {key_id} signed them: its first {signed_bytes} bytes hash to sha256 {actual}, the signature covers {signed}"
            ),
        }
    }
}

/// Whether the footer's writer signature holds: made by one of `keys`, over the footer's
/// store id, commit id and row count and the digest it records; and, when `body_digest`
/// is given (the sha256 of the part's first `signed_bytes` bytes as they are read now),
/// that digest is the one signed.
pub fn check_writer_signature(
    footer: &SignedFooter<'_>,
    body_digest: Option<&str>,
    keys: WriterKeys<'_>,
) -> Verdict {
    let f = footer.fields;
    if f.is_unsigned() {
        return Verdict::Unsigned;
    }
    let bad = |why: String| Verdict::BadSignature {
        key_id: f.key_id.clone(),
        why,
    };
    let parsed = match parse(footer) {
        Ok(p) => p,
        Err(why) => return bad(why),
    };
    let msg = message(
        parsed.store_id,
        parsed.commit_id,
        footer.rows,
        parsed.signed_bytes,
        parsed.body_sha256,
    );
    if parsed
        .public_key
        .verify_strict(&msg, &parsed.signature)
        .is_err()
    {
        return bad(
            "the signature does not verify over the footer's store id, commit id, row count and body digest"
                .into(),
        );
    }
    let key_id = key_id(&parsed.public_key);
    if let WriterKeys::Only(given) = keys {
        if !given
            .iter()
            .any(|k| k.as_bytes() == parsed.public_key.as_bytes())
        {
            return Verdict::UnknownKey { key_id };
        }
    }
    match body_digest {
        Some(actual) if actual != parsed.body_sha256 => Verdict::BytesChanged {
            key_id,
            signed_bytes: parsed.signed_bytes,
            signed: parsed.body_sha256.to_string(),
            actual: actual.to_string(),
        },
        _ => Verdict::Verified { key_id },
    }
}

/// The signature entries, parsed.
struct Parsed<'a> {
    store_id: &'a str,
    commit_id: &'a str,
    public_key: VerifyingKey,
    signature: Signature,
    signed_bytes: u64,
    body_sha256: &'a str,
}

/// Parse the entries of `footer`, or say which is missing or malformed.
fn parse<'a>(footer: &SignedFooter<'a>) -> std::result::Result<Parsed<'a>, String> {
    let f = footer.fields;
    let need = |v: &'a Option<String>, name: &str| {
        v.as_deref()
            .ok_or_else(|| format!("the footer carries no {name}"))
    };
    let pk_b64 = need(&f.public_key, contract::META_WRITER_PUBLIC_KEY)?;
    let named_id = need(&f.key_id, contract::META_WRITER_KEY_ID)?;
    let signed = need(&f.signed_bytes, contract::META_WRITER_SIGNED_BYTES)?;
    let body_sha256 = need(&f.body_sha256, contract::META_WRITER_BODY_SHA256)?;
    let sig_b64 = need(&f.signature, contract::META_WRITER_SIGNATURE)?;
    let store_id = footer
        .store_id
        .ok_or_else(|| format!("the footer carries no {}", contract::META_STORE_ID))?;
    let commit_id = footer
        .commit_id
        .ok_or_else(|| format!("the footer carries no {}", contract::META_COMMIT_ID))?;
    let public_key = B64
        .decode(pk_b64)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .ok_or_else(|| "its public key is not 32 bytes of base64 of an Ed25519 key".to_string())?;
    if key_id(&public_key) != named_id {
        return Err(format!(
            "its key id {} is not the id of its public key ({})",
            crate::schema::rules::quote(named_id),
            key_id(&public_key)
        ));
    }
    let signature = B64
        .decode(sig_b64)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b))
        .ok_or_else(|| "its signature is not 64 bytes of base64".to_string())?;
    let signed_bytes = signed.parse::<u64>().map_err(|_| {
        format!(
            "signed_bytes {} is not a number",
            crate::schema::rules::quote(signed)
        )
    })?;
    let hex = body_sha256.len() == 64
        && body_sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex {
        return Err("its body digest is not 64 lower-case hex digits".into());
    }
    Ok(Parsed {
        store_id,
        commit_id,
        public_key,
        signature,
        signed_bytes,
        body_sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(kv: &[KeyValue]) -> SignatureFields {
        let get = |n: &str| kv.iter().find(|k| k.key == n).and_then(|k| k.value.clone());
        SignatureFields {
            public_key: get(contract::META_WRITER_PUBLIC_KEY),
            key_id: get(contract::META_WRITER_KEY_ID),
            signed_bytes: get(contract::META_WRITER_SIGNED_BYTES),
            body_sha256: get(contract::META_WRITER_BODY_SHA256),
            signature: get(contract::META_WRITER_SIGNATURE),
        }
    }

    #[test]
    fn verdicts() {
        let k = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        let body = b"PAR1 column chunks";
        let f = fields(&sign(&k, "s", "c", 3, body));
        let footer = SignedFooter {
            store_id: Some("s"),
            commit_id: Some("c"),
            rows: 3,
            fields: &f,
        };
        let good = sha256_hex(body);
        let id = key_id(&k.verifying_key());
        let mine = [k.verifying_key()];
        assert_eq!(
            check_writer_signature(&footer, Some(&good), WriterKeys::Only(&mine)),
            Verdict::Verified { key_id: id.clone() }
        );
        assert_eq!(
            check_writer_signature(&footer, Some(&good), WriterKeys::Only(&[other])),
            Verdict::UnknownKey { key_id: id.clone() }
        );
        let changed = check_writer_signature(&footer, Some(&sha256_hex(b"x")), WriterKeys::Any);
        assert!(
            matches!(changed, Verdict::BytesChanged { .. }),
            "{changed:?}"
        );
        let more_rows = SignedFooter { rows: 4, ..footer };
        let v = check_writer_signature(&more_rows, None, WriterKeys::Any);
        assert!(matches!(v, Verdict::BadSignature { .. }), "{v:?}");
        let moved = SignedFooter {
            commit_id: Some("d"),
            ..footer
        };
        let v = check_writer_signature(&moved, None, WriterKeys::Any);
        assert!(v.describe().contains("does not verify"), "{v:?}");
        let none = SignatureFields::default();
        let unsigned = SignedFooter {
            fields: &none,
            ..footer
        };
        assert_eq!(
            check_writer_signature(&unsigned, None, WriterKeys::Any),
            Verdict::Unsigned
        );
        assert!(String::from_utf8(message("s", "c", 3, 18, &good))
            .unwrap()
            .starts_with("lineage-store writer signature v1\nstore_id s\n"));
    }
}

//! Seals: a hash chain of signed tree heads over the commit pointers.
//!
//! `_lineage/seals/<seq, 20 digits>.json`, create-only. Seal `n` records the sha256 of seal
//! `n-1`'s exact bytes (`prev_sha256`), the commits it adds (`entries`: pointer key and the
//! sha256 of the pointer's exact bytes, in canonical order), and the RFC 9162 Merkle root
//! over the pointer digests of *all* commits sealed so far, in seal order: seal 1's entries,
//! then seal 2's, and so on. The tree is therefore append-only, like a CT log, and the
//! newest seal's root covers every sealed commit. The sha256 of the newest seal's bytes is
//! the *head digest* an auditor keeps elsewhere.
//!
//! Canonical order of one seal's new entries: by commit id (UUIDv7, so time order), then by
//! pointer key. Concurrent sealers race on the create-only key; the loser re-reads and
//! retries at the next sequence number.

use std::collections::HashSet;
use std::path::Path;

use base64::Engine;
use bytes::Bytes;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::log::READ_CONCURRENCY;
use super::merkle::{self, Hash};
use crate::clock::Clock;
use crate::encode::sha256_hex;
use crate::error::{Error, ErrorKind, Result};
use crate::keys::{self, KeyKind};
use crate::pointer::{rfc3339, tool_version, Pointer};
use crate::publish::{AtomicPublisher, Outcome};

/// Format tag of seal objects.
pub const SEAL_FORMAT: &str = "lineage-seal/1";
/// Domain separation prefix of the signed message.
const SIGNED_PREFIX: &[u8] = b"lineage-seal-signature/1\n";
/// Attempts before giving up when other sealers keep winning.
const MAX_SEAL_ATTEMPTS: usize = 32;
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// One sealed commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealEntry {
    /// The pointer's key.
    pub key: String,
    /// Lower-case hex sha256 of the pointer's exact bytes (the Merkle leaf data).
    pub sha256: String,
}

/// A seal as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// Always [`SEAL_FORMAT`].
    pub format: String,
    /// Sequence number, from 1; also the object's name.
    pub seq: u64,
    /// sha256 of the previous seal's exact bytes; `None` for seal 1.
    pub prev_sha256: Option<String>,
    /// Commits covered by this seal and all before it (the tree size).
    pub tree_size: u64,
    /// RFC 9162 Merkle root (hex) over the pointer digests of all covered commits.
    pub root: String,
    /// When the seal was made (RFC 3339, UTC).
    pub sealed_utc: String,
    /// The lineage-store that made it.
    pub tool_version: String,
    /// The commits this seal adds, in canonical order.
    pub entries: Vec<SealEntry>,
    /// Ed25519 public key (base64) the seal is signed with, when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// Ed25519 signature (base64) over [`Seal::signed_message`], when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl Seal {
    /// The exact bytes stored.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(self).map_err(|e| Error::Internal(e.to_string()))?;
        v.push(b'\n');
        Ok(v)
    }

    /// Parse a stored seal.
    pub fn from_bytes(key: &str, bytes: &[u8]) -> Result<Self> {
        let s: Seal = serde_json::from_slice(bytes).map_err(|e| Error::Corrupt {
            what: "seal",
            key: key.to_string(),
            message: e.to_string(),
        })?;
        if s.format != SEAL_FORMAT {
            return Err(Error::Corrupt {
                what: "seal",
                key: key.to_string(),
                message: format!("unknown format {:?}", s.format),
            });
        }
        Ok(s)
    }

    /// What the signature covers: every field but the signature itself, as compact JSON
    /// after a domain-separation line (the public key is covered, so it cannot be swapped).
    pub fn signed_message(&self) -> Result<Vec<u8>> {
        let mut unsigned = self.clone();
        unsigned.signature = None;
        let mut m = SIGNED_PREFIX.to_vec();
        m.extend(serde_json::to_vec(&unsigned).map_err(|e| Error::Internal(e.to_string()))?);
        Ok(m)
    }

    /// Check the signature: against `trusted` when given (the seal must carry exactly that
    /// key), else against the key the seal names (which proves integrity, not authorship).
    /// `Ok(false)` when the seal is unsigned.
    pub fn check_signature(&self, trusted: Option<&VerifyingKey>) -> Result<bool> {
        let (Some(pk), Some(sig)) = (&self.public_key, &self.signature) else {
            if self.signature.is_some() {
                return Err(Error::Signature("a signature without a public_key".into()));
            }
            return Ok(false);
        };
        let named = parse_public_key(pk)?;
        if let Some(t) = trusted {
            if t != &named {
                return Err(Error::Signature(format!(
                    "signed by key {}, not by the trusted key {}",
                    key_id(&named),
                    key_id(t)
                )));
            }
        }
        let sig = B64
            .decode(sig)
            .ok()
            .and_then(|b| Signature::from_slice(&b).ok())
            .ok_or_else(|| Error::Signature("the signature is not 64 bytes of base64".into()))?;
        named
            .verify_strict(&self.signed_message()?, &sig)
            .map_err(|_| Error::Signature(format!("bad signature by key {}", key_id(&named))))?;
        Ok(true)
    }
}

/// A short, printable id of a public key: the first 16 hex digits of its sha256.
pub fn key_id(k: &VerifyingKey) -> String {
    sha256_hex(k.as_bytes())[..16].to_string()
}

/// The key of seal `seq`.
pub fn seal_key(seq: u64) -> String {
    format!("{}{seq:020}.json", keys::SEALS_PREFIX)
}

/// Parse a base64 Ed25519 public key as stored in a seal.
pub fn parse_public_key(b64: &str) -> Result<VerifyingKey> {
    let bytes: [u8; 32] = B64
        .decode(b64.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::Signature("a public key is 32 bytes of base64".into()))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|_| Error::Signature("not a valid Ed25519 public key".into()))
}

const SECRET_TAG: &str = "lineage-ed25519-secret:";
const PUBLIC_TAG: &str = "lineage-ed25519-public:";

/// Make a key pair: `<prefix>.key` (secret, mode 0600) and `<prefix>.pub`. Refuses to
/// overwrite either file. Returns the key id.
pub fn keygen(prefix: &Path) -> Result<String> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| Error::Internal(format!("no randomness: {e}")))?;
    let sk = SigningKey::from_bytes(&seed);
    let vk = sk.verifying_key();
    let secret = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    for p in [&secret, &public] {
        if p.exists() {
            return Err(Error::Usage(format!(
                "{} exists; refusing to overwrite a key",
                p.display()
            )));
        }
    }
    write_new(
        &secret,
        format!("{SECRET_TAG}{}\n", B64.encode(seed)).as_bytes(),
        true,
    )?;
    write_new(
        &public,
        format!("{PUBLIC_TAG}{}\n", B64.encode(vk.as_bytes())).as_bytes(),
        false,
    )?;
    Ok(key_id(&vk))
}

fn write_new(path: &Path, bytes: &[u8], secret: bool) -> Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = o.open(path).map_err(|e| Error::io(path, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(path, e))
}

fn read_tagged(path: &Path, tag: &str, what: &str) -> Result<[u8; 32]> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    // Never echo the file's content: it may be a secret key given in the wrong place.
    text.trim()
        .strip_prefix(tag)
        .and_then(|b| B64.decode(b).ok())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| {
            Error::Signature(format!(
                "{} is not a {what} made by `lineage keygen`",
                path.display()
            ))
        })
}

/// Read a secret key file made by [`keygen`].
pub fn read_signing_key(path: &Path) -> Result<SigningKey> {
    Ok(SigningKey::from_bytes(&read_tagged(
        path,
        SECRET_TAG,
        "secret key",
    )?))
}

/// Read a public key file made by [`keygen`].
pub fn read_public_key(path: &Path) -> Result<VerifyingKey> {
    let b = read_tagged(path, PUBLIC_TAG, "public key")?;
    VerifyingKey::from_bytes(&b).map_err(|_| {
        Error::Signature(format!(
            "{} does not hold a valid Ed25519 key",
            path.display()
        ))
    })
}

/// A seal as read, with the digest of its exact bytes.
#[derive(Debug, Clone)]
pub struct StoredSeal {
    /// Its key.
    pub key: String,
    /// The sequence number its key names.
    pub key_seq: u64,
    /// sha256 of its exact bytes.
    pub digest: String,
    /// The exact bytes.
    pub bytes: Bytes,
    /// Parsed, or why it could not be.
    pub seal: std::result::Result<Seal, String>,
}

/// Every seal object in the store, sorted by the sequence number in its key.
pub async fn read_seals(store: &dyn AtomicPublisher) -> Result<Vec<StoredSeal>> {
    let listed = store.list(keys::SEALS_PREFIX).await?;
    let mut seals: Vec<StoredSeal> =
        futures::stream::iter(
            listed
                .into_iter()
                .filter_map(|o| match keys::classify(&o.key) {
                    KeyKind::Seal(n) => Some((o.key, n)),
                    _ => None,
                }),
        )
        .map(|(key, n)| async move {
            let bytes = store
                .get(&key)
                .await?
                .ok_or_else(|| Error::NotFound(key.clone()))?;
            let seal = Seal::from_bytes(&key, &bytes).map_err(|e| e.to_string());
            Ok::<_, Error>(StoredSeal {
                digest: sha256_hex(&bytes),
                key,
                key_seq: n,
                bytes,
                seal,
            })
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    seals.sort_by_key(|s| s.key_seq);
    Ok(seals)
}

/// What `seal` made.
#[derive(Debug, Clone, Serialize)]
pub struct SealOutcome {
    /// Sequence number of the new seal.
    pub seq: u64,
    /// Its key.
    pub key: String,
    /// sha256 of its bytes: the new head digest, to be kept outside the store.
    pub head: String,
    /// Commits added by this seal.
    pub added: u64,
    /// Commits covered in total.
    pub tree_size: u64,
    /// Merkle root (hex).
    pub root: String,
    /// Key id of the signing key, when signed.
    pub key_id: Option<String>,
    /// Sequence numbers lost to concurrent sealers before this one landed.
    pub lost_races: u64,
}

/// Write the next seal over every pointer not sealed yet. The newest seal must be
/// readable; the chain itself is not re-verified here (that is `verify`'s job), but a
/// pointer that cannot be parsed, or contradicts its key, is refused rather than sealed.
pub async fn seal(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    signing: Option<&SigningKey>,
) -> Result<SealOutcome> {
    for lost in 0..MAX_SEAL_ATTEMPTS as u64 {
        let seals = read_seals(store).await?;
        let mut leaves: Vec<Hash> = Vec::new();
        let mut sealed: HashSet<String> = HashSet::new();
        for s in &seals {
            let seal = s.seal.as_ref().map_err(|m| Error::Corrupt {
                what: "seal",
                key: s.key.clone(),
                message: format!("{m}; run `lineage verify` before sealing again"),
            })?;
            for e in &seal.entries {
                let d = merkle::parse_hash(&e.sha256).ok_or_else(|| Error::Corrupt {
                    what: "seal",
                    key: s.key.clone(),
                    message: format!("entry {} has no valid sha256", e.key),
                })?;
                leaves.push(merkle::leaf_hash(&d));
                sealed.insert(e.key.clone());
            }
        }
        let last = seals.last();
        let seq = last.map_or(1, |s| s.key_seq + 1);
        let prev = last.map(|s| s.digest.clone());
        let mut new = new_entries(store, &sealed).await?;
        new.sort_by(|a, b| (&a.1, &a.0.key).cmp(&(&b.1, &b.0.key)));
        for (e, _) in &new {
            let d = merkle::parse_hash(&e.sha256)
                .ok_or_else(|| Error::Internal("bad digest".into()))?;
            leaves.push(merkle::leaf_hash(&d));
        }
        let mut s = Seal {
            format: SEAL_FORMAT.to_string(),
            seq,
            prev_sha256: prev,
            tree_size: leaves.len() as u64,
            root: hex::encode(merkle::root_of_leaf_hashes(&leaves)),
            sealed_utc: rfc3339(clock.now()),
            tool_version: tool_version(),
            entries: new.into_iter().map(|(e, _)| e).collect(),
            public_key: signing.map(|k| B64.encode(k.verifying_key().as_bytes())),
            signature: None,
        };
        if let Some(k) = signing {
            s.signature = Some(B64.encode(k.sign(&s.signed_message()?).to_bytes()));
        }
        let bytes = Bytes::from(s.to_bytes()?);
        let key = seal_key(seq);
        if publish_seal(store, &key, bytes.clone()).await? {
            tracing::info!(seq, tree_size = s.tree_size, "sealed");
            return Ok(SealOutcome {
                seq,
                key,
                head: sha256_hex(&bytes),
                added: s.entries.len() as u64,
                tree_size: s.tree_size,
                root: s.root,
                key_id: signing.map(|k| key_id(&k.verifying_key())),
                lost_races: lost,
            });
        }
        tracing::info!(seq, "another sealer took this sequence number; retrying");
    }
    Err(Error::Conflict {
        key: keys::SEALS_PREFIX.to_string(),
        message: format!("lost {MAX_SEAL_ATTEMPTS} sealing races in a row; try again"),
    })
}

/// Create-only publish of a seal: `true` when ours landed (also after an ambiguous error
/// whose read-back shows our bytes), `false` when another sealer holds the key.
async fn publish_seal(store: &dyn AtomicPublisher, key: &str, bytes: Bytes) -> Result<bool> {
    let err = match store.put_create(key, bytes.clone()).await {
        Ok(Outcome::Created) => return Ok(true),
        Ok(Outcome::AlreadyExists) => None,
        Err(e) if matches!(e.kind(), ErrorKind::Io | ErrorKind::Conflict) => Some(e),
        Err(e) => return Err(e),
    };
    match store.get(key).await? {
        Some(have) => Ok(have == bytes),
        None => Err(err.unwrap_or_else(|| Error::Conflict {
            key: key.to_string(),
            message: "reported as existing, but cannot be read".into(),
        })),
    }
}

/// Pointers not yet sealed, with their digests and commit ids (for ordering).
async fn new_entries(
    store: &dyn AtomicPublisher,
    sealed: &HashSet<String>,
) -> Result<Vec<(SealEntry, String)>> {
    let listed = store.list(keys::COMMITS_PREFIX).await?;
    futures::stream::iter(
        listed
            .into_iter()
            .filter_map(|o| match keys::classify(&o.key) {
                KeyKind::Pointer { run_id, commit_id } if !sealed.contains(&o.key) => {
                    Some((o.key, run_id, commit_id))
                }
                _ => None,
            }),
    )
    .map(|(key, run_id, commit_id)| async move {
        let bytes = store
            .get(&key)
            .await?
            .ok_or_else(|| Error::NotFound(key.clone()))?;
        let p = Pointer::from_bytes(&key, &bytes)?;
        if p.run_id != run_id || p.commit_id != commit_id {
            return Err(Error::Corrupt {
                what: "pointer",
                key,
                message:
                    "its content contradicts its key; refusing to seal it (see `lineage verify`)"
                        .into(),
            });
        }
        Ok((
            SealEntry {
                key,
                sha256: sha256_hex(&bytes),
            },
            commit_id,
        ))
    })
    .buffer_unordered(READ_CONCURRENCY)
    .try_collect()
    .await
}

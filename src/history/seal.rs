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
//! Canonical order of one seal's new entries: `lineage-seal/1` (earlier versions) by commit
//! id, then pointer key; `lineage-seal/2` by `committed_utc`, then commit id, then pointer
//! key (commit-time order, keyed commits included). A `lineage-seal/2` also carries the
//! tree's frontier, a watermark and `ahead`, so the next seal needs no seal before it
//! ([`crate::history::sealer`]). Concurrent sealers race on the create-only key; the loser
//! re-reads and retries at the next sequence number.

use std::collections::HashMap;

use base64::Engine;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use ed25519_dalek::{Signature, VerifyingKey};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param, Text};
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::signing::{key_id, parse_public_key};
use crate::publish::AtomicPublisher;

/// Format tag of seal objects written before the history structures (no frontier).
pub const SEAL_FORMAT: &str = "lineage-seal/1";
/// Format tag of seals that carry a frontier, a watermark and `ahead`
/// (see [`crate::history`]): everything the next seal needs, without the seals before.
pub const SEAL_FORMAT_V2: &str = "lineage-seal/2";
/// Domain separation prefix of the signed message.
const SIGNED_PREFIX: &[u8] = b"lineage-seal-signature/1\n";
/// Attempts before giving up when other sealers keep winning.
pub(crate) const MAX_SEAL_ATTEMPTS: usize = 32;
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// One sealed commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealEntry {
    /// The pointer's key.
    pub key: String,
    /// Lower-case hex sha256 of the pointer's exact bytes (the Merkle leaf data).
    pub sha256: String,
    /// True when the pointer was written by `lineage repair` for an orphan part (its own
    /// `adopted`): nothing its writer wrote vouches for the commit. Absent (false) in
    /// other entries, so their bytes are as before, and in every entry of seals made
    /// before seals recorded it (the sealed pointer's own mark stands then); part of the
    /// signed message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
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
    /// (`lineage-seal/2`) The RFC 9162 compact range of the tree: the hashes (hex) of the
    /// perfect subtrees that make up `tree_size` leaves, largest first. Folded right to
    /// left they give `root`; appending the next seal's leaves to them gives its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<Vec<String>>,
    /// (`lineage-seal/2`) Every index entry committed before this time has been considered
    /// by this seal or an earlier one; the next seal lists the index from here on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_utc: Option<String>,
    /// (`lineage-seal/2`) Index entries at or after the watermark whose commits are already
    /// sealed (by this seal or an earlier one), so the next seal does not seal them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<Vec<String>>,
    /// (`lineage-seal/2`, written since the index window) The index entries committed in
    /// the lookback before the watermark, counted by directory: how the next seal finds an
    /// entry that lands late there without listing the window's entries again (see
    /// [`IndexWindow`]). Absent in seals written before it, and in full seals: the next
    /// seal then trusts the watermark alone, as before. Not part of the signed message
    /// (older readers ignore it and still verify the signature); the next seal's
    /// `prev_sha256` and the head digest cover its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_window: Option<IndexWindow>,
    /// The compactions this seal puts into effect ([`crate::format::compaction`]): each
    /// record's key and the sha256 of its bytes. Its Delta version removes their sources
    /// and adds their compacted parts. Absent in seals without compactions (every seal
    /// written before compaction existed), so their bytes are as before; part of the signed message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compactions: Option<Vec<crate::format::compaction::CompactionRef>>,
    /// Ed25519 public key (base64) the seal is signed with, when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// The id of that key ([`crate::history::signing::key_id`]), so a reader sees which
    /// key signed without decoding it (seals signed since key rotation was supported). Not
    /// part of the signed message: older readers ignore it and still verify the signature;
    /// it must name the key `public_key` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Ed25519 signature (base64) over [`Seal::signed_message`], when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// (signed seals since C2SP checkpoints) The seal as a C2SP checkpoint
    /// ([`crate::format::checkpoint`]): origin, `tree_size` and `root`, signed by the same
    /// key. Published create-only as its own object when the seal is completed. Not part
    /// of [`Seal::signed_message`] (it is signed itself): older readers ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

/// The lookback window of a seal's index ([`Seal::index_window`]): from `from_utc` (the
/// sealer's clock less the lookback, never earlier than the previous seal's) to the
/// watermark, every index directory holding a key there, with the number of keys it held
/// before the watermark when the seal listed it. A later seal or `--since-seal` reader
/// lists those names again (names only, no object read or stat'ed) and re-examines only a
/// directory whose count changed: a late entry there is sealed (or shown) then. The
/// watermark itself moves up to the newest sealed commit's second, so `ahead` holds about
/// one second of commits, not the lookback's. On a local disk the seal also records, in
/// `stamps`, the change stamp of each per-second directory whose stamp predates the
/// listing: a later reader that finds the same stamp takes that directory's count as it
/// is, without reading its names ([`crate::history::window`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexWindow {
    /// Start of the window (RFC 3339, UTC): index entries committed before it that land
    /// late are not looked for (`lineage seal --rescan` seals them).
    pub from_utc: String,
    /// Index directory (`_lineage/index/…/`) -> keys in it from the window's first
    /// directory up to the watermark's bound, as listed.
    pub counts: std::collections::BTreeMap<String, u64>,
    /// (Local disk) Per-second index directory of `counts` -> its change stamp
    /// (`<inode>:<st_ctime in ns>`, [`crate::publish::dirs::DirStamp`]) when the seal read a stamp
    /// older than its listing: that directory had all its entries listed. Absent in seals
    /// written before stamps and on object stores.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub stamps: std::collections::BTreeMap<String, String>,
    /// (Local disk) The file system's clock, in nanoseconds since the epoch (decimal), read
    /// before the seal listed its window ([`crate::publish::AtomicPublisher::stamp_clock`]):
    /// a data directory whose change time is older had every entry it has now before this
    /// seal was made (`verify --since-seal` does not read such a directory again). Absent in
    /// seals written before it, in a store's first seal, and on object stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_clock_ns: Option<String>,
}

impl IndexWindow {
    /// [`Self::fs_clock_ns`] as a number; `None` when absent or not a number.
    pub fn fs_clock(&self) -> Option<i128> {
        self.fs_clock_ns.as_deref()?.parse().ok()
    }
}

impl Seal {
    /// The exact bytes stored.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(self).map_err(Error::internal_from)?;
        v.push(b'\n');
        Ok(v)
    }

    /// Parse a stored seal.
    pub fn from_bytes(key: &str, bytes: &[u8]) -> Result<Self> {
        let s: Seal = serde_json::from_slice(bytes).map_err(|e| Error::Corrupt {
            what: "seal",
            key: key.to_string(),
            message: e.to_string().into(),
        })?;
        let v2_fields = s.frontier.is_some() && s.watermark_utc.is_some() && s.ahead.is_some();
        let why = match s.format.as_str() {
            SEAL_FORMAT
                if s.frontier.is_some() || s.watermark_utc.is_some() || s.ahead.is_some() =>
            {
                Some("a lineage-seal/1 with fields of lineage-seal/2".to_string())
            }
            SEAL_FORMAT => None,
            SEAL_FORMAT_V2 if !v2_fields => {
                Some("a lineage-seal/2 without frontier, watermark_utc and ahead".to_string())
            }
            SEAL_FORMAT_V2 => None,
            f => Some(format!("unknown format {f:?}")),
        };
        match why {
            Some(message) => Err(Error::Corrupt {
                what: "seal",
                key: key.to_string(),
                message: message.into(),
            }),
            None => Ok(s),
        }
    }

    /// True for a `lineage-seal/2` (frontier, watermark, ahead).
    pub fn is_v2(&self) -> bool {
        self.format == SEAL_FORMAT_V2
    }

    /// What the signature covers: every field but the signature itself, as compact JSON
    /// after a domain-separation line (the public key is covered, so it cannot be swapped).
    pub fn signed_message(&self) -> Result<Vec<u8>> {
        let mut unsigned = self.clone();
        unsigned.signature = None;
        unsigned.key_id = None;
        unsigned.checkpoint = None;
        unsigned.index_window = None;
        let mut m = SIGNED_PREFIX.to_vec();
        m.extend(serde_json::to_vec(&unsigned).map_err(Error::internal_from)?);
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
        if let Some(id) = &self.key_id {
            if *id != key_id(&named) {
                return Err(Error::Signature(format!(
                    "names key id {id}, but carries key {}",
                    key_id(&named)
                )));
            }
        }
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

/// Which signatures seals must carry (`verify --public-key`, repeated, and
/// `--signed-from`): every signed seal must verify under one of `keys` (when any are given),
/// and every seal from `signed_from` on (from seal 1 when only keys are given) must be
/// signed. With neither, signatures are checked against the key each seal names
/// (integrity, not authorship) and unsigned seals are accepted.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// The trusted public keys (old and new ones during a key rotation).
    pub keys: Vec<VerifyingKey>,
    /// The first seal that must be signed (signing started later, at this seal).
    pub signed_from: Option<u64>,
}

impl Trust {
    /// Whether seal `seq` must be signed.
    pub fn requires(&self, seq: u64) -> bool {
        match self.signed_from {
            Some(n) => seq >= n,
            None => !self.keys.is_empty(),
        }
    }

    /// Judge seal `seq`'s signature: `Ok(Some(key id))` when validly signed by a trusted
    /// key (any key when none are given), `Ok(None)` when unsigned and allowed to be, else
    /// the problem in words.
    pub fn judge(&self, seq: u64, seal: &Seal) -> std::result::Result<Option<String>, Text> {
        if seal.signature.is_none() && seal.public_key.is_none() {
            if !self.requires(seq) {
                return Ok(None);
            }
            return Err(match self.signed_from {
                Some(n) => text![
                    format!("is not signed, but every seal from {n} on must be ("),
                    Param::SignedFrom,
                    format!(" {n})")
                ],
                None => text![
                    "is not signed, but a public key was given (seals signed only from a later seal on: ",
                    Param::SignedFrom,
                    " SEQ)"
                ],
            });
        }
        seal.check_signature(None)
            .map_err(|e| Text::from(e.to_string()))?;
        let named = seal
            .public_key
            .as_deref()
            .map(parse_public_key)
            .transpose()
            .map_err(|e| Text::from(e.to_string()))?
            .ok_or_else(|| Text::from("a signature without a public_key"))?;
        let id = key_id(&named);
        if !self.keys.is_empty() && !self.keys.contains(&named) {
            let given: Vec<String> = self.keys.iter().map(key_id).collect();
            return Err(text![
                format!("signed by key {id}, which is not a key given ("),
                Param::PublicKey,
                format!(": {})", given.join(", "))
            ]);
        }
        Ok(Some(id))
    }
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
    pub seal: std::result::Result<Seal, Text>,
}

impl StoredSeal {
    /// A seal as read, parsed or with why not.
    pub(crate) fn new(key: String, seq: u64, bytes: Bytes) -> Self {
        StoredSeal {
            seal: Seal::from_bytes(&key, &bytes).map_err(|e| Text::from(e.to_string())),
            digest: sha256_hex(&bytes),
            key,
            key_seq: seq,
            bytes,
        }
    }

    /// A seal larger than the store's
    /// [`max_seal_bytes`](crate::base::limits::ReadLimits::max_seal_bytes), not read: no bytes, no digest (empty), and
    /// why in place of the parsed seal, naming the flag that raises the limit.
    fn too_large(key: String, seq: u64, size: u64, max: u64) -> Self {
        StoredSeal {
            seal: Err(too_large_text(size, max)),
            digest: String::new(),
            key,
            key_seq: seq,
            bytes: Bytes::new(),
        }
    }
}

pub use crate::base::limits::MAX_ENTRY_BYTES;

/// Read seal `seq` under `key`, at most the store's
/// [`max_seal_bytes`](crate::base::limits::ReadLimits::max_seal_bytes) of it: `None` when it does not
/// exist; a larger one (by `listed` size, or as the backend reports it) is returned unread,
/// its [`StoredSeal::seal`] saying why.
pub(crate) async fn fetch(
    store: &dyn AtomicPublisher,
    key: String,
    seq: u64,
    listed: Option<u64>,
) -> Result<Option<StoredSeal>> {
    let max = store.read_limits().max_seal_bytes;
    if let Some(size) = listed.filter(|&n| n > max) {
        return Ok(Some(StoredSeal::too_large(key, seq, size, max)));
    }
    match store.get_at_most(&key, max).await {
        Ok(got) => Ok(got.map(|bytes| StoredSeal::new(key, seq, bytes))),
        Err(Error::TooLarge { size, max, .. }) => {
            Ok(Some(StoredSeal::too_large(key, seq, size, max)))
        }
        Err(e) => Err(e),
    }
}

/// The bytes of the seal under `key`, at most the store's
/// [`max_seal_bytes`](crate::base::limits::ReadLimits::max_seal_bytes) of them: `None` when it
/// does not exist; a larger one is refused unread ([`Error::Corrupt`] naming it and the
/// flag).
pub(crate) async fn get_bytes(store: &dyn AtomicPublisher, key: &str) -> Result<Option<Bytes>> {
    let max = store.read_limits().max_seal_bytes;
    store.get_at_most(key, max).await.map_err(|e| match e {
        Error::TooLarge { size, max, .. } => Error::Corrupt {
            what: "seal",
            key: key.to_string(),
            message: too_large_text(size, max),
        },
        e => e,
    })
}

fn too_large_text(size: u64, max: u64) -> Text {
    text![
        format!("{size} bytes; a seal is at most {max} ("),
        Param::MaxSealBytes,
        "; not read)"
    ]
}

/// Every seal object in the store, sorted by the sequence number in its key. A seal
/// larger than the store's [`max_seal_bytes`](crate::base::limits::ReadLimits::max_seal_bytes) is listed unread (see [`fetch`]).
pub async fn read_seals(store: &dyn AtomicPublisher) -> Result<Vec<StoredSeal>> {
    let listed = store.list(keys::SEALS_PREFIX).await?;
    let mut seals: Vec<StoredSeal> =
        futures::stream::iter(
            listed
                .into_iter()
                .filter_map(|o| match keys::classify(&o.key) {
                    KeyKind::Seal(n) => Some((o.key, n, o.size)),
                    _ => None,
                }),
        )
        .map(|(key, n, size)| async move {
            fetch(store, key.clone(), n, Some(size))
                .await?
                .ok_or(Error::NotFound(key))
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    seals.sort_by_key(|s| s.key_seq);
    Ok(seals)
}

/// Problems with the `lineage-seal/2` fields of one seal: its watermark must be a time not
/// before the previous one, and every `ahead` key an index key at or after it whose
/// pointer is sealed (by this seal or an earlier one: `sealed`, when known).
pub fn seal_fields(
    seal: &Seal,
    prev_watermark: Option<&str>,
    sealed: Option<&HashMap<String, usize>>,
) -> Vec<String> {
    let mut out = Vec::new();
    let parse = |s: &str| {
        DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    let Some(w) = seal.watermark_utc.as_deref().and_then(parse) else {
        return vec!["its watermark_utc is not a time".into()];
    };
    if let Some(p) = prev_watermark.and_then(parse) {
        if w < p {
            out.push(format!(
                "its watermark {} is before the previous seal's {}",
                crate::base::time::rfc3339(w),
                crate::base::time::rfc3339(p)
            ));
        }
    }
    for k in seal.ahead.iter().flatten() {
        let why = match keys::classify(k) {
            KeyKind::History(h @ HistoryKey::Index { .. }) => {
                let HistoryKey::Index { committed, .. } = &h else {
                    continue;
                };
                if *committed < w {
                    Some("is before the watermark")
                } else if sealed
                    .is_some_and(|m| !h.pointer_key().is_some_and(|p| m.contains_key(&p)))
                {
                    Some("names a commit no seal covers")
                } else {
                    None
                }
            }
            _ => Some("is not an index key"),
        };
        if let Some(why) = why {
            out.push(format!("ahead lists {k}, which {why}"));
        }
    }
    if let Some(win) = &seal.index_window {
        out.extend(window_fields(win, w));
    }
    out
}

/// Problems with a seal's index window (watermark `w`): its start must be a time not after
/// the watermark, and each directory one of the index's, from the start's second to the
/// watermark's, with a count of at least one.
fn window_fields(win: &IndexWindow, w: DateTime<Utc>) -> Vec<String> {
    let Some(from) = DateTime::parse_from_rfc3339(&win.from_utc)
        .ok()
        .map(|t| t.with_timezone(&Utc))
    else {
        return vec![format!(
            "its index window's from_utc {:?} is not a time",
            win.from_utc
        )];
    };
    if from > w {
        return vec![format!(
            "its index window starts at {}, after its watermark",
            win.from_utc
        )];
    }
    let (lo, hi) = (keys::index_dir(from), keys::index_bound(w));
    let stamps = win.stamps.iter().filter_map(|(dir, stamp)| {
        let counted = win.counts.contains_key(dir);
        let parsed = crate::publish::dirs::DirStamp::from_text(stamp).is_some();
        (!(counted && parsed)).then(|| {
            format!("its index window stamps {dir} {stamp:?}, not a stamp of a directory it counts")
        })
    });
    let mut out: Vec<String> = stamps.collect();
    if let (Some(c), None) = (&win.fs_clock_ns, win.fs_clock()) {
        out.push(format!(
            "its index window's fs_clock_ns {c:?} is not a number of nanoseconds"
        ));
    }
    out.extend(
        win.counts
            .iter()
            .filter(|(dir, n)| {
                // An older writer's day directory holds keys after the window's first directory.
                let after_lo = dir.as_str() >= lo.as_str() || lo.starts_with(dir.as_str());
                let in_range = after_lo && dir.as_str() < hi.as_str();
                !(dir.starts_with(keys::INDEX_PREFIX) && dir.ends_with('/') && in_range && **n > 0)
            })
            .map(|(dir, n)| {
                format!(
                "its index window counts {n} keys in {dir}, not an index directory of the window"
            )
            }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`MAX_ENTRY_BYTES`] holds: each commit (an entry with the longest `run_id` and its
    /// index key in `ahead`) adds at most that many bytes to a stored seal.
    #[test]
    fn a_sealed_commit_adds_at_most_max_entry_bytes() {
        let run = "r".repeat(128);
        let t = chrono::DateTime::parse_from_rfc3339("2026-07-13T06:00:00.123456Z")
            .unwrap()
            .with_timezone(&Utc);
        let seal = |n: usize| Seal {
            format: SEAL_FORMAT_V2.into(),
            seq: 1,
            prev_sha256: None,
            tree_size: n as u64,
            root: "0".repeat(64),
            sealed_utc: "2026-07-13T06:00:00.000000Z".into(),
            tool_version: "lineage-store/9.9.9".into(),
            entries: (0..n)
                .map(|i| SealEntry {
                    key: keys::pointer_key(&run, &format!("01a234d7-5435-7313-b465-{i:012}")),
                    sha256: "f".repeat(64),
                    adopted: false,
                })
                .collect(),
            frontier: Some(vec!["0".repeat(64)]),
            watermark_utc: Some("2026-07-13T06:00:00.000000Z".into()),
            ahead: Some(
                (0..n)
                    .map(|i| keys::index_key(t, &format!("01a234d7-5435-7313-b465-{i:012}"), &run))
                    .collect(),
            ),
            index_window: None,
            compactions: None,
            public_key: None,
            key_id: None,
            signature: None,
            checkpoint: None,
        };
        let empty = seal(0).to_bytes().unwrap().len() as u64;
        let full = seal(100).to_bytes().unwrap().len() as u64;
        let per = (full - empty) / 100;
        assert!(per <= MAX_ENTRY_BYTES, "{per} bytes a commit");
        assert!(
            per > MAX_ENTRY_BYTES * 3 / 4,
            "{per} bytes a commit: the bound is loose"
        );
    }

    /// A window's stamp must be of a directory it counts, in the form a seal writes.
    #[test]
    fn a_window_stamp_of_an_uncounted_directory_or_not_a_stamp_is_named() {
        let w = chrono::DateTime::parse_from_rfc3339("2026-07-13T06:00:10Z")
            .unwrap()
            .with_timezone(&Utc);
        let dir = keys::index_dir(w - chrono::Duration::seconds(5));
        let other = keys::index_dir(w - chrono::Duration::seconds(4));
        let win = |stamps: &[(&str, &str)]| IndexWindow {
            from_utc: "2026-07-13T06:00:00Z".into(),
            counts: [(dir.clone(), 3)].into_iter().collect(),
            stamps: stamps
                .iter()
                .map(|(d, s)| (d.to_string(), s.to_string()))
                .collect(),
            fs_clock_ns: None,
        };
        assert!(window_fields(&win(&[(&dir, "12:1765000000123456789")]), w).is_empty());
        let bad = window_fields(&win(&[(&other, "12:1"), (&dir, "twelve")]), w);
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad
            .iter()
            .all(|m| m.contains("not a stamp of a directory it counts")));
        assert!(bad.iter().any(|m| m.contains(&other)));
    }

    /// A window's file-system clock must be a number of nanoseconds.
    #[test]
    fn a_window_clock_that_is_not_a_number_is_named() {
        let w = chrono::DateTime::parse_from_rfc3339("2026-07-13T06:00:10Z")
            .unwrap()
            .with_timezone(&Utc);
        let win = |c: &str| IndexWindow {
            from_utc: "2026-07-13T06:00:00Z".into(),
            counts: Default::default(),
            stamps: Default::default(),
            fs_clock_ns: Some(c.into()),
        };
        assert!(window_fields(&win("1765000000123456789"), w).is_empty());
        assert_eq!(
            win("1765000000123456789").fs_clock(),
            Some(1_765_000_000_123_456_789)
        );
        let bad = window_fields(&win("soon"), w);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("fs_clock_ns \"soon\" is not a number"),
            "{bad:?}"
        );
    }
}

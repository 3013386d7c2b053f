//! Restoring from a replica or backup: seals, pointers and parts the store's records prove
//! are missing, copied back byte-identical and create-only, each checked first (see the
//! [module documentation](super)).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::audit::chain;
use crate::audit::repair::options::{RepairOptions, RepairOutcome};
use crate::base::digest::sha256_hex;
use crate::base::digest::Want;
use crate::base::error::Result;
use crate::base::time::rfc3339_us;
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::{check_pointer, Pointer};
use crate::history::seal::{Seal, StoredSeal};
use crate::parts::read::facts::hash_and_facts;
use crate::publish::checked::publish_checked;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// Publish `bytes` under `key` create-only, accepting only the same bytes already there.
pub(super) async fn put_back(store: &dyn AtomicPublisher, key: &str, bytes: Bytes) -> Result<()> {
    let want = bytes.clone();
    publish_checked(store, key, bytes, |have| {
        if have == want.as_ref() {
            Ok(())
        } else {
            Err(format!(
                "holds other bytes (sha256 {}) than the restored object",
                sha256_hex(have)
            ))
        }
    })
    .await
    .map(|_| ())
}

/// Most seals `newest_seals` looks for after the store's newest one.
const MAX_NEWEST_SEALS: u64 = 1_000_000;

/// The seals of `src` after the store's newest one, up to the one whose sha256 is `head`,
/// oldest first, each checked: the last against `head`, each before it against the
/// `prev_sha256` of the one after, and the first's `prev_sha256` against the store's own
/// newest seal. Nothing when the store's head is `head` already; otherwise what cannot be
/// found or does not link is reported missing.
async fn newest_seals(
    src: &dyn AtomicPublisher,
    chain: &chain::Chain,
    head: &str,
    out: &mut RepairOutcome,
) -> Result<Vec<(String, Bytes)>> {
    let head = head.to_ascii_lowercase();
    let (local_seq, local_digest) = match chain.head() {
        Some((n, d)) => (n, Some(d.to_ascii_lowercase())),
        None => (0, None),
    };
    if local_digest.as_deref() == Some(head.as_str()) {
        return Ok(Vec::new());
    }
    let Some(tail) = seals_up_to(src, local_seq, &head).await? else {
        out.missing.push((
            keys::seal_key(local_seq + 1),
            format!(
                "the expected head {head} is not the store's newest seal (seal {local_seq}), and {} holds no seal after it with that sha256",
                src.describe()
            ),
        ));
        return Ok(Vec::new());
    };
    match link(src, &tail, &head, local_seq, local_digest.as_deref()) {
        Ok(()) => Ok(tail),
        Err(missing) => {
            out.missing.push(missing);
            Ok(Vec::new())
        }
    }
}

/// The seals of `src` after seal `local_seq`, up to the first whose sha256 is `head`
/// (oldest first); `None` when none after it has that digest.
async fn seals_up_to(
    src: &dyn AtomicPublisher,
    local_seq: u64,
    head: &str,
) -> Result<Option<Vec<(String, Bytes)>>> {
    let mut tail: Vec<(String, Bytes)> = Vec::new();
    for n in local_seq + 1..=local_seq.saturating_add(MAX_NEWEST_SEALS) {
        let key = keys::seal_key(n);
        let Some(bytes) = crate::history::seal::get_bytes(src, &key).await? else {
            break;
        };
        let digest = sha256_hex(&bytes);
        tail.push((key, bytes));
        if digest == head {
            return Ok(Some(tail));
        }
    }
    Ok(None)
}

/// Check that `tail` links: each seal's digest is the `prev_sha256` of the one after, the
/// last's is `head`, and the first links to the store's own newest seal (`local_seq`, with
/// digest `ours`). `Err`: what is missing (key, detail).
fn link(
    src: &dyn AtomicPublisher,
    tail: &[(String, Bytes)],
    head: &str,
    local_seq: u64,
    ours: Option<&str>,
) -> std::result::Result<(), (String, String)> {
    let mut want = head.to_string();
    for (key, bytes) in tail.iter().rev() {
        let got = sha256_hex(bytes);
        if got != want {
            return Err((
                key.clone(),
                format!(
                    "{} holds it with sha256 {got}, the seal after it records {want}",
                    src.describe()
                ),
            ));
        }
        let Ok(seal) = Seal::from_bytes(key, bytes) else {
            return Err((
                key.clone(),
                format!("{} holds no readable seal there", src.describe()),
            ));
        };
        want = seal.prev_sha256.unwrap_or_default().to_ascii_lowercase();
    }
    match ours {
        Some(ours) if want != ours => Err((
            keys::seal_key(local_seq + 1),
            format!(
                "{}'s seal {} records prev_sha256 {want}, but this store's seal {local_seq} is {ours}: another history",
                src.describe(),
                local_seq + 1
            ),
        )),
        _ => Ok(()),
    }
}

/// Restore missing seals, pointers and parts from `src`; returns the pointer keys
/// restored (or, with `dry_run`, that would be).
pub(super) async fn restore(
    store: &dyn AtomicPublisher,
    src: &dyn AtomicPublisher,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<HashSet<String>> {
    let r = Restorer { store, src, opts };
    let chain = chain::walk(store, None).await?;
    let mut sealed = r.seals(&chain, out).await?;
    if let Some(head) = &opts.expect_head {
        r.newest_seals(&chain, head, &mut sealed, out).await?;
    }
    let listing = store.list("").await?;
    let listed: HashMap<&str, &ObjectInfo> = listing.iter().map(|o| (o.key.as_str(), o)).collect();
    let (restored, mut pointers) = r.pointers(&listing, &listed, &sealed, out).await?;
    r.parts(&listing, &listed, &mut pointers, out).await?;
    Ok(restored)
}

/// The stores and options of one restore.
struct Restorer<'a> {
    store: &'a dyn AtomicPublisher,
    src: &'a dyn AtomicPublisher,
    opts: &'a RepairOptions,
}

/// Note the entries of a restored seal: their pointers are vouched for (and checked).
fn note_entries(sealed: &mut HashMap<String, String>, seal: &Seal) {
    for e in &seal.entries {
        sealed
            .entry(e.key.clone())
            .or_insert(e.sha256.to_lowercase());
    }
}

impl Restorer<'_> {
    /// Put `bytes` back under `key` (unless `dry_run`) and record it restored.
    async fn put_back(&self, key: &str, bytes: Bytes, out: &mut RepairOutcome) -> Result<()> {
        if !self.opts.dry_run {
            put_back(self.store, key, bytes).await?;
        }
        out.restored.push(key.to_string());
        Ok(())
    }

    /// 1. Seals missing between seal 1 and the newest, newest first: each checked against
    ///    the `prev_sha256` of the seal after it (local, or just restored and so checked).
    ///    Returns every sealed pointer key with its digest, the restored seals' included.
    async fn seals(
        &self,
        chain: &chain::Chain,
        out: &mut RepairOutcome,
    ) -> Result<HashMap<String, String>> {
        let have: BTreeMap<u64, &StoredSeal> = chain.seals.iter().map(|s| (s.key_seq, s)).collect();
        let newest = have.keys().next_back().copied().unwrap_or(0);
        let mut next_prev: Option<String> = None;
        // Entries of restored seals: their pointers are vouched for (and checked) below.
        let mut sealed: HashMap<String, String> = chain
            .leaves
            .iter()
            .map(|l| (l.key.clone(), l.digest.clone()))
            .collect();
        for n in (1..=newest).rev() {
            if let Some(s) = have.get(&n) {
                next_prev = s.seal.as_ref().ok().and_then(|s| s.prev_sha256.clone());
                continue;
            }
            let key = keys::seal_key(n);
            let Some(want) = next_prev.take() else {
                continue; // nothing records its digest: reported missing by the caller
            };
            let Some(bytes) = crate::history::seal::get_bytes(self.src, &key).await? else {
                continue;
            };
            let got = sha256_hex(&bytes);
            if got != want {
                tracing::warn!(%key, %got, %want, "the --from store's seal is not the one the next seal records");
                continue;
            }
            let Ok(seal) = Seal::from_bytes(&key, &bytes) else {
                continue;
            };
            self.put_back(&key, bytes, out).await?;
            note_entries(&mut sealed, &seal);
            next_prev = seal.prev_sha256.clone();
        }
        Ok(sealed)
    }

    /// 1b. The newest seals, which no seal records: only against a head known outside.
    async fn newest_seals(
        &self,
        chain: &chain::Chain,
        head: &str,
        sealed: &mut HashMap<String, String>,
        out: &mut RepairOutcome,
    ) -> Result<()> {
        for (key, bytes) in newest_seals(self.src, chain, head, out).await? {
            let Ok(seal) = Seal::from_bytes(&key, &bytes) else {
                continue;
            };
            self.put_back(&key, bytes, out).await?;
            note_entries(sealed, &seal);
        }
        Ok(())
    }

    /// 2. Pointers the seals or index entries record that are gone. Returns the keys
    ///    restored and the pointers restored.
    async fn pointers(
        &self,
        listing: &[ObjectInfo],
        listed: &HashMap<&str, &ObjectInfo>,
        sealed: &HashMap<String, String>,
        out: &mut RepairOutcome,
    ) -> Result<(HashSet<String>, Vec<Pointer>)> {
        let mut indexed: HashMap<String, String> = HashMap::new();
        for o in listing {
            if let KeyKind::History(h @ HistoryKey::Index { .. }) = keys::classify(&o.key) {
                if let Some(p) = h.pointer_key() {
                    indexed.insert(p, o.key.clone());
                }
            }
        }
        let wanted: BTreeSet<&String> = sealed.keys().chain(indexed.keys()).collect();
        let mut pointers: Vec<Pointer> = Vec::new();
        let mut restored = HashSet::new();
        for pkey in wanted {
            if listed.contains_key(pkey.as_str()) {
                continue;
            }
            let Some((bytes, p)) = self.pointer(pkey, listed, sealed, &indexed).await? else {
                continue;
            };
            self.put_back(pkey, bytes, out).await?;
            restored.insert(pkey.clone());
            pointers.push(p);
        }
        Ok((restored, pointers))
    }

    /// The pointer `pkey` as `src` holds it, when it is the one the store's records name:
    /// the digest its seal records, else its index entry and the part the store holds.
    async fn pointer(
        &self,
        pkey: &str,
        listed: &HashMap<&str, &ObjectInfo>,
        sealed: &HashMap<String, String>,
        indexed: &HashMap<String, String>,
    ) -> Result<Option<(Bytes, Pointer)>> {
        let KeyKind::Pointer { run_id, commit_id } = keys::classify(pkey) else {
            return Ok(None);
        };
        let Some(bytes) = crate::history::pointers::get_pointer_or_none(self.src, pkey).await?
        else {
            return Ok(None);
        };
        let Ok(p) = check_pointer(pkey, &bytes, &run_id, &commit_id) else {
            return Ok(None);
        };
        let ok = match sealed.get(pkey) {
            Some(d) => sha256_hex(&bytes) == *d,
            None => {
                indexed.get(pkey).is_some_and(|ikey| {
                    DateTime::parse_from_rfc3339(&p.committed_utc).is_ok_and(|t| {
                        keys::index_key(t.with_timezone(&Utc), &commit_id, &run_id) == *ikey
                    })
                }) && part_agrees(self.store, listed.get(p.part_path.as_str()).copied(), &p).await
            }
        };
        if !ok {
            tracing::warn!(key = %pkey, "the --from store's pointer is not the one recorded");
            return Ok(None);
        }
        Ok(Some((bytes, p)))
    }

    /// 3. Parts every pointer (present or restored) records that are gone.
    async fn parts(
        &self,
        listing: &[ObjectInfo],
        listed: &HashMap<&str, &ObjectInfo>,
        pointers: &mut Vec<Pointer>,
        out: &mut RepairOutcome,
    ) -> Result<()> {
        for o in listing {
            if matches!(keys::classify(&o.key), KeyKind::Pointer { .. }) {
                if let Some(b) =
                    crate::history::pointers::get_pointer_or_none(self.store, &o.key).await?
                {
                    if let Ok(p) = Pointer::from_bytes(&o.key, &b) {
                        pointers.push(p);
                    }
                }
            }
        }
        for p in pointers.iter() {
            if !listed.contains_key(p.part_path.as_str()) {
                self.part(p, out).await?;
            }
        }
        Ok(())
    }

    /// The part pointer `p` records, from `src` when it holds the bytes `p` records.
    async fn part(&self, p: &Pointer, out: &mut RepairOutcome) -> Result<()> {
        let src = self.src;
        let Some(bytes) = src.get(&p.part_path).await? else {
            out.missing.push((
                p.part_path.clone(),
                format!(
                    "pointer {} records it, but it is gone and {} does not hold it",
                    keys::pointer_key(&p.run_id, &p.commit_id),
                    src.describe()
                ),
            ));
            return Ok(());
        };
        let matches = bytes.len() as u64 == p.size_bytes
            && sha256_hex(&bytes) == p.sha256
            && p.blake3
                .as_ref()
                .is_none_or(|b| crate::base::digest::blake3_hex(&bytes) == *b);
        if !matches {
            out.missing.push((
                p.part_path.clone(),
                format!("gone, and {} holds other bytes under its name than its pointer records (sha256 {})", src.describe(), sha256_hex(&bytes)),
            ));
            return Ok(());
        }
        self.put_back(&p.part_path, bytes, out).await
    }
}

/// Whether a pointer only an index entry vouches for agrees with the part the store holds:
/// its sha256, size, rows, sequence and event-time ranges and schema version; `true` when
/// the part is gone too (it is then restored only with the digests this pointer records).
async fn part_agrees(store: &dyn AtomicPublisher, part: Option<&ObjectInfo>, p: &Pointer) -> bool {
    let Some(o) = part else { return true };
    let (digests, facts) = hash_and_facts(store, &o.key, o.size, Want::SHA256, true, &|_| {}).await;
    let (Ok(d), Ok(f)) = (digests, facts) else {
        return false;
    };
    let times = f
        .event_time_us
        .map(|(lo, hi)| (rfc3339_us(lo), rfc3339_us(hi)));
    d.sha256.as_deref() == Some(p.sha256.as_str())
        && o.size == p.size_bytes
        && f.rows == p.row_count
        && f.sequence == Some((p.first_sequence, p.last_sequence))
        && times == Some((p.min_event_time_utc.clone(), p.max_event_time_utc.clone()))
        && f.schema_version.as_deref() == Some(p.schema_version.as_str())
}

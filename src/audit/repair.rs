//! `repair`: put back what a crash or a deletion took, without ever writing history the
//! store's own records contradict.
//!
//! **Adopting** an orphan part (a crash between part and pointer) writes its pointer from
//! the part's own footer and columns, create-only, marked `"adopted": true`. A part is
//! adopted only when all of these hold:
//!
//! - no seal, index entry or leaf locator names its pointer: those prove the commit *had* a
//!   pointer, and a pointer written now would differ from it (another `committed_utc`,
//!   `adopted`), which a seal reports as `sealed_pointer_changed` forever. Such a pointer is
//!   reported missing, with how to restore it (`--from`);
//! - its footer names this store (`lineage_store_id`, parts written since part encoding 3),
//!   so a well-formed part copied in from another store is never adopted. A part that names
//!   no store (written before parts did) is adopted only with `adopt_unidentified`: nothing
//!   in it can tell this store's part from another's;
//! - its footer carries its file name's commit id and a registered schema version, its
//!   Arrow schema is the contract, and its `run_id`/`target_crs` values all match its path;
//! - its content says it was made longer ago than the grace period (the UUIDv7 time of the
//!   commit id, or the claim time of a commit key; never the modification time, see
//!   [`crate::audit::verify::flight`]): its writer may still publish the pointer itself.
//!
//! **Restoring** (`from`: a replica or a backup of this store) copies back, byte-identical
//! and create-only, what the store's records prove is missing, each checked before it is
//! published: a seal against the `prev_sha256` of the seal after it, a sealed pointer
//! against the digest its seal records, a pointer only an index entry names against the
//! index entry (same commit, run and time) and against its part, a part against the sha256,
//! BLAKE3 and size its pointer records. The other store must have this store's identity.
//!
//! **Delta versions** the log lacks are written again, create-only, with or without
//! `from`: a version is a pure function of its seal, the pointers it seals and their
//! parts' footers ([`crate::history::delta::restore_missing`]), so once those are back the
//! rebuilt bytes are the bytes that were there; a version whose parts are still missing is
//! reported, not written.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::audit::chain;
use crate::audit::verify::flight::{commit_time, Claims, Window};
use crate::base::digest::sha256_hex;
use crate::base::digest::Want;
use crate::base::error::{Error, Result};
use crate::base::time::{rfc3339, rfc3339_us};
use crate::format::keys::{self, HistoryKey, KeyKind};
use crate::format::pointer::{check_pointer, tool_version, Pointer, POINTER_FORMAT};
use crate::history::identity::read_identity;
use crate::history::seal::Seal;
use crate::parts::read::hash_and_facts;
use crate::publish::checked::{publish_checked, Published};
use crate::publish::{require_objects, AtomicPublisher, ObjectInfo};
use crate::schema::contract;

/// What `repair` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepairOutcome {
    /// Pointers written (keys), one per adopted part.
    pub adopted: Vec<String>,
    /// Orphans left alone, with why (part key, reason).
    pub refused: Vec<(String, String)>,
    /// Orphans within the grace period, or whose pointer appeared meanwhile.
    pub in_flight: u64,
    /// Objects restored byte-identical from the `from` store (keys; with `dry_run`, what
    /// would be).
    pub restored: Vec<String>,
    /// Objects the store's records prove existed that are gone and were not restored, with
    /// why and how to restore them (key, detail).
    pub missing: Vec<(String, String)>,
}

impl RepairOutcome {
    /// True when nothing was refused and nothing is still missing.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty() && self.missing.is_empty()
    }
}

/// How `repair` runs.
#[derive(Debug, Clone)]
pub struct RepairOptions {
    /// The repairer's time.
    pub now: DateTime<Utc>,
    /// Orphans whose content says they are younger than this are left alone.
    pub grace: Duration,
    /// Only say what would be adopted or restored.
    pub dry_run: bool,
    /// Also adopt parts whose footer names no store (written before parts did).
    pub adopt_unidentified: bool,
    /// The sha256 of the newest seal, known outside the store (an auditor's note, a
    /// witness): with a `from` store, the seals after the store's newest one up to the one
    /// with this digest are restored, the newest checked against it and each before it
    /// against the `prev_sha256` of the one after. Without it nothing in the store records
    /// the newest seals' digests, so they are never restored.
    pub expect_head: Option<String>,
}

/// Adopt every orphan part older than `grace` (relative to `now`). With `dry_run`, only
/// say what would be adopted. See [`repair_with`].
pub async fn repair(
    store: &dyn AtomicPublisher,
    now: DateTime<Utc>,
    grace: Duration,
    dry_run: bool,
) -> Result<RepairOutcome> {
    let opts = RepairOptions {
        now,
        grace,
        dry_run,
        adopt_unidentified: false,
        expect_head: None,
    };
    repair_with(store, None, &opts).await
}

/// Restore what `from` (a replica or backup of this store) holds of what the store's
/// records prove is missing, then adopt the orphan parts that nothing vouches for (see the
/// module documentation for every rule).
pub async fn repair_with(
    store: &dyn AtomicPublisher,
    from: Option<&dyn AtomicPublisher>,
    opts: &RepairOptions,
) -> Result<RepairOutcome> {
    require_objects(store).await?;
    let identity = read_identity(store).await?;
    let mut out = RepairOutcome::default();
    let mut restored_pointers: HashSet<String> = HashSet::new();
    if let Some(src) = from {
        require_objects(src).await?;
        match (read_identity(src).await?, &identity) {
            (Some(theirs), Some(ours)) if theirs.store_id != ours.store_id => {
                return Err(Error::Usage(format!(
                    "--from {}: another store (identity {}); this store is {}: a replica or backup of this store has its identity",
                    src.describe(),
                    theirs.store_id,
                    ours.store_id
                )))
            }
            _ => {}
        }
        restored_pointers = restore(store, src, opts, &mut out).await?;
    }
    let listing = store.list("").await?;
    let chain = chain::walk(store, None).await?;
    let vouched = vouchers(&chain, &listing);
    let present: HashSet<&str> = listing
        .iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. }))
        .map(|o| o.key.as_str())
        .chain(restored_pointers.iter().map(String::as_str))
        .collect();
    let hint = match from {
        Some(src) => format!("{} does not hold it as recorded", src.describe()),
        None => "restore it byte-identical from a replica or backup: `lineage repair --from <URL>`"
            .to_string(),
    };
    for p in &chain.problems {
        if p.kind == crate::audit::report::ProblemKind::SealMissing
            && !out.restored.contains(&p.key)
        {
            out.missing
                .push((p.key.clone(), format!("{}; {hint}", p.detail)));
        }
    }
    for (pkey, why) in &vouched {
        if !present.contains(pkey.as_str()) {
            out.missing.push((
                pkey.clone(),
                format!("{why}, but the pointer is gone (a pointer written now would differ from it, so its part is never adopted); {hint}"),
            ));
        }
    }
    adopt(
        store,
        &listing,
        &present,
        &vouched,
        identity.as_ref().map(|i| i.store_id.as_str()),
        opts,
        &mut out,
    )
    .await?;
    // The Delta versions the log lacks, rebuilt from the (restored) seals, pointers and
    // parts: a version is a pure function of them, so the bytes are the ones that were there.
    if let Some((head, _)) = chain.head() {
        let delta = crate::history::delta::restore_missing(store, head, opts.dry_run).await?;
        out.restored.extend(
            delta
                .restored
                .iter()
                .map(|&v| crate::format::keys::delta_version_key(v)),
        );
        out.missing
            .extend(delta.missing.into_iter().map(|(v, why)| {
                (
                    crate::format::keys::delta_version_key(v),
                    format!("Delta version {v} cannot be rebuilt byte-identical: {why}"),
                )
            }));
    }
    Ok(out)
}

/// Every pointer key the store's records say existed, with what says so: the seal that
/// sealed it, else its index entry or leaf locator.
fn vouchers(chain: &chain::Chain, listing: &[ObjectInfo]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in &chain.leaves {
        out.entry(l.key.clone())
            .or_insert_with(|| format!("seal {} sealed it with sha256 {}", l.seq, l.digest));
    }
    for o in listing {
        if let KeyKind::History(h) = keys::classify(&o.key) {
            if let Some(pkey) = h.pointer_key() {
                let what = match h {
                    HistoryKey::Index { .. } => "index entry",
                    _ => "leaf locator",
                };
                out.entry(pkey)
                    .or_insert_with(|| format!("{what} {} records it", o.key));
            }
        }
    }
    out
}

/// Adopt the pointerless parts nothing vouches for.
#[allow(clippy::too_many_arguments)]
async fn adopt(
    store: &dyn AtomicPublisher,
    listing: &[ObjectInfo],
    present: &HashSet<&str>,
    vouched: &BTreeMap<String, String>,
    store_id: Option<&str>,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    let window = Window {
        now: opts.now,
        grace: opts.grace,
    };
    let mut claims: Option<Claims> = None;
    for o in listing {
        let KeyKind::Part {
            run_id,
            target_crs,
            commit_id,
        } = keys::classify(&o.key)
        else {
            continue;
        };
        let pkey = keys::pointer_key(&run_id, &commit_id);
        // Present, or reported missing above (never adopted: see `vouchers`).
        if present.contains(pkey.as_str()) || vouched.contains_key(&pkey) {
            continue;
        }
        let claims = match &claims {
            Some(c) => c,
            None => claims.insert(Claims::load(store, listing).await),
        };
        if let Ok((t, _)) = commit_time(&commit_id, &run_id, &target_crs, claims) {
            if window.admits(t).is_ok() {
                out.in_flight += 1;
                continue;
            }
        }
        let (digests, facts) =
            hash_and_facts(store, &o.key, o.size, Want::BOTH, true, &|_| {}).await;
        let facts = match facts {
            Ok(f) => f,
            Err(e) => {
                out.refused.push((o.key.clone(), e.to_string()));
                continue;
            }
        };
        if let Some(why) = facts.mismatch(&run_id, &target_crs, &commit_id) {
            out.refused.push((o.key.clone(), why));
            continue;
        }
        if let Some(why) = facts.store_mismatch(store_id) {
            let unidentified = facts.store_id.is_none();
            if !(unidentified && opts.adopt_unidentified) {
                let how = if unidentified {
                    "; `--adopt-unidentified` adopts such parts when you know they are this store's"
                } else {
                    ""
                };
                out.refused.push((o.key.clone(), format!("{why}{how}")));
                continue;
            }
        }
        let (Some(seq), Some(time)) = (facts.sequence, facts.event_time_us) else {
            out.refused
                .push((o.key.clone(), "the part has no rows with a sequence".into()));
            continue;
        };
        let digests = digests?;
        let pointer = Pointer {
            format: POINTER_FORMAT.to_string(),
            commit_id: commit_id.clone(),
            run_id: run_id.clone(),
            target_crs: target_crs.clone(),
            part_path: o.key.clone(),
            row_count: facts.rows,
            size_bytes: o.size,
            schema_version: facts
                .schema_version
                .clone()
                .unwrap_or_else(|| contract::SCHEMA_VERSION.to_string()),
            sha256: digests.sha256.unwrap_or_default(),
            blake3: digests.blake3,
            // The part's own time is the best record of when the commit happened.
            committed_utc: rfc3339(o.modified.unwrap_or(opts.now)),
            first_sequence: seq.0,
            last_sequence: seq.1,
            min_event_time_utc: rfc3339_us(time.0),
            max_event_time_utc: rfc3339_us(time.1),
            tool_version: tool_version(),
            commit_key: None,
            adopted: true,
        };
        if opts.dry_run {
            out.adopted.push(pkey);
            continue;
        }
        let part_path = o.key.clone();
        let published = publish_checked(store, &pkey, Bytes::from(pointer.to_bytes()?), |have| {
            let other = Pointer::from_bytes(&pkey, have).map_err(|e| e.to_string())?;
            if other.sha256 == pointer.sha256 && other.part_path == part_path {
                Ok(())
            } else {
                Err("a different pointer holds this commit id".into())
            }
        })
        .await;
        match published.map(|kept| kept.published) {
            Ok(Published::Created) => {
                tracing::info!(part = %o.key, pointer = %pkey, "adopted orphan part");
                out.adopted.push(pkey);
            }
            // The writer (or another repair) published it meanwhile.
            Ok(Published::AlreadyOurs) => out.in_flight += 1,
            Err(e) => out.refused.push((o.key.clone(), e.to_string())),
        }
    }
    Ok(())
}

/// Publish `bytes` under `key` create-only, accepting only the same bytes already there.
async fn put_back(store: &dyn AtomicPublisher, key: &str, bytes: Bytes) -> Result<()> {
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
    let mut tail: Vec<(String, Bytes)> = Vec::new();
    let mut found = false;
    for n in local_seq + 1..=local_seq.saturating_add(MAX_NEWEST_SEALS) {
        let key = keys::seal_key(n);
        let Some(bytes) = crate::history::seal::get_bytes(src, &key).await? else {
            break;
        };
        let digest = sha256_hex(&bytes);
        tail.push((key, bytes));
        if digest == head {
            found = true;
            break;
        }
    }
    let after = keys::seal_key(local_seq + 1);
    if !found {
        out.missing.push((
            after,
            format!(
                "the expected head {head} is not the store's newest seal (seal {local_seq}), and {} holds no seal after it with that sha256",
                src.describe()
            ),
        ));
        return Ok(Vec::new());
    }
    // Each seal's digest is the `prev_sha256` of the one after; the first links to ours.
    let mut want = head.clone();
    for (key, bytes) in tail.iter().rev() {
        let got = sha256_hex(bytes);
        if got != want {
            out.missing.push((
                key.clone(),
                format!(
                    "{} holds it with sha256 {got}, the seal after it records {want}",
                    src.describe()
                ),
            ));
            return Ok(Vec::new());
        }
        let Ok(seal) = Seal::from_bytes(key, bytes) else {
            out.missing.push((
                key.clone(),
                format!("{} holds no readable seal there", src.describe()),
            ));
            return Ok(Vec::new());
        };
        want = seal.prev_sha256.unwrap_or_default().to_ascii_lowercase();
    }
    if let Some(ours) = local_digest {
        if want != ours {
            out.missing.push((
                after,
                format!(
                    "{}'s seal {} records prev_sha256 {want}, but this store's seal {local_seq} is {ours}: another history",
                    src.describe(),
                    local_seq + 1
                ),
            ));
            return Ok(Vec::new());
        }
    }
    Ok(tail)
}

/// Restore missing seals, pointers and parts from `src`; returns the pointer keys
/// restored (or, with `dry_run`, that would be).
async fn restore(
    store: &dyn AtomicPublisher,
    src: &dyn AtomicPublisher,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<HashSet<String>> {
    // 1. Seals missing between seal 1 and the newest, newest first: each checked against
    //    the `prev_sha256` of the seal after it (local, or just restored and so checked).
    let chain = chain::walk(store, None).await?;
    let have: BTreeMap<u64, &crate::history::seal::StoredSeal> =
        chain.seals.iter().map(|s| (s.key_seq, s)).collect();
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
        let Some(bytes) = crate::history::seal::get_bytes(src, &key).await? else {
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
        if !opts.dry_run {
            put_back(store, &key, bytes).await?;
        }
        out.restored.push(key.clone());
        for e in &seal.entries {
            sealed
                .entry(e.key.clone())
                .or_insert(e.sha256.to_lowercase());
        }
        next_prev = seal.prev_sha256.clone();
    }
    // 1b. The newest seals, which no seal records: only against a head known outside.
    if let Some(head) = &opts.expect_head {
        for (key, bytes) in newest_seals(src, &chain, head, out).await? {
            let Ok(seal) = Seal::from_bytes(&key, &bytes) else {
                continue;
            };
            if !opts.dry_run {
                put_back(store, &key, bytes).await?;
            }
            out.restored.push(key);
            for e in &seal.entries {
                sealed
                    .entry(e.key.clone())
                    .or_insert(e.sha256.to_lowercase());
            }
        }
    }
    // 2. Pointers the seals or index entries record that are gone.
    let listing = store.list("").await?;
    let listed: HashMap<&str, &ObjectInfo> = listing.iter().map(|o| (o.key.as_str(), o)).collect();
    let mut indexed: HashMap<String, String> = HashMap::new();
    for o in &listing {
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
        let KeyKind::Pointer { run_id, commit_id } = keys::classify(pkey) else {
            continue;
        };
        let Some(bytes) = crate::history::pointers::get_pointer_or_none(src, pkey).await? else {
            continue;
        };
        let Ok(p) = check_pointer(pkey, &bytes, &run_id, &commit_id) else {
            continue;
        };
        let ok = match sealed.get(pkey) {
            Some(d) => sha256_hex(&bytes) == *d,
            None => {
                indexed.get(pkey).is_some_and(|ikey| {
                    DateTime::parse_from_rfc3339(&p.committed_utc).is_ok_and(|t| {
                        keys::index_key(t.with_timezone(&Utc), &commit_id, &run_id) == *ikey
                    })
                }) && part_agrees(store, listed.get(p.part_path.as_str()).copied(), &p).await
            }
        };
        if !ok {
            tracing::warn!(key = %pkey, "the --from store's pointer is not the one recorded");
            continue;
        }
        if !opts.dry_run {
            put_back(store, pkey, bytes).await?;
        }
        out.restored.push(pkey.clone());
        restored.insert(pkey.clone());
        pointers.push(p);
    }
    // 3. Parts every pointer (present or restored) records that are gone.
    for o in &listing {
        if matches!(keys::classify(&o.key), KeyKind::Pointer { .. }) {
            if let Some(b) = crate::history::pointers::get_pointer_or_none(store, &o.key).await? {
                if let Ok(p) = Pointer::from_bytes(&o.key, &b) {
                    pointers.push(p);
                }
            }
        }
    }
    for p in &pointers {
        if listed.contains_key(p.part_path.as_str()) {
            continue;
        }
        let Some(bytes) = src.get(&p.part_path).await? else {
            out.missing.push((
                p.part_path.clone(),
                format!(
                    "pointer {} records it, but it is gone and {} does not hold it",
                    keys::pointer_key(&p.run_id, &p.commit_id),
                    src.describe()
                ),
            ));
            continue;
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
            continue;
        }
        if !opts.dry_run {
            put_back(store, &p.part_path, bytes).await?;
        }
        out.restored.push(p.part_path.clone());
    }
    Ok(restored)
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

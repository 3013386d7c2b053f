//! `verify`: every pointer's part is present, byte-identical and carries the right footer;
//! the seal chain is intact and covers its pointers; everything else in the store is
//! accounted for (orphans, foreign objects, stale temps, corrupt pointers).
//!
//! Safe while appends run: the writer publishes a part, then its pointer, and a POSIX
//! publish goes through a temp. A well-formed part without a pointer, or a temp, whose
//! *content* says it was made within [`VerifyOptions::grace`] is named as in flight
//! rather than reported (see [`super::flight`]: never judged by modification time), and an
//! orphan candidate's pointer is looked up again after the scan (it may have landed since
//! the listing). A pointer whose part was not in the listing is looked up again likewise.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use ed25519_dalek::VerifyingKey;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::chain;
use super::flight::{self, InFlight, Window};
use super::log::READ_CONCURRENCY;
use super::part::{hash_and_facts, read_facts};
use crate::digest::{Check, Want};
use crate::encode::sha256_hex;
use crate::error::{Error, Result};
use crate::keys::{self, KeyKind};
use crate::pointer::{rfc3339_us, Pointer};
use crate::publish::{AtomicPublisher, ObjectInfo};

/// Default grace period for temps and orphans: far longer than any publish takes.
pub const DEFAULT_GRACE_MINUTES: i64 = 15;

/// What kind of problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A pointer names a part that does not exist.
    MissingPart,
    /// The part's size differs from the pointer's.
    SizeMismatch,
    /// The part's sha256 differs from the pointer's.
    DigestMismatch,
    /// The part's footer or partition columns contradict its pointer or path.
    FooterMismatch,
    /// A pointer cannot be parsed, or its content contradicts its key.
    CorruptPointer,
    /// A sealed pointer is gone.
    SealedPointerMissing,
    /// A sealed pointer's bytes differ from what was sealed.
    SealedPointerChanged,
    /// A seal in the chain is missing.
    SealMissing,
    /// A seal cannot be parsed, or its entries are invalid.
    SealCorrupt,
    /// A seal is stored under another sequence number than it records.
    SealMisplaced,
    /// A seal's successor records a different digest for it.
    SealChainBroken,
    /// A seal's root or tree size does not match its entries.
    SealRootMismatch,
    /// A signature is missing (with a public key given), wrong, or by another key.
    BadSignature,
    /// No seal has the expected head digest.
    HeadNotFound,
    /// A well-formed part no pointer names, too old for its pointer still to come (a
    /// crash between part and pointer, or a deleted pointer): `repair` can adopt it.
    OrphanPart,
    /// A file under a part's name that is not a well-formed part of this store (unreadable,
    /// footer commit id or schema version wrong, partition values not its path's, or not
    /// what its commit-key claim recorded): reported at once, whatever its age.
    MalformedPart,
    /// An object lineage-store did not write.
    ForeignObject,
    /// A temp left by an interrupted publish.
    StaleTemp,
    /// An index entry that holds bytes, names a missing pointer or another commit time.
    BadIndexEntry,
    /// A commit no seal covers that incremental seals will not find.
    MissedBySeals,
    /// A leaf locator that holds bytes or names the wrong leaf, or a missing one.
    BadLocator,
    /// A head marker of a missing seal, or the newest seal without its marker.
    BadHeadMarker,
    /// A hash tile that is not the tree's, or a missing one.
    BadTile,
}

/// One problem, naming the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// The object it is about.
    pub key: String,
    /// Details for a person.
    pub detail: String,
}

/// Live counters for a progress display (read by the CLI while `verify` runs).
#[derive(Debug, Default)]
pub struct Progress {
    /// Parts to check.
    pub parts_total: AtomicU64,
    /// Parts checked.
    pub parts_done: AtomicU64,
    /// Bytes to hash.
    pub bytes_total: AtomicU64,
    /// Bytes hashed.
    pub bytes_done: AtomicU64,
}

/// How to verify.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// "Now", for the grace period.
    pub now: DateTime<Utc>,
    /// Temps and well-formed pointerless parts whose content says they were made within
    /// this period are in flight, not problems.
    pub grace: Duration,
    /// Hash only this many randomly chosen parts (existence, size and footer of all
    /// parts are still checked).
    pub sample: Option<usize>,
    /// Seed of the sample (random when `None`; reported, so a sample can be repeated).
    pub sample_seed: Option<u64>,
    /// Skip hashing parts of commits sealed by this seal or earlier whose pointers are
    /// unchanged; `Some(None)` means the newest seal.
    pub since_seal: Option<Option<u64>>,
    /// Every seal must carry a valid signature by this key.
    pub public_key: Option<VerifyingKey>,
    /// A head digest kept outside the store; some seal must have it.
    pub expect_head: Option<String>,
    /// Progress counters to update.
    pub progress: Option<Arc<Progress>>,
    /// Objects read at once.
    pub concurrency: usize,
    /// Check only this shard of the store ([`super::shard`]).
    pub shard: Option<super::shard::ShardSpec>,
    /// Cut the shards from the commits of this seal (default: the newest).
    pub plan_seal: Option<u64>,
    /// Which recorded digests of each hashed part to recompute.
    pub digest: Check,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            now: Utc::now(),
            grace: Duration::minutes(DEFAULT_GRACE_MINUTES),
            sample: None,
            sample_seed: None,
            since_seal: None,
            public_key: None,
            expect_head: None,
            progress: None,
            concurrency: READ_CONCURRENCY,
            shard: None,
            plan_seal: None,
            digest: Check::default(),
        }
    }
}

/// The result of a verification.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// The store verified.
    pub store: String,
    /// Pointers read.
    pub commits: u64,
    /// Parts whose size, footer and (when hashed) digest matched.
    pub parts_ok: u64,
    /// Parts whose digest was recomputed (and matched).
    pub parts_hashed: u64,
    /// Of those, the parts whose sha256 was recomputed (every part under `--digest all`;
    /// by default only those whose pointer records no BLAKE3).
    #[serde(default)]
    pub parts_sha256_checked: u64,
    /// Of those, the parts whose BLAKE3 was recomputed.
    #[serde(default)]
    pub parts_blake3_checked: u64,
    /// Parts not hashed because of `--sample` or `--since-seal`.
    pub parts_not_hashed: u64,
    /// Seed of `--sample`, when sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_seed: Option<u64>,
    /// Rows recorded by the pointers that checked out.
    pub rows: u64,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// Seals in the chain.
    pub seals: u64,
    /// Seals with a valid signature.
    pub signed_seals: u64,
    /// Sequence number of the newest seal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_seq: Option<u64>,
    /// sha256 of the newest seal: compare with the head digest kept elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// When the newest seal says it was made (RFC 3339; the sealer's clock): monitor its
    /// age to see that sealing keeps up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_sealed_utc: Option<String>,
    /// Commits covered by seals.
    pub sealed_commits: u64,
    /// Pointers not covered by any seal yet.
    pub unsealed_commits: u64,
    /// How many objects are in flight (`in_flight_objects.len()`).
    pub in_flight: u64,
    /// Every object in flight (temps and parts made within the grace period, by their
    /// content, and parts committed during the scan), sorted by key.
    pub in_flight_objects: Vec<InFlight>,
    /// Everything wrong, sorted by kind then key.
    pub problems: Vec<Problem>,
    /// The newest seal, when its sealer has not finished it (no head marker yet): not a
    /// problem; `lineage seal` finishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished_seal: Option<u64>,
    /// What was checked by `--since-seal`: the seal it started from (older commits were
    /// not looked at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_seal: Option<u64>,
    /// The shard this report covers (`--shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard::ShardInfo>,
    /// The shard reports this one was merged from (`--merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<super::shard::Merged>,
    /// The verdict in words ([`Report::summary`]), e.g. "clean except 2 objects in flight".
    pub summary: String,
}

impl Report {
    /// True when nothing is wrong (objects in flight are not problems; see
    /// [`Report::summary`]).
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// The verdict in a few words: "clean: no problems", "clean except N objects in
    /// flight", or "N problems" (with the in-flight count when there are any).
    pub fn summary(&self) -> String {
        let flying = match self.in_flight {
            0 => String::new(),
            1 => "1 object in flight".to_string(),
            n => format!("{n} objects in flight"),
        };
        match (self.problems.len(), flying.is_empty()) {
            (0, true) => "clean: no problems".to_string(),
            (0, false) => format!("clean except {flying}"),
            (1, true) => "1 problem".to_string(),
            (n, true) => format!("{n} problems"),
            (1, false) => format!("1 problem; {flying}"),
            (n, false) => format!("{n} problems; {flying}"),
        }
    }

    fn fly(&mut self, f: InFlight) {
        self.in_flight += 1;
        self.in_flight_objects.push(f);
    }

    /// Record a problem.
    pub fn push_problem(&mut self, p: Problem) {
        self.problems.push(p);
    }

    fn push(&mut self, kind: ProblemKind, key: impl Into<String>, detail: impl Into<String>) {
        self.problems.push(Problem {
            kind,
            key: key.into(),
            detail: detail.into(),
        });
    }
}

/// Verify the whole store with default options.
pub async fn verify(store: &dyn AtomicPublisher) -> Result<Report> {
    verify_with(store, &VerifyOptions::default()).await
}

/// A pointer as read: its bytes' digest and, when valid, the parsed pointer.
struct ReadPointer {
    key: String,
    digest: Option<String>,
    parsed: Result<Option<Pointer>>,
}

/// Verify the whole store.
pub async fn verify_with(store: &dyn AtomicPublisher, opts: &VerifyOptions) -> Result<Report> {
    if opts.since_seal.is_some() {
        // Only what is new since a seal: O(new + log n), see history::since.
        return crate::history::since::verify_since(store, opts).await;
    }
    let mut report = Report {
        store: store.describe(),
        ..Report::default()
    };
    // The seal chain before the listing: every pointer a seal names existed when the seal
    // was written, so it is in a listing made afterwards unless it was removed. (Listing
    // first would let a concurrent `seal` name pointers the listing never saw.)
    let chain = chain::walk(store, opts.public_key.as_ref()).await?;
    let scope = super::shard::Scope::of(opts, &chain)?;
    report.shard = scope.as_ref().map(super::shard::Scope::info);
    let owns = |k: &str| scope.as_ref().is_none_or(|s| s.owns_pointer(k));
    if scope.as_ref().is_none_or(super::shard::Scope::first) {
        report.problems.extend(chain.problems.iter().cloned());
    }
    report.seals = chain.seals.len() as u64;
    report.signed_seals = chain.signed;
    report.sealed_commits = chain.leaves.len() as u64;
    if let Some((seq, d)) = chain.head() {
        report.head_seq = Some(seq);
        report.head = Some(d.to_string());
        report.head_sealed_utc = chain
            .seals
            .last()
            .and_then(|s| s.seal.as_ref().ok())
            .map(|s| s.sealed_utc.clone());
    }
    if let Some(want) = &opts.expect_head {
        report.problems.extend(chain::check_head(&chain, want));
    }

    let listing = match &scope {
        Some(s) => s.list(store).await?,
        None => store.list("").await?,
    };
    if listing.is_empty() && scope.is_none() {
        // Most likely a mistyped location: "clean, 0 commits" would mislead an auditor.
        return Err(Error::NotFound(format!(
            "{}: the store holds no objects (empty, or not where the URL points)",
            store.describe()
        )));
    }
    let window = Window {
        now: opts.now,
        grace: opts.grace,
    };
    let by_key: HashMap<&str, &ObjectInfo> = listing.iter().map(|o| (o.key.as_str(), o)).collect();
    let mut parts: BTreeMap<&str, &ObjectInfo> = BTreeMap::new();
    let mut pointer_keys = Vec::new();
    let mut history_objects: Vec<&ObjectInfo> = Vec::new();
    for o in &listing {
        match keys::classify(&o.key) {
            KeyKind::Part { .. } => {
                parts.insert(o.key.as_str(), o);
            }
            KeyKind::Pointer { run_id, commit_id } => {
                pointer_keys.push((o.key.clone(), run_id, commit_id))
            }
            KeyKind::Temp => match flight::judge_temp(&o.key, &window) {
                Ok(f) => report.fly(f),
                Err(why) => report.push(
                    ProblemKind::StaleTemp,
                    &o.key,
                    format!(
                        "temp not in flight: {why} ({} bytes, modified {}); `lineage sweep` removes it",
                        o.size,
                        o.modified.map_or("at an unknown time".into(), |t| t.to_rfc3339())
                    ),
                ),
            },
            KeyKind::Foreign => report.push(
                ProblemKind::ForeignObject,
                &o.key,
                "not written by lineage-store",
            ),
            KeyKind::History(_) => history_objects.push(o),
            KeyKind::Seal(_) | KeyKind::Meta => {}
        }
    }

    let read: Vec<ReadPointer> = futures::stream::iter(pointer_keys)
        .map(|(key, run_id, commit_id)| async move {
            match store.get(&key).await {
                Ok(Some(bytes)) => ReadPointer {
                    digest: Some(sha256_hex(&bytes)),
                    parsed: check_pointer(&key, &bytes, &run_id, &commit_id).map(Some),
                    key,
                },
                Ok(None) => ReadPointer {
                    key,
                    digest: None,
                    parsed: Ok(None), // removed since the listing: judged by the seals below
                },
                Err(e) => ReadPointer {
                    key,
                    digest: None,
                    parsed: Err(e),
                },
            }
        })
        .buffer_unordered(opts.concurrency.max(1))
        .collect()
        .await;
    let mut pointers = Vec::new();
    let mut digests: HashMap<String, String> = HashMap::new();
    for r in read {
        if let Some(d) = &r.digest {
            digests.insert(r.key.clone(), d.clone());
        }
        match r.parsed {
            Ok(Some(p)) => pointers.push((r.key, p)),
            Ok(None) => {}
            Err(e) => report.push(ProblemKind::CorruptPointer, r.key, e.to_string()),
        }
    }
    report.commits = digests.len() as u64;

    // Sealed pointers must still be there, byte for byte.
    let trusted_parts: std::collections::HashSet<String> = Default::default();
    for leaf in chain.leaves.iter().filter(|l| owns(&l.key)) {
        match digests.get(&leaf.key) {
            None => report.push(
                ProblemKind::SealedPointerMissing,
                &leaf.key,
                format!("sealed by seal {} but no longer in the store", leaf.seq),
            ),
            Some(d) if d != &leaf.digest => report.push(
                ProblemKind::SealedPointerChanged,
                &leaf.key,
                format!(
                    "sha256 {d}, but seal {} sealed {}: the pointer was edited",
                    leaf.seq, leaf.digest
                ),
            ),
            Some(_) => {}
        }
    }
    report.unsealed_commits = digests
        .keys()
        .filter(|k| !chain.by_key.contains_key(*k))
        .count() as u64;

    let history = crate::history::check::Context {
        chain: &chain,
        pointers: pointers.iter().map(|(k, p)| (k.as_str(), p)).collect(),
        pointer_keys: digests.keys().map(String::as_str).collect(),
        now: opts.now,
        grace: opts.grace,
        scope: scope.as_ref(),
    };
    let checked = crate::history::check::check(store, &history, &history_objects).await?;
    report.problems.extend(checked.problems);
    report.unfinished_seal = checked.unfinished_seal;
    drop(history);
    for (_, p) in &pointers {
        parts.remove(p.part_path.as_str());
    }
    check_parts(store, opts, &mut report, pointers, &by_key, &trusted_parts).await;
    // A part whose pointer key exists but is corrupt is already reported by that pointer.
    let corrupt: std::collections::HashSet<String> = report
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::CorruptPointer)
        .map(|p| p.key.clone())
        .collect();
    parts.retain(|k, _| match keys::classify(k) {
        KeyKind::Part {
            run_id, commit_id, ..
        } => !corrupt.contains(&keys::pointer_key(&run_id, &commit_id)),
        _ => true,
    });
    let (flying, problems) = flight::judge_pointerless_parts(store, &window, parts, &listing).await;
    flying.into_iter().for_each(|f| report.fly(f));
    report.problems.extend(problems);
    report
        .problems
        .sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
    report.in_flight_objects.sort_by(|a, b| a.key.cmp(&b.key));
    report.summary = report.summary();
    Ok(report)
}

/// Which pointers' parts get hashed: all but the trusted ones, then a sample.
fn choose_hashed(
    opts: &VerifyOptions,
    report: &mut Report,
    pointers: &[(String, Pointer)],
    trusted: &std::collections::HashSet<String>,
) -> Vec<bool> {
    let mut hash: Vec<bool> = pointers.iter().map(|(k, _)| !trusted.contains(k)).collect();
    if let Some(n) = opts.sample {
        let seed = opts.sample_seed.unwrap_or_else(|| {
            let mut b = [0u8; 8];
            let _ = getrandom::fill(&mut b);
            u64::from_le_bytes(b)
        });
        report.sample_seed = Some(seed);
        let mut candidates: Vec<usize> = (0..hash.len()).filter(|&i| hash[i]).collect();
        // Sort by key first so a seed picks the same parts whatever the listing order.
        candidates.sort_by(|&a, &b| pointers[a].0.cmp(&pointers[b].0));
        let mut rng = crate::demo::Rng::new(seed);
        for i in 0..candidates.len().min(n) {
            let j = i + (rng.next_u64() % (candidates.len() - i) as u64) as usize;
            candidates.swap(i, j);
        }
        for &i in candidates.iter().skip(n) {
            hash[i] = false;
        }
    }
    hash
}

pub(crate) async fn check_parts(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    report: &mut Report,
    pointers: Vec<(String, Pointer)>,
    by_key: &HashMap<&str, &ObjectInfo>,
    trusted: &std::collections::HashSet<String>,
) {
    let hash = choose_hashed(opts, report, &pointers, trusted);
    let progress = opts.progress.clone().unwrap_or_default();
    progress
        .parts_total
        .store(pointers.len() as u64, Ordering::Relaxed);
    let bytes_total: u64 = pointers
        .iter()
        .zip(&hash)
        .filter(|(_, h)| **h)
        .map(|((_, p), _)| p.size_bytes)
        .sum();
    progress.bytes_total.store(bytes_total, Ordering::Relaxed);
    let progress = &progress;
    let results: Vec<(Pointer, Option<Want>, Found)> =
        futures::stream::iter(pointers.into_iter().zip(hash))
            .map(|((key, p), hash)| {
                let listed = by_key.get(p.part_path.as_str()).map(|o| o.size);
                // The digests to recompute: what --digest asks of what this pointer records.
                let want = hash.then(|| Want::for_check(opts.digest, p.blake3.is_some()));
                async move {
                    let found = check_part(store, &key, &p, listed, want, progress).await;
                    progress.parts_done.fetch_add(1, Ordering::Relaxed);
                    (p, want, found)
                }
            })
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
    for (p, hashed, found) in results {
        if found.is_empty() {
            report.parts_ok += 1;
            report.rows += p.row_count;
            if let Some(want) = hashed {
                report.parts_hashed += 1;
                report.parts_sha256_checked += u64::from(want.sha256);
                report.parts_blake3_checked += u64::from(want.blake3);
                report.bytes_hashed += p.size_bytes;
            } else {
                report.parts_not_hashed += 1;
            }
        }
        for (kind, detail) in found {
            report.push(kind, &p.part_path, detail);
        }
    }
}

/// Problems found with one part, as (kind, detail).
type Found = Vec<(ProblemKind, String)>;

/// The problems of one pointer's part (empty when it checks out); `want`: the digests to
/// recompute, `None` to check existence, size and footer only.
async fn check_part(
    store: &dyn AtomicPublisher,
    key: &str,
    p: &Pointer,
    listed: Option<u64>,
    want: Option<Want>,
    progress: &Progress,
) -> Found {
    let size = match listed {
        Some(s) => Some(s),
        // Not in the listing: look again (a POSIX walk is not a snapshot).
        None => match store.list(&p.part_path).await {
            Ok(l) => l.into_iter().find(|o| o.key == p.part_path).map(|o| o.size),
            Err(e) => return vec![(ProblemKind::MissingPart, format!("cannot list: {e}"))],
        },
    };
    let Some(size) = size else {
        return vec![(
            ProblemKind::MissingPart,
            format!("recorded by {key}, not in the store"),
        )];
    };
    if size != p.size_bytes {
        return vec![(
            ProblemKind::SizeMismatch,
            format!("{size} bytes, pointer {key} records {}", p.size_bytes),
        )];
    }
    let mut out = Vec::new();
    let facts = if let Some(want) = want {
        let on_bytes = |n: u64| {
            progress.bytes_done.fetch_add(n, Ordering::Relaxed);
        };
        let (got, facts) = hash_and_facts(store, &p.part_path, size, want, true, &on_bytes).await;
        match got {
            Ok(got) => {
                let pk = format!("pointer {key}");
                let bad = got.mismatches(&p.sha256, p.blake3.as_deref(), &pk);
                if !bad.is_empty() {
                    out.push((ProblemKind::DigestMismatch, bad.join("; ")));
                }
            }
            Err(e) => out.push((ProblemKind::MissingPart, format!("cannot read: {e}"))),
        }
        facts
    } else {
        read_facts(store, &p.part_path, size, true).await
    };
    match facts {
        Ok(f) => {
            let mut why: Vec<String> = f
                .mismatch(&p.run_id, &p.target_crs, &p.commit_id)
                .into_iter()
                .collect();
            if f.schema_problem.is_none() {
                why.extend(summary_mismatch(&f, p, key));
            }
            if !why.is_empty() {
                out.push((ProblemKind::FooterMismatch, why.join("; ")));
            }
        }
        Err(e) => out.push((ProblemKind::FooterMismatch, e.to_string())),
    }
    out
}

/// Where the part's row count, sequence range or event-time range contradicts the summary
/// its pointer records (so an edited pointer field is caught even before a seal pins it).
fn summary_mismatch(f: &super::part::PartFacts, p: &Pointer, key: &str) -> Vec<String> {
    let mut why = Vec::new();
    if f.schema_version.as_deref() != Some(p.schema_version.as_str()) {
        why.push(format!(
            "footer schema version {}, pointer {key} records {}",
            f.schema_version.as_deref().unwrap_or("(none)"),
            p.schema_version
        ));
    }
    if f.rows != p.row_count {
        why.push(format!(
            "{} rows, pointer {key} records {}",
            f.rows, p.row_count
        ));
    }
    let seq = f.sequence.unwrap_or((0, 0));
    if seq != (p.first_sequence, p.last_sequence) {
        why.push(format!(
            "sequence {}..{}, pointer {key} records {}..{}",
            seq.0, seq.1, p.first_sequence, p.last_sequence
        ));
    }
    let (lo, hi) = f.event_time_us.unwrap_or((0, 0));
    let (lo, hi) = (rfc3339_us(lo), rfc3339_us(hi));
    if lo != p.min_event_time_utc || hi != p.max_event_time_utc {
        why.push(format!(
            "event_time_utc {lo}..{hi}, pointer {key} records {}..{}",
            p.min_event_time_utc, p.max_event_time_utc
        ));
    }
    why
}

/// Parse a pointer and check it agrees with its own key.
pub(crate) fn check_pointer(
    key: &str,
    bytes: &[u8],
    run_id: &str,
    commit_id: &str,
) -> Result<Pointer> {
    let p = Pointer::from_bytes(key, bytes)?;
    let expect_part = keys::part_key(&p.run_id, &p.target_crs, &p.commit_id);
    let bad = if p.run_id != run_id || p.commit_id != commit_id {
        Some(format!(
            "records run_id={} commit {}, but is stored under run_id={run_id} commit {commit_id}",
            p.run_id, p.commit_id
        ))
    } else if p.part_path != expect_part {
        Some(format!(
            "part_path {} is not where commit {} belongs ({expect_part})",
            p.part_path, p.commit_id
        ))
    } else {
        None
    };
    match bad {
        Some(m) => Err(Error::Corrupt {
            what: "pointer",
            key: key.to_string(),
            message: m,
        }),
        None => Ok(p),
    }
}

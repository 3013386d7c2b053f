//! A snapshot: exactly the commits sealed up to one seal, each pointer checked against the
//! digest its seal records.
//!
//! The seals 1..N are read and chained (dense sequence numbers, each `prev_sha256` the
//! digest of the seal before, each `tree_size` and `root` what the entries so far give,
//! each signature valid where there is one); their entries, in seal order, are the
//! snapshot's commits. Each sealed pointer is then read and must have the exact bytes its
//! seal recorded: a missing or changed one is an [`Error::Integrity`] naming it (all of
//! them, not just the first). Nothing is listed to find the data: a part planted under a
//! part's name, or anywhere else, is never seen. Unsealed commits are read only when asked
//! for ([`ReadOptions::include_unsealed`]), each checked against its own key.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Failed, Result};
use crate::format::compaction::{CompactionRecord, CompactionRef};
use crate::format::keys::{self, KeyKind};
use crate::format::pointer::{check_pointer, Pointer};
use crate::history::frontier::Frontier;
use crate::history::merkle;
use crate::history::pointers::{commit_order, READ_CONCURRENCY};
use crate::history::seal::{read_seals, Seal, StoredSeal};
use crate::publish::AtomicPublisher;

/// What to read: which seal, and which commits of it.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The commits sealed by seals 1..=N (default: the newest seal).
    pub as_of_seal: Option<u64>,
    /// Only this run.
    pub run_id: Option<String>,
    /// Only this target CRS (any spelling `EPSG:<n>` canonicalises to).
    pub target_crs: Option<String>,
    /// Also the commits no seal covers yet (each checked against its own key only: no seal
    /// vouches for them). Commits sealed after `as_of_seal` are not among them.
    pub include_unsealed: bool,
    /// Read compacted parts ([`crate::format::compaction`]) for the commits a compaction
    /// in effect as of the seal covers (each record checked against the digest its seal
    /// records, its sources against the snapshot's sealed pointers; the part then against
    /// the record like any part against its pointer), the originals for the rest. Such a
    /// part appears as one [`SnapshotPart`] whose "pointer" is made from the record
    /// (`commit_id` the compaction id, `pointer_key` the record's key).
    pub prefer_compacted: bool,
}

/// The seal a commit was sealed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealRef {
    /// Its sequence number.
    pub seq: u64,
    /// sha256 of its exact bytes: a head digest under which the commit can be proven.
    pub sha256: String,
}

/// The seal a snapshot is "as of".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSeal {
    /// Its sequence number.
    pub seq: u64,
    /// sha256 of its exact bytes (the head digest).
    pub sha256: String,
    /// Commits it covers (every commit of seals 1..=seq).
    pub tree_size: u64,
    /// Its Merkle root.
    pub root: String,
    /// When it was made.
    pub sealed_utc: String,
}

/// One commit of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotPart {
    /// The pointer's key.
    pub pointer_key: String,
    /// sha256 of the pointer's exact bytes (what its seal records).
    pub pointer_sha256: String,
    /// The pointer: the part's key, size and digests the scan checks it against.
    pub pointer: Pointer,
    /// The seal that added it; `None` for an unsealed commit.
    pub sealed_by: Option<SealRef>,
}

/// The commits a read covers.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The seal it is as of (`None`: the store has no seal yet).
    pub seal: Option<SnapshotSeal>,
    /// Sealed commits in seal order, then (when asked for) unsealed ones in commit order;
    /// only those the filters select.
    pub parts: Vec<SnapshotPart>,
    /// Commits the seal covers before the filters (its tree size).
    pub sealed_total: u64,
}

impl Snapshot {
    /// The selected commits no seal covers.
    pub fn unsealed(&self) -> usize {
        self.parts.iter().filter(|p| p.sealed_by.is_none()).count()
    }

    /// Rows of the selected commits.
    pub fn rows(&self) -> u64 {
        self.parts.iter().map(|p| p.pointer.row_count).sum()
    }

    /// Bytes of the selected parts.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.pointer.size_bytes).sum()
    }
}

/// One sealed entry: its pointer key, the digest sealed, the seal.
struct Entry {
    key: String,
    sha256: String,
    by: SealRef,
}

/// Read the snapshot `opts` asks for. Refuses (with [`Error::Integrity`], naming every
/// object) a seal chain that does not hold up to the seal asked for, and sealed pointers
/// that are missing or not the bytes sealed.
pub async fn snapshot(store: &dyn AtomicPublisher, opts: &ReadOptions) -> Result<Snapshot> {
    if let Some(r) = &opts.run_id {
        keys::check_run_id(r)?;
    }
    let target_crs = opts
        .target_crs
        .as_deref()
        .map(|c| {
            crate::schema::crs::canonicalize(c)
                .map_err(|e| Error::Usage(format!("--target-crs {c:?}: {e}")))
        })
        .transpose()?;
    let seals = read_seals(store).await?;
    let (seal, entries, later, compactions) = chain_up_to(&seals, opts.as_of_seal)?;
    if seal.is_none() && !opts.include_unsealed {
        return Err(Error::NotFound(format!(
            "{} has no seal: nothing is vouched for (run `lineage seal`, or read unsealed commits explicitly)",
            store.describe()
        )));
    }
    let sealed_total = entries.len() as u64;
    let selected: Vec<Entry> = entries
        .into_iter()
        .filter(|e| {
            opts.run_id
                .as_deref()
                .is_none_or(|r| run_of(&e.key) == Some(r))
        })
        .collect();
    let results: Vec<std::result::Result<SnapshotPart, Failed>> =
        futures::stream::iter(selected.into_iter().map(|e| sealed_part(store, e)))
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
    let mut failed = Vec::new();
    let mut parts = Vec::new();
    for r in results {
        match r {
            Ok(p) => parts.push(p),
            Err(f) => failed.push(f),
        }
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    if opts.include_unsealed {
        let covered: HashSet<&str> = parts
            .iter()
            .map(|p| p.pointer_key.as_str())
            .chain(later.iter().map(String::as_str))
            .collect();
        let mut extra = unsealed(store, opts.run_id.as_deref(), &covered).await?;
        parts.append(&mut extra);
    }
    if let Some(t) = &target_crs {
        parts.retain(|p| &p.pointer.target_crs == t);
    }
    if opts.prefer_compacted && !compactions.is_empty() {
        parts = with_compacted(store, parts, &compactions).await?;
    }
    Ok(Snapshot {
        seal,
        parts,
        sealed_total,
    })
}

fn run_of(pointer_key: &str) -> Option<&str> {
    let rest = pointer_key.strip_prefix(keys::COMMITS_PREFIX)?;
    rest.strip_prefix("run_id=")?.split('/').next()
}

/// The chain of seals 1..=`as_of` (default: the newest), checked link by link; its entries
/// in leaf order; and the pointer keys sealed by the seals after it (never "unsealed").
type Chained = (
    Option<SnapshotSeal>,
    Vec<Entry>,
    Vec<String>,
    Vec<(SealRef, CompactionRef)>,
);

fn chain_up_to(seals: &[StoredSeal], as_of: Option<u64>) -> Result<Chained> {
    let newest = seals.last().map_or(0, |s| s.key_seq);
    let upto = as_of.unwrap_or(newest);
    if as_of == Some(0) || upto > newest {
        return Err(Error::Usage(format!(
            "--as-of-seal {upto}: the store's seals are 1..={newest}"
        )));
    }
    let mut tree = Frontier::new();
    let mut entries = Vec::new();
    let mut later = Vec::new();
    let mut head = None;
    let mut compactions = Vec::new();
    let mut prev: Option<&StoredSeal> = None;
    for (i, s) in seals.iter().enumerate() {
        let expect = i as u64 + 1;
        if s.key_seq > upto {
            // Only their entries matter (what "unsealed" excludes); a broken later seal
            // does not change what seals 1..=upto prove.
            if let Ok(seal) = &s.seal {
                later.extend(seal.entries.iter().map(|e| e.key.clone()));
            }
            continue;
        }
        let bad = |m: String| Error::Integrity(vec![Failed::new(s.key.clone(), m)]);
        if s.key_seq != expect {
            return Err(Error::Integrity(vec![Failed::new(
                keys::seal_key(expect),
                format!("is missing: the chain jumps to {}", s.key),
            )]));
        }
        let seal: &Seal = s.seal.as_ref().map_err(|m| bad(m.clone()))?;
        if seal.seq != s.key_seq {
            return Err(bad(format!("records seq {}", seal.seq)));
        }
        let prev_digest = prev.map(|p| p.digest.as_str());
        if seal.prev_sha256.as_deref() != prev_digest {
            return Err(bad(format!(
                "records previous seal {}, but the seal before it has sha256 {}",
                seal.prev_sha256.as_deref().unwrap_or("(none)"),
                prev_digest.unwrap_or("(none: it is the first)")
            )));
        }
        seal.check_signature(None)
            .map_err(|e| bad(format!("{e}")))?;
        let by = SealRef {
            seq: s.key_seq,
            sha256: s.digest.clone(),
        };
        for e in &seal.entries {
            let d = merkle::parse_hash(&e.sha256)
                .ok_or_else(|| bad(format!("entry {} has no valid sha256", e.key)))?;
            tree.push(merkle::leaf_hash(&d));
            entries.push(Entry {
                key: e.key.clone(),
                sha256: e.sha256.to_lowercase(),
                by: by.clone(),
            });
        }
        for c in seal.compactions.iter().flatten() {
            compactions.push((by.clone(), c.clone()));
        }
        let root = hex::encode(tree.root());
        if seal.tree_size != tree.size() || !seal.root.eq_ignore_ascii_case(&root) {
            return Err(bad(format!(
                "records tree size {} root {}, but its entries and those before give {} and {root}",
                seal.tree_size,
                seal.root,
                tree.size()
            )));
        }
        head = Some(SnapshotSeal {
            seq: s.key_seq,
            sha256: s.digest.clone(),
            tree_size: seal.tree_size,
            root: seal.root.clone(),
            sealed_utc: seal.sealed_utc.clone(),
        });
        prev = Some(s);
    }
    let mut seen = HashSet::new();
    if let Some(e) = entries.iter().find(|e| !seen.insert(e.key.as_str())) {
        return Err(Error::Integrity(vec![Failed::new(
            keys::seal_key(e.by.seq),
            format!("seals {} again", e.key),
        )]));
    }
    Ok((head, entries, later, compactions))
}

/// Replace the sources of every compaction in effect by its compacted part (see
/// [`ReadOptions::prefer_compacted`]), at the place of its first source. A record that is
/// missing or not as sealed, or whose sources are not the snapshot's sealed commits as
/// recorded, is an [`Error::Integrity`]; one whose sources the filters left out is skipped.
async fn with_compacted(
    store: &dyn AtomicPublisher,
    parts: Vec<SnapshotPart>,
    compactions: &[(SealRef, CompactionRef)],
) -> Result<Vec<SnapshotPart>> {
    let mut at: std::collections::HashMap<String, usize> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.sealed_by.is_some())
        .map(|(i, p)| (p.pointer_key.clone(), i))
        .collect();
    let mut slots: Vec<Option<SnapshotPart>> = parts.into_iter().map(Some).collect();
    let mut failed = Vec::new();
    for (by, r) in compactions {
        let Some(bytes) = crate::history::delta::read_record(store, &r.key).await? else {
            failed.push(Failed::new(
                r.key.clone(),
                format!("is missing (seal {} puts it into effect)", by.seq),
            ));
            continue;
        };
        let got = sha256_hex(&bytes);
        if !got.eq_ignore_ascii_case(&r.sha256) {
            failed.push(Failed::new(
                r.key.clone(),
                format!("has sha256 {got}, but seal {} records {}", by.seq, r.sha256),
            ));
            continue;
        }
        let rec = match CompactionRecord::from_bytes(&r.key, &bytes) {
            Ok(rec) => rec,
            Err(e) => {
                failed.push(Failed::new(r.key.clone(), e.to_string()));
                continue;
            }
        };
        let idx: Vec<Option<usize>> = rec
            .sources
            .iter()
            .map(|s| at.get(&s.pointer_key).copied())
            .collect();
        if idx.iter().all(Option::is_none) {
            continue; // not selected
        }
        let mut ok = idx.iter().all(Option::is_some);
        for (s, i) in rec.sources.iter().zip(&idx) {
            let Some(p) = i.and_then(|i| slots[i].as_ref()) else {
                ok = false;
                continue;
            };
            if p.pointer_sha256 != s.pointer_sha256.to_lowercase()
                || p.pointer.part_path != s.part_path
                || p.pointer.sha256 != s.sha256
                || p.pointer.size_bytes != s.size_bytes
            {
                ok = false;
            }
        }
        if !ok {
            failed.push(Failed::new(
                r.key.clone(),
                "its sources are not the sealed commits it names (or another compaction holds one); run `lineage verify`".to_string(),
            ));
            continue;
        }
        let first = idx.iter().flatten().copied().min().unwrap_or_default();
        for i in idx.into_iter().flatten() {
            slots[i] = None;
        }
        for s in &rec.sources {
            at.remove(&s.pointer_key);
        }
        slots[first] = Some(SnapshotPart {
            pointer_key: r.key.clone(),
            pointer_sha256: r.sha256.to_lowercase(),
            pointer: Pointer {
                format: crate::format::pointer::POINTER_FORMAT.to_string(),
                commit_id: rec.compaction_id.clone(),
                run_id: rec.run_id.clone(),
                target_crs: rec.target_crs.clone(),
                part_path: rec.part_path.clone(),
                row_count: rec.row_count,
                size_bytes: rec.size_bytes,
                schema_version: rec.schema_version.clone(),
                sha256: rec.sha256.clone(),
                blake3: Some(rec.blake3.clone()),
                committed_utc: rec.compacted_utc.clone(),
                first_sequence: rec.first_sequence,
                last_sequence: rec.last_sequence,
                min_event_time_utc: rec.min_event_time_utc.clone(),
                max_event_time_utc: rec.max_event_time_utc.clone(),
                tool_version: rec.tool_version.clone(),
                commit_key: None,
                adopted: false,
            },
            sealed_by: Some(by.clone()),
        });
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    Ok(slots.into_iter().flatten().collect())
}

/// A sealed pointer, read and checked against the digest sealed; `Err(Failed)` when it is
/// missing or changed (an `Err` of the outer result is a failure to read at all).
async fn sealed_part(
    store: &dyn AtomicPublisher,
    e: Entry,
) -> Result<std::result::Result<SnapshotPart, Failed>> {
    let seq = e.by.seq;
    let got = match crate::history::pointers::get_pointer(store, &e.key).await {
        Err(Error::Corrupt { message, .. }) => return Ok(Err(Failed::new(e.key, message))),
        got => got?,
    };
    let Some(bytes) = got else {
        return Ok(Err(Failed::new(
            e.key,
            format!("sealed by seal {seq}, is missing"),
        )));
    };
    let got = sha256_hex(&bytes);
    if got != e.sha256 {
        return Ok(Err(Failed::new(
            e.key,
            format!(
                "has sha256 {got}, but seal {seq} sealed {}: it changed after sealing",
                e.sha256
            ),
        )));
    }
    Ok(checked_pointer(&e.key, &bytes).map(|pointer| SnapshotPart {
        pointer_key: e.key,
        pointer_sha256: got,
        pointer,
        sealed_by: Some(e.by),
    }))
}

/// Parse a pointer and check it names the part its own key says.
fn checked_pointer(key: &str, bytes: &[u8]) -> std::result::Result<Pointer, Failed> {
    let KeyKind::Pointer { run_id, commit_id } = keys::classify(key) else {
        return Err(Failed::new(key, "is not a pointer key"));
    };
    check_pointer(key, bytes, &run_id, &commit_id).map_err(|e| Failed::new(key, e.to_string()))
}

/// The pointers no seal covers (`covered`: every sealed key), in commit order.
async fn unsealed(
    store: &dyn AtomicPublisher,
    run_id: Option<&str>,
    covered: &HashSet<&str>,
) -> Result<Vec<SnapshotPart>> {
    let prefix = match run_id {
        Some(r) => format!("{}run_id={r}/", keys::COMMITS_PREFIX),
        None => keys::COMMITS_PREFIX.to_string(),
    };
    let todo: Vec<String> = store
        .list(&prefix)
        .await?
        .into_iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. }))
        .filter(|o| !covered.contains(o.key.as_str()))
        .map(|o| o.key)
        .collect();
    let read: Vec<Option<std::result::Result<SnapshotPart, Failed>>> =
        futures::stream::iter(todo.into_iter().map(|key| async move {
            // Gone since the listing: not part of what is read.
            let got = match crate::history::pointers::get_pointer(store, &key).await {
                Err(Error::Corrupt { message, .. }) => {
                    return Ok::<_, Error>(Some(Err(Failed::new(key, message))))
                }
                got => got?,
            };
            let Some(bytes) = got else {
                return Ok::<_, Error>(None);
            };
            Ok(Some(checked_pointer(&key, &bytes).map(|pointer| {
                SnapshotPart {
                    pointer_sha256: sha256_hex(&bytes),
                    pointer_key: key,
                    pointer,
                    sealed_by: None,
                }
            })))
        }))
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for r in read.into_iter().flatten() {
        match r {
            Ok(p) => out.push(p),
            Err(f) => failed.push(f),
        }
    }
    if !failed.is_empty() {
        return Err(Error::Integrity(failed));
    }
    out.sort_by(|a, b| commit_order(&a.pointer, &b.pointer));
    Ok(out)
}

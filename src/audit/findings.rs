//! What every audit reports: problems, each naming its object, objects in flight, and the
//! report of a verification with its verdict in words. `verify` (full, `--since-seal`,
//! shards and their merge), `replicate`, `witness` and `export` speak this vocabulary.

use std::sync::atomic::AtomicU64;

use serde::{Deserialize, Serialize};

use crate::base::param::Text;

/// What kind of problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
    /// A seal dated before the seal it follows (`sealed_utc`): the history goes backwards,
    /// and so do the Delta log's commit timestamps, which time travel by timestamp reads.
    SealOutOfOrder,
    /// A signature is missing (with a public key given), wrong, or by another key.
    BadSignature,
    /// No seal has the expected head digest.
    HeadNotFound,
    /// The store disagrees with what a witness recorded (`--witness`): a witnessed seal
    /// cut off or rewritten, a record deleted or edited, another store at a witnessed
    /// location. The detail names the witness's own problem kind.
    WitnessDisagrees,
    /// A well-formed part no pointer names, too old for its pointer still to come: written
    /// by a writer that died before its pointer, or planted (nothing in the store tells
    /// which); `repair` adopts it, marked adopted, only for whoever knows which it is.
    OrphanPart,
    /// A file under a part's name that is not a well-formed part of this store (unreadable,
    /// footer commit id or schema version wrong, partition values not its path's, or not
    /// what its commit-key claim recorded): reported at once, whatever its age.
    MalformedPart,
    /// A file under a data part's name (`run_id=<r>/target_crs=<c>/part-<commit>.parquet`)
    /// that no pointer, compaction record or in-flight commit names: under a commit whose
    /// pointer names another key, under a `target_crs` directory lineage-store never
    /// writes, or beside another part of the same commit. Dataset readers (globs, Hive
    /// discovery) read its rows beside the real ones.
    PlantedPart,
    /// An object lineage-store did not write.
    ForeignObject,
    /// A symlink inside a local store (to a file or a directory; named with its target).
    /// No command follows one, so what it points to is not part of the store; readers
    /// such as pyarrow or DuckDB would follow it and see other rows.
    Symlink,
    /// An object under `_lineage/` that is none of the kinds lineage-store writes there
    /// (a copy of a part, notes, a file in a pointer's directory that is not a pointer):
    /// readers skip `_lineage/`, so nothing else would ever show it.
    UnknownLineageObject,
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
    /// A C2SP checkpoint (`_lineage/tlog/checkpoints/<seq>`, or the one a seal carries)
    /// that is not its seal's, does not verify, or is missing.
    BadCheckpoint,
    /// A checkpoint cosigned by a C2SP witness (`_lineage/tlog/cosignatures/`) that is not
    /// its seal's or holds no cosignature; with `--witness-key`, one of the newest seal
    /// that is missing or does not verify under the witness's key.
    BadCosignature,
    /// An RFC 3161 request or response under `_lineage/timestamps/` (with `--tsa-root`)
    /// that does not check: not the seal's digest, another nonce than requested, not
    /// granted, a signature or certificate chain that does not verify to the root, or an
    /// object of a seal that does not exist.
    BadTimestamp,
    /// A seal whose time cannot be backed (with `--tsa-root`): its time was requested but
    /// no response is stored, a seal after the first timestamped one has none, its
    /// `sealed_utc` is later than the TSA's time by more than the tolerance, or the TSA's
    /// time is after that of the next seal.
    SealTimeUnbacked,
    /// The store's identity object (`_lineage/store.json`) cannot be parsed.
    BadIdentity,
    /// A Delta version (`_delta_log/<N>.json`) that is not what seal N gives: an `add`
    /// changed, missing or added, other provenance, protocol or metadata; or a version no
    /// seal has.
    BadDeltaVersion,
    /// A seal without its Delta version (or the table's version 0 missing): Delta readers
    /// stop at the version before the gap. `lineage seal` writes it.
    MissingDeltaVersion,
    /// A Delta checkpoint (`_delta_log/<N>.checkpoint.parquet`) that does not hold exactly
    /// the replay of versions 0..=N (rows planted or hidden, unreadable, or a version it
    /// covers missing): Delta readers that find it read it instead of those versions.
    BadDeltaCheckpoint,
    /// An object under `_delta_log/` that lineage-store does not write (`_last_checkpoint`,
    /// a multi-part or V2 checkpoint, a planted file).
    UnknownDeltaObject,
    /// A compaction record a seal names that is missing, not the bytes the seal records,
    /// unreadable or inconsistent, or whose sources are not sealed commits (sealed before
    /// that seal, with the pointer and part digests the record names).
    BadCompactionRecord,
    /// A compacted part that is missing, or not the size and digests its record names.
    BadCompactedPart,
    /// A compacted part whose rows are not exactly the multiset union of its sources'
    /// rows (count or order-independent digest), or not what its record says.
    CompactionRowsDiffer,
    /// A commit that two compactions in effect both hold (its rows would be read twice).
    CompactedTwice,
    /// A compaction record or compacted part no seal puts into effect, past the grace
    /// period: a compactor that lost a race or was stopped, or a planted object. Readers
    /// never see it.
    OrphanCompaction,
    /// The table's newest Delta version (adds minus removes, replayed) does not hold
    /// exactly the rows of the sealed commits.
    DeltaRowsDiffer,
    /// A part whose footer carries a writer signature (`append --signing-key`) that does
    /// not hold: incomplete or malformed entries, a signature that does not verify over
    /// the footer's store id, commit id, row count and body digest, or (for an adopted
    /// part, whose pointer was written from the part itself) signed bytes that no longer
    /// hash to the digest signed.
    BadWriterSignature,
    /// A commit `repair` adopted (its pointer written from an orphan part's own footer:
    /// nothing its writer wrote vouches for it) that the auditor's anchor does not cover:
    /// sealed after the seal of the expected head, or (without one) at all. Accepted, not
    /// a problem, with `--accept-adopted`.
    AdoptedCommit,
    /// An Iceberg object (`_iceberg/metadata/`: a metadata file, manifest list or
    /// manifest) that is not what the seals give (a manifest adding a file no seal adds
    /// or dropping a sealed one, a changed count, other snapshots), or the metadata file
    /// of a seal the chain lacks.
    BadIcebergObject,
    /// An Iceberg object of a seal at or before the newest metadata file that is missing.
    MissingIcebergObject,
    /// An object under `_iceberg/` that lineage-store does not write (`version-hint.text`,
    /// a planted file).
    UnknownIcebergObject,
    /// Iceberg metadata that records another table location than the store's own (Iceberg
    /// paths are absolute): its manifests name the parts at that location, not this
    /// location's sealed parts (a replica or copy holding its source's metadata).
    IcebergLocationMismatch,
}

/// A seal's time as a TSA backs it (RFC 3161).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealTime {
    /// The seal.
    pub seq: u64,
    /// When the seal says it was made (the sealer's clock).
    pub sealed_utc: String,
    /// When the TSA says the seal existed (`genTime`, RFC 3339); `None` when no response
    /// is stored or it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsa_utc: Option<String>,
    /// The TSA certificate's subject, when the token checked against `--tsa-root`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsa: Option<String>,
    /// Whether the token checked against `--tsa-root` (imprint, nonce, signature, chain,
    /// time order).
    pub checked: bool,
}

/// One problem, naming the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// The object it is about.
    pub key: String,
    /// Details for a person (naming parameters as [`crate::Param`]s: each front end
    /// words them).
    pub detail: Text,
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

impl ProblemKind {
    /// The snake_case name `verify` prints (and `--json` writes) for this kind.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{self:?}"))
    }
}

impl Problem {
    /// A problem of `kind` naming the object `key`.
    pub fn new(kind: ProblemKind, key: &str, detail: impl Into<Text>) -> Self {
        Problem {
            kind,
            key: key.to_string(),
            detail: detail.into(),
        }
    }
}

/// What an in-flight object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InFlightKind {
    /// A temp of a POSIX publish.
    Temp,
    /// A well-formed part whose pointer may still come.
    Part,
    /// A part whose pointer appeared after the listing (committed during the scan).
    CommittedDuringScan,
    /// A compaction record or compacted part whose seal may still come.
    Compaction,
}

/// One object counted as in flight rather than judged, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct InFlight {
    /// The object.
    pub key: String,
    /// What it is.
    pub kind: InFlightKind,
    /// When its content says it was made (RFC 3339).
    pub since: String,
    /// Details for a person (naming parameters as [`crate::Param`]s: each front end
    /// words them).
    pub detail: Text,
}

/// What `verify --trust-expected-head` took on proof instead of reading: the commits the
/// expected head's seal covers, shown by an RFC 9162 consistency proof from the hash tiles
/// to be the first leaves of the newest seal's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedHead {
    /// The seal with the expected head digest.
    pub seq: u64,
    /// Commits its tree holds: not read again.
    pub tree_size: u64,
    /// The newest seal.
    pub newest_seq: u64,
    /// Commits the newest seal's tree holds.
    pub newest_tree_size: u64,
    /// Hashes in the consistency proof.
    pub proof_hashes: u64,
    /// Whether the proof leads from the one seal's root to the other's (a `bad_tile`
    /// problem says why not).
    pub consistent: bool,
}

/// What a shard report records about its shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// This shard.
    pub index: u32,
    /// How many shards.
    pub count: u32,
    /// The plan's fingerprint.
    pub plan: String,
    /// The seal the plan was computed from.
    pub plan_seal: Option<u64>,
}

/// What a merged report records about the shards it was merged from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merged {
    /// How many shard reports.
    pub shards: u32,
    /// Their plan's fingerprint.
    pub plan: String,
}

/// A commit `repair` adopted, as `verify` found it (see [`ProblemKind::AdoptedCommit`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdoptedCommit {
    /// Its pointer's key.
    pub key: String,
    /// Its commit id.
    pub commit_id: String,
    /// Its part.
    pub part_path: String,
    /// The seal that sealed it (`None`: not sealed yet).
    pub sealed_by: Option<u64>,
    /// Sealed by the seal of the expected head (`--expect-head`) or an earlier one: the
    /// auditor's anchor covers it.
    pub anchored: bool,
    /// Not anchored, and accepted by the auditor (`--accept-adopted`): not a problem.
    pub accepted: bool,
}

/// The verdict in a few words, from the problems found, the objects in flight and the
/// adopted commits accepted: "clean: no problems", "clean except N objects in flight", or
/// "N problems" (with the in-flight count when there are any), then "; N adopted commits
/// accepted" when any were. [`Report::summary`] and the audit report's verdict say it.
pub(crate) fn verdict_headline(problems: u64, in_flight: u64, accepted_adopted: u64) -> String {
    let accepted = match accepted_adopted {
        0 => String::new(),
        1 => "; 1 adopted commit accepted (--accept-adopted)".to_string(),
        n => format!("; {n} adopted commits accepted (--accept-adopted)"),
    };
    format!("{}{accepted}", headline(problems, in_flight))
}

/// The verdict from the problems and the objects in flight alone.
fn headline(problems: u64, in_flight: u64) -> String {
    let flying = match in_flight {
        0 => String::new(),
        1 => "1 object in flight".to_string(),
        n => format!("{n} objects in flight"),
    };
    match (problems, flying.is_empty()) {
        (0, true) => "clean: no problems".to_string(),
        (0, false) => format!("clean except {flying}"),
        (1, true) => "1 problem".to_string(),
        (n, true) => format!("{n} problems"),
        (1, false) => format!("1 problem; {flying}"),
        (n, false) => format!("{n} problems; {flying}"),
    }
}

/// How much of the data area a `--since-seal` verify read ([`Report::data_area`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataAreaRead {
    /// The time (the file system's clock) before which a directory unchanged since, under
    /// a parent unchanged since, with no subdirectory, was not read: seal SEQ's clock (or
    /// now, if earlier) less the grace. `None`: every directory was read (seal SEQ
    /// recorded no clock: an object store, a first seal, an older seal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchanged_before_utc: Option<String>,
    /// The directories not read.
    pub unchanged_dirs: u64,
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
    /// Compacted parts in effect whose sha256 matched their record and whose rows are
    /// exactly their sources' (a full verify; not in `parts_ok`).
    #[serde(default)]
    pub compacted_parts_ok: u64,
    /// Seed of `--sample`, when sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_seed: Option<u64>,
    /// Rows recorded by the pointers that checked out.
    pub rows: u64,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// Seals in the chain.
    pub seals: u64,
    /// Seals with a valid signature (with [`Report::since_seal`]: of the seals from
    /// `since_seal` on, the only ones read).
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
    /// Commits `repair` adopted among those read (`adopted_commits.len()`).
    #[serde(default)]
    pub adopted: u64,
    /// Every adopted commit read, sorted by key: whether the expected head covers it, or
    /// the auditor accepted it (`--accept-adopted`); any other is an `adopted_commit`
    /// problem.
    #[serde(default)]
    pub adopted_commits: Vec<AdoptedCommit>,
    /// The seal that has the expected head digest (`--expect-head`), when one was given
    /// and found: adopted commits sealed by it or earlier are covered by that anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_head_seq: Option<u64>,
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
    /// The seals whose time was requested from a TSA (RFC 3161), by sequence number (a
    /// full verify).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seal_times: Vec<SealTime>,
    /// Whether the tokens in [`Report::seal_times`] were checked (`--tsa-root` given);
    /// without it they are listed, unchecked.
    #[serde(default)]
    pub seal_times_checked: bool,
    /// The newest Delta version such that versions 0..=it are all there (a full verify):
    /// what Delta readers see as the table's newest version. Behind `head_seq` when seals
    /// were made since by a lineage-store that wrote no Delta versions, or while a sealer
    /// is finishing (`lineage seal` writes the rest); absent when the store has no Delta
    /// log (sealed only before Delta versions existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_version: Option<u64>,
    /// What was checked by `--since-seal`: the seal it started from (older commits were
    /// not looked at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_seal: Option<u64>,
    /// With `--since-seal`: how much of the data area was read to name what nothing names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_area: Option<DataAreaRead>,
    /// With `--trust-expected-head`: what was taken on the consistency proof (the commits
    /// the expected head covers were not read; the checks from [`Report::since_seal`] on
    /// were made by reading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_head: Option<TrustedHead>,
    /// The shard this report covers (`--shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// The shard reports this one was merged from (`verify merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<Merged>,
    /// Each anchor given (head digest, keys, witness) and what became of it; empty when
    /// none was given: the verdict is then only that the store is internally consistent
    /// ([`crate::audit::anchor_outcome::UNANCHORED`]).
    #[serde(default)]
    pub anchors: Vec<crate::audit::anchor_outcome::AnchorOutcome>,
    /// True when at least one anchor was given ([`Report::settle`] sets it).
    #[serde(default)]
    pub anchored: bool,
    /// What the verdict rests on, in words: each anchor's outcome, or
    /// [`crate::audit::anchor_outcome::UNANCHORED`] ([`Report::settle`] sets it).
    #[serde(default)]
    pub anchoring: String,
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
        verdict_headline(
            self.problems.len() as u64,
            self.in_flight,
            self.accepted_adopted(),
        )
    }

    /// Adopted commits the auditor accepted (`--accept-adopted`).
    pub fn accepted_adopted(&self) -> u64 {
        self.adopted_commits.iter().filter(|a| a.accepted).count() as u64
    }

    /// True when at least one anchor was given (a clean verdict then means more than
    /// "internally consistent").
    pub fn anchored(&self) -> bool {
        !self.anchors.is_empty()
    }

    /// Set the fields said from the others ([`Report::summary`], `anchored`, `anchoring`):
    /// after the last problem or anchor outcome is added.
    pub fn settle(&mut self) {
        self.summary = self.summary();
        self.anchored = self.anchored();
        self.anchoring = self.anchor_lines().join("; ");
    }

    /// What the verdict is worth: each anchor's outcome in words, or
    /// [`crate::audit::anchor_outcome::UNANCHORED`] when none was given.
    pub fn anchor_lines(&self) -> Vec<String> {
        crate::audit::anchor_outcome::outcome_lines(&self.anchors)
    }

    pub(crate) fn fly(&mut self, f: InFlight) {
        self.in_flight += 1;
        self.in_flight_objects.push(f);
    }

    /// Record a problem.
    pub fn push_problem(&mut self, p: Problem) {
        self.problems.push(p);
    }

    pub(crate) fn push(
        &mut self,
        kind: ProblemKind,
        key: impl Into<String>,
        detail: impl Into<Text>,
    ) {
        self.problems.push(Problem {
            kind,
            key: key.into(),
            detail: detail.into(),
        });
    }
}

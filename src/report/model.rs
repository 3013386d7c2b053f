//! The report's data model: [`AuditReport`] and its parts. Its serde JSON is the report's
//! JSON format (docs/report.schema.json); the HTML and Markdown render the same data. The
//! caps below bound every list it holds (the rest are counted).

use serde::{Deserialize, Serialize};

/// The `format` of every report's JSON.
pub const REPORT_FORMAT: &str = "lineage-report/1";

/// Runs given a section of their own; the others are counted together.
pub const MAX_RUNS: usize = 25;
/// Values listed per breakdown (rejection reasons, CRSs, tools); the others are counted.
pub const MAX_VALUES: usize = 20;
/// Problems named per kind; the others are counted.
pub const MAX_PROBLEMS_PER_KIND: usize = 50;
/// Points of the seal timeline; with more seals, consecutive seals share a point.
pub const MAX_TIMELINE_POINTS: usize = 200;

/// One audit report: what the HTML, Markdown and JSON formats say.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditReport {
    /// Always [`REPORT_FORMAT`].
    pub format: String,
    /// When the report was made (RFC 3339, UTC).
    pub generated_utc: String,
    /// The lineage-store that made it.
    pub tool_version: String,
    /// The store, as the report names it.
    pub store: String,
    /// The verdict, with every problem by kind.
    pub verdict: Verdict,
    /// What was checked against what.
    pub checked: Checked,
    /// The store's identity, size and age.
    pub identity: Identity,
    /// The seal chain over time.
    pub timeline: Timeline,
    /// What the runs' rows say.
    pub runs: Runs,
    /// How to check all this without the report.
    pub independent: Vec<Recipe>,
}

/// The verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// No problem found (objects in flight are not problems).
    pub clean: bool,
    /// In words: "clean: no problems", "clean except 2 objects in flight", "3 problems".
    pub headline: String,
    /// Problems found (verification and witness).
    pub problems: u64,
    /// Objects in flight.
    pub in_flight: u64,
    /// The problems, by kind.
    pub groups: Vec<ProblemGroup>,
    /// Objects in flight, named (at most [`MAX_PROBLEMS_PER_KIND`]).
    pub in_flight_objects: Vec<Named>,
    /// In-flight objects not named.
    pub in_flight_omitted: u64,
    /// True when at least one anchor (head digest, keys, witness) was given: only then is
    /// a clean verdict more than "internally consistent".
    #[serde(default)]
    pub anchored: bool,
    /// Each anchor given and what became of it.
    #[serde(default)]
    pub anchors: Vec<crate::audit::anchor_outcome::AnchorOutcome>,
    /// What the verdict rests on, in words: each anchor's outcome, or "internally
    /// consistent; no head, key or witness given: a rewrite or a cut-off would not show".
    #[serde(default)]
    pub anchoring: String,
    /// Commits `repair` adopted (each pointer written from an orphan part's own footer:
    /// nothing its writer wrote vouches for it).
    #[serde(default)]
    pub adopted_commits: u64,
    /// Of those, accepted by the auditor (`--accept-adopted`): not problems.
    #[serde(default)]
    pub adopted_accepted: u64,
    /// The adopted commits (at most [`MAX_PROBLEMS_PER_KIND`]), each with whether the
    /// expected head covers it or the auditor accepted it; any other is an
    /// `adopted_commit` problem.
    #[serde(default)]
    pub adopted: Vec<crate::audit::findings::AdoptedCommit>,
}

/// The problems of one kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProblemGroup {
    /// The kind (`digest_mismatch`, `sealed_pointer_missing`, ... as `verify --json`).
    pub kind: String,
    /// Which check found them: `verify` or `witness`.
    pub check: String,
    /// How many.
    pub count: u64,
    /// The first of them (at most [`MAX_PROBLEMS_PER_KIND`]).
    pub items: Vec<Named>,
    /// How many are not named.
    pub omitted: u64,
}

/// An object and what was found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Named {
    /// The object's key.
    pub key: String,
    /// What is wrong with it, or why it is in flight.
    pub detail: String,
}

/// What was checked against what.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checked {
    /// The newest seal and the head digest it was compared with.
    pub head: HeadCheck,
    /// Every key the seals were signed with, given or not.
    pub keys: Vec<KeyCheck>,
    /// Seals carrying a valid signature.
    pub signed_seals: u64,
    /// Seals in the chain.
    pub seals: u64,
    /// Whether seals had to be signed (a public key was given), and from which seal on.
    pub signatures_required_from: Option<u64>,
    /// The witness check, when one was asked for.
    pub witness: Option<WitnessCheck>,
    /// Each witness key given (`--witness-key`) and whether it cosigned the newest seal's
    /// checkpoint (the quorum's outcome is among the verdict's anchors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witness_keys: Option<Vec<crate::audit::cosigners::KeyFound>>,
    /// Parts whose digests were recomputed, and how.
    pub parts_hashed: u64,
    /// Of those, recomputed by sha256.
    pub parts_sha256: u64,
    /// Of those, recomputed by BLAKE3.
    pub parts_blake3: u64,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// The seal the counts are as of (`None`: the newest).
    pub as_of_seal: Option<u64>,
    /// Whether the counts include commits not sealed yet.
    pub counts_include_unsealed: bool,
}

/// The head digest check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeadCheck {
    /// The newest seal's sequence number.
    pub seq: Option<u64>,
    /// Its digest.
    pub sha256: Option<String>,
    /// When it says it was made.
    pub sealed_utc: Option<String>,
    /// When a TSA says it existed (RFC 3161 `genTime`), when its time was requested and
    /// answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsa_utc: Option<String>,
    /// Whether that token checked against `--tsa-root` (`false`: not given, or it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsa_checked: Option<bool>,
    /// The head digest given to compare with (`--expect-head`).
    pub expected: Option<String>,
    /// Where the digest compared with came from, in words.
    pub source: String,
    /// Some seal has the expected digest (`None`: none was given).
    pub found: Option<bool>,
}

/// One signing key and the seals it signed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyCheck {
    /// Its id (the first 16 hex digits of the sha256 of the public key).
    pub key_id: String,
    /// Where it came from (a file given), or `None`: named only by the seals themselves.
    pub source: Option<String>,
    /// How many seals it signed.
    pub seals_signed: u64,
    /// Those seals, as ranges ("1-4, 7").
    pub seal_ranges: String,
}

/// The witness check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WitnessCheck {
    /// The witness store.
    pub witness: String,
    /// Its records of this store.
    pub records: u64,
    /// The newest witnessed seal.
    pub newest_seq: Option<u64>,
    /// When it was witnessed.
    pub newest_utc: Option<String>,
    /// Seals newer than it (not witnessed yet: not a problem).
    pub unwitnessed_seals: u64,
    /// Problems it found (also in the verdict).
    pub problems: u64,
}

/// The store's identity, size and age.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Identity {
    /// The store id: the sha256 of its seal 1 (what a witness records it by; `None`
    /// without a seal 1).
    pub store_id: Option<String>,
    /// The id in the store's identity object (`_lineage/store.json`, named by its parts'
    /// footers; not sealed).
    #[serde(default)]
    pub identity_object: Option<String>,
    /// Commits (pointers read by the verification).
    pub commits: u64,
    /// Of those, sealed.
    pub sealed_commits: u64,
    /// Of those, not sealed yet.
    pub unsealed_commits: u64,
    /// Rows the checked pointers record.
    pub rows: u64,
    /// Bytes of the parts read (`None` when the counts were withheld).
    pub bytes: Option<u64>,
    /// Runs (`None` when the counts were withheld).
    pub runs: Option<u64>,
    /// Partitions, run × target CRS (`None` when the counts were withheld).
    pub partitions: Option<u64>,
    /// Seals.
    pub seals: u64,
    /// The Delta table's newest complete version.
    pub delta_version: Option<u64>,
    /// The newest Iceberg metadata file of a seal at or before the one reported
    /// (`seal --iceberg`): its absolute location, what a reader or a catalog's
    /// `metadata_location` is given (`None`: no such file, or not this location's).
    #[serde(default)]
    pub iceberg_metadata_location: Option<String>,
    /// The seal that metadata file is the table as of.
    #[serde(default)]
    pub iceberg_seal: Option<u64>,
    /// The first commit's time.
    pub first_commit_utc: Option<String>,
    /// The newest commit's time.
    pub last_commit_utc: Option<String>,
    /// The first seal's time.
    pub first_seal_utc: Option<String>,
    /// Days from the first commit (or seal) to the report.
    pub age_days: Option<f64>,
}

/// The seal chain over time: one point per seal, or per group of consecutive seals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timeline {
    /// Seals.
    pub seals: u64,
    /// Seals with a signature.
    pub signed: u64,
    /// Seals a witness recorded (`None`: no witness given).
    pub witnessed: Option<u64>,
    /// Whether points group several seals.
    pub grouped: bool,
    /// The points, oldest first.
    pub points: Vec<TimelinePoint>,
}

/// One seal, or consecutive seals, on the timeline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// First seal.
    pub first_seq: u64,
    /// Last seal.
    pub last_seq: u64,
    /// When the last one was made.
    pub sealed_utc: String,
    /// When a TSA says the last one existed (RFC 3161), when its time was backed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsa_utc: Option<String>,
    /// Commits they added.
    pub commits: u64,
    /// Of them, seals with a signature.
    pub signed: u64,
    /// Of them, seals a witness recorded.
    pub witnessed: u64,
}

/// What the runs' rows say.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Runs {
    /// Runs the counts cover.
    pub total: u64,
    /// Runs with a section.
    pub shown: u64,
    /// Runs without one, counted together.
    pub omitted: Omitted,
    /// Parts counted.
    pub parts_counted: u64,
    /// Parts not counted: they failed their check (each also a problem).
    pub parts_not_counted: Vec<Named>,
    /// Why nothing was counted, when the trusted read refused the store.
    pub withheld: Option<String>,
    /// Runs asked for (`--run-id`) that have no commit.
    pub not_found: Vec<String>,
    /// The sections.
    pub items: Vec<RunSection>,
}

/// Runs without a section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Omitted {
    /// How many.
    pub runs: u64,
    /// Their commits.
    pub commits: u64,
    /// Their events.
    pub events: u64,
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSection {
    /// Its `run_id`.
    pub run_id: String,
    /// Commits.
    pub commits: u64,
    /// Of those, not sealed yet.
    pub unsealed_commits: u64,
    /// Events.
    pub events: u64,
    /// Of those, events of commits not sealed yet (counted in every table of the run, and
    /// said so there).
    #[serde(default)]
    pub unsealed_events: u64,
    /// Bytes of its parts.
    pub bytes: u64,
    /// First commit's time.
    pub first_commit_utc: String,
    /// Last commit's time.
    pub last_commit_utc: String,
    /// Earliest event time.
    pub first_event_utc: Option<String>,
    /// Latest event time.
    pub last_event_utc: Option<String>,
    /// Its newest sealed commit, for `lineage prove` (empty: none of its commits is sealed
    /// yet, and none can be proved).
    pub sample_commit_id: String,
    /// The outcomes, the stage × outcome table's columns.
    pub outcomes: Vec<String>,
    /// The stage × outcome table's rows.
    pub stages: Vec<StageRow>,
    /// Rejected events by reason.
    pub rejection_reasons: Breakdown,
    /// Events by target CRS.
    pub target_crs: Breakdown,
    /// Events by source CRS.
    pub source_crs: Breakdown,
    /// Events by tool version.
    pub tools: Breakdown,
    /// `accuracy_m` histograms, one per target CRS.
    pub accuracy: Vec<Histogram>,
}

/// One row of a stage × outcome table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageRow {
    /// The stage.
    pub stage: String,
    /// Events per outcome, in the order of [`RunSection::outcomes`].
    pub counts: Vec<u64>,
    /// All its events.
    pub total: u64,
}

/// Counts per value, largest first, capped at [`MAX_VALUES`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Breakdown {
    /// Events in all.
    pub total: u64,
    /// The values listed.
    pub items: Vec<ValueCount>,
    /// Values not listed.
    pub other_values: u64,
    /// Their events.
    pub other_count: u64,
}

/// One value and its events.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValueCount {
    /// The value.
    pub value: String,
    /// Events.
    pub count: u64,
}

/// An `accuracy_m` histogram of one target CRS.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Histogram {
    /// The target CRS.
    pub target_crs: String,
    /// Events with a value.
    pub with_value: u64,
    /// Events without one.
    pub without_value: u64,
    /// Smallest value.
    pub min: Option<f64>,
    /// Largest value.
    pub max: Option<f64>,
    /// The bins, one decade each.
    pub bins: Vec<Bin>,
}

/// One bin: `lo <= accuracy_m < hi` metres.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bin {
    /// In words, e.g. "0.1–1 m".
    pub label: String,
    /// Lower bound (`None`: open).
    pub lo: Option<f64>,
    /// Upper bound, exclusive (`None`: open).
    pub hi: Option<f64>,
    /// Events.
    pub count: u64,
}

/// A way to check something without the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recipe {
    /// What it checks.
    pub what: String,
    /// The tool (`lineage`, `duckdb`, `python`).
    pub tool: String,
    /// The exact command or query.
    pub command: String,
    /// What it does not check, when it checks less than `lineage verify` (a Delta reader
    /// checks no digest and no seal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
}

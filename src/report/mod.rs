//! `lineage report`: one audit report of a store, as a self-contained HTML page, Markdown
//! or JSON ([`render()`]), from one data model ([`AuditReport`], whose JSON is the JSON
//! format; its schema is docs/report.schema.json).
//!
//! [`collect`] runs the same checks as `verify` (with the trust anchors given: an expected
//! head digest, public keys, a witness), then counts what the rows say in one streamed pass
//! over the trusted read path ([`crate::read`]): the snapshot as of a seal, each part
//! fetched once, checked against its pointer and decoded only in the columns counted
//! ([`count`]), folded into per-run counts, then dropped. A part that fails its check is
//! not counted and is named; a snapshot the trusted read refuses (a sealed pointer missing
//! or changed, a broken chain) withholds the counts, and says why. The problems themselves
//! come from the verification and head the report.
//!
//! Bounded size: at most [`MAX_RUNS`] runs get a section (the rest are counted together),
//! each list of values holds at most [`MAX_VALUES`] (the rest counted), each problem kind
//! at most [`MAX_PROBLEMS_PER_KIND`] named, and the seal timeline at most
//! [`MAX_TIMELINE_POINTS`] points (consecutive seals grouped when there are more).
//!
//! Above the applications (it reads through `witness` and `verify`), below `cli`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::audit::report::{ProblemKind, Report};
use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::verify_with;
use crate::base::digest::Check as DigestCheck;
use crate::base::error::{Error, Failed, Result};
use crate::history::identity::read_identity;
use crate::history::seal::read_seals;
use crate::history::signing::{key_id, parse_public_key};
use crate::publish::AtomicPublisher;
use crate::read::scan::fetch_checked;
use crate::read::snapshot::{ReadOptions, SnapshotPart};

mod chart;
pub(crate) mod count;
pub mod render;

use count::{RowCounts, ACCURACY_BINS, ACCURACY_EDGES};

pub use render::{render, ReportFormat};

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

/// Parts fetched and counted at once (each held whole while checked and decoded).
const COUNT_CONCURRENCY: usize = 4;

/// What to report on, and against what.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// The verification's options: its trust anchors (`expect_head`, `public_keys`,
    /// `signed_from`) and how it checks.
    pub verify: VerifyOptions,
    /// Where each of `verify.public_keys` came from (a file name), in the same order.
    pub key_sources: Vec<String>,
    /// A witness store to check the seal chain against, and its name for the report.
    pub witness: Option<(Arc<dyn AtomicPublisher>, String)>,
    /// Only these runs get sections (default: every run, up to [`MAX_RUNS`]).
    pub run_ids: Vec<String>,
    /// Count the commits sealed by seals 1..=N (default: the newest seal, and the commits
    /// not sealed yet).
    pub as_of_seal: Option<u64>,
    /// The store URL as given (for the commands in "how to check independently").
    pub store_url: String,
}

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
    /// The store's identity (`_lineage/store.json`).
    pub store_id: Option<String>,
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
    /// A commit of it (its newest), for `lineage prove`.
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
}

/// Verify a store and count what its rows say: the report's data.
pub async fn collect(store: &dyn AtomicPublisher, opts: &ReportOptions) -> Result<AuditReport> {
    for r in &opts.run_ids {
        crate::format::keys::check_run_id(r)?;
    }
    let verified = verify_with(store, &opts.verify).await?;
    let stored_seals = read_seals(store).await?;
    let witness = match &opts.witness {
        None => None,
        Some((w, name)) => {
            let chain = crate::audit::chain::walk(store, None).await?;
            let mut r = crate::witness::check(&chain, &store.describe(), w.as_ref()).await?;
            r.witness = name.clone();
            let seqs = match &r.store_id {
                Some(id) => witnessed_seqs(w.as_ref(), id).await?,
                None => BTreeSet::new(),
            };
            Some((r, seqs))
        }
    };
    let counted = count_runs(store, opts).await?;
    let now = opts.verify.now;

    // The seals: who signed which, when, and which a witness recorded.
    let mut by_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut seal_rows = Vec::new();
    let bad_sig: BTreeSet<&str> = verified
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::BadSignature)
        .map(|p| p.key.as_str())
        .collect();
    for s in &stored_seals {
        let Ok(seal) = &s.seal else { continue };
        let signer = seal
            .signature
            .as_ref()
            .and(seal.public_key.as_deref())
            .and_then(|k| parse_public_key(k).ok())
            .map(|k| key_id(&k))
            .filter(|_| !bad_sig.contains(s.key.as_str()));
        if let Some(id) = &signer {
            by_key.entry(id.clone()).or_default().push(s.key_seq);
        }
        let witnessed = witness
            .as_ref()
            .is_some_and(|(_, seqs)| seqs.contains(&s.key_seq));
        seal_rows.push((
            s.key_seq,
            seal.sealed_utc.clone(),
            seal.entries.len() as u64,
            signer.is_some(),
            witnessed,
        ));
    }
    let mut keys = Vec::new();
    let given: Vec<String> = opts.verify.public_keys.iter().map(key_id).collect();
    for (i, id) in given.iter().enumerate() {
        let seqs = by_key.remove(id).unwrap_or_default();
        keys.push(KeyCheck {
            key_id: id.clone(),
            source: Some(
                opts.key_sources
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("public key {}", i + 1)),
            ),
            seals_signed: seqs.len() as u64,
            seal_ranges: ranges(&seqs),
        });
    }
    for (id, seqs) in by_key {
        keys.push(KeyCheck {
            key_id: id,
            source: None,
            seals_signed: seqs.len() as u64,
            seal_ranges: ranges(&seqs),
        });
    }
    let timeline = timeline(&seal_rows, witness.is_some());

    let verdict = verdict(&verified, witness.as_ref().map(|(w, _)| w));
    let head = HeadCheck {
        seq: verified.head_seq,
        sha256: verified.head.clone(),
        sealed_utc: verified.head_sealed_utc.clone(),
        expected: opts.verify.expect_head.clone(),
        source: match &opts.verify.expect_head {
            Some(_) => "given with --expect-head (kept outside the store): some seal must have it, so a cut-off of the newest seals shows".into(),
            None if witness.is_some() => "not given; the witness's records stand for it (see the witness check)".into(),
            None => "not given: the newest seal is the store's own, so a cut-off of the newest seals would not show (give --expect-head or --witness)".into(),
        },
        found: opts.verify.expect_head.as_ref().map(|_| {
            !verified
                .problems
                .iter()
                .any(|p| p.kind == ProblemKind::HeadNotFound)
        }),
    };
    let checked = Checked {
        head,
        keys,
        signed_seals: verified.signed_seals,
        seals: verified.seals,
        signatures_required_from: (!opts.verify.public_keys.is_empty())
            .then(|| opts.verify.signed_from.unwrap_or(1)),
        witness: witness.as_ref().map(|(w, _)| WitnessCheck {
            witness: w.witness.clone(),
            records: w.records,
            newest_seq: w.newest_witnessed.as_ref().map(|n| n.seq),
            newest_utc: w.newest_witnessed.as_ref().map(|n| n.witnessed_utc.clone()),
            unwitnessed_seals: w.unwitnessed_seals,
            problems: w.problems.len() as u64,
        }),
        parts_hashed: verified.parts_hashed,
        parts_sha256: verified.parts_sha256_checked,
        parts_blake3: verified.parts_blake3_checked,
        bytes_hashed: verified.bytes_hashed,
        as_of_seal: opts.as_of_seal,
        counts_include_unsealed: opts.as_of_seal.is_none(),
    };
    let first_seal_utc = seal_rows.first().map(|s| s.1.clone());
    let born = counted
        .first_commit
        .clone()
        .or_else(|| first_seal_utc.clone());
    let identity = Identity {
        store_id: read_identity(store).await?.map(|i| i.store_id),
        commits: verified.commits,
        sealed_commits: verified.sealed_commits,
        unsealed_commits: verified.unsealed_commits,
        rows: verified.rows,
        bytes: counted.withheld.is_none().then_some(counted.bytes),
        runs: counted.withheld.is_none().then_some(counted.runs_total),
        partitions: counted.withheld.is_none().then_some(counted.partitions),
        seals: verified.seals,
        delta_version: verified.delta_version,
        first_commit_utc: counted.first_commit.clone(),
        last_commit_utc: counted.last_commit.clone(),
        first_seal_utc,
        age_days: born
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| ((now - t.with_timezone(&Utc)).num_seconds() as f64 / 86_400.0).max(0.0))
            .map(|d| (d * 10.0).round() / 10.0),
    };
    let independent = recipes(opts, &verified, &counted.runs);
    Ok(AuditReport {
        format: REPORT_FORMAT.into(),
        generated_utc: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        tool_version: crate::format::pointer::tool_version(),
        store: store.describe(),
        verdict,
        checked,
        identity,
        timeline,
        runs: Runs {
            total: counted.runs_total,
            shown: counted.runs.len() as u64,
            omitted: counted.omitted,
            parts_counted: counted.parts_counted,
            parts_not_counted: counted.not_counted,
            withheld: counted.withheld,
            not_found: counted.not_found,
            items: counted.runs,
        },
        independent,
    })
}

/// "1-4, 7" from sorted sequence numbers.
fn ranges(seqs: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seqs.len() {
        let mut j = i;
        while j + 1 < seqs.len() && seqs[j + 1] == seqs[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            seqs[i].to_string()
        } else {
            format!("{}-{}", seqs[i], seqs[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// The sequence numbers a witness holds records of for `store_id`.
async fn witnessed_seqs(w: &dyn AtomicPublisher, store_id: &str) -> Result<BTreeSet<u64>> {
    let probe = crate::witness::record_key(store_id, 0);
    let prefix = probe
        .rsplit_once('/')
        .map(|(p, _)| format!("{p}/"))
        .unwrap_or_default();
    Ok(w.list(&prefix)
        .await?
        .into_iter()
        .filter_map(|o| {
            o.key
                .strip_prefix(&prefix)?
                .strip_suffix(".json")?
                .parse::<u64>()
                .ok()
        })
        .collect())
}

/// (seq, sealed_utc, commits, signed, witnessed) per seal → at most
/// [`MAX_TIMELINE_POINTS`] points.
fn timeline(seals: &[(u64, String, u64, bool, bool)], with_witness: bool) -> Timeline {
    let per = seals.len().div_ceil(MAX_TIMELINE_POINTS).max(1);
    let points = seals
        .chunks(per)
        .filter_map(|c| {
            let (first, last) = (c.first()?, c.last()?);
            Some(TimelinePoint {
                first_seq: first.0,
                last_seq: last.0,
                sealed_utc: last.1.clone(),
                commits: c.iter().map(|s| s.2).sum(),
                signed: c.iter().filter(|s| s.3).count() as u64,
                witnessed: c.iter().filter(|s| s.4).count() as u64,
            })
        })
        .collect();
    Timeline {
        seals: seals.len() as u64,
        signed: seals.iter().filter(|s| s.3).count() as u64,
        witnessed: with_witness.then(|| seals.iter().filter(|s| s.4).count() as u64),
        grouped: per > 1,
        points,
    }
}

fn verdict(v: &Report, witness: Option<&crate::witness::WitnessReport>) -> Verdict {
    let mut groups: BTreeMap<(String, String), ProblemGroup> = BTreeMap::new();
    let items = v
        .problems
        .iter()
        .map(|p| ("verify", p.kind.name(), &p.key, &p.detail))
        .chain(witness.into_iter().flat_map(|w| {
            w.problems.iter().map(|p| {
                let kind = serde_json::to_value(p.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                ("witness", kind, &p.key, &p.detail)
            })
        }));
    let mut total = 0u64;
    for (check, kind, key, detail) in items {
        total += 1;
        let g = groups
            .entry((check.to_string(), kind.clone()))
            .or_insert_with(|| ProblemGroup {
                kind,
                check: check.into(),
                count: 0,
                items: Vec::new(),
                omitted: 0,
            });
        g.count += 1;
        if g.items.len() < MAX_PROBLEMS_PER_KIND {
            g.items.push(Named {
                key: key.clone(),
                detail: detail.clone(),
            });
        } else {
            g.omitted += 1;
        }
    }
    let flying = match v.in_flight {
        0 => String::new(),
        1 => "1 object in flight".to_string(),
        n => format!("{n} objects in flight"),
    };
    let headline = match (total, flying.is_empty()) {
        (0, true) => "clean: no problems".to_string(),
        (0, false) => format!("clean except {flying}"),
        (1, true) => "1 problem".to_string(),
        (n, true) => format!("{n} problems"),
        (1, false) => format!("1 problem; {flying}"),
        (n, false) => format!("{n} problems; {flying}"),
    };
    Verdict {
        clean: total == 0,
        headline,
        problems: total,
        in_flight: v.in_flight,
        groups: groups.into_values().collect(),
        in_flight_objects: v
            .in_flight_objects
            .iter()
            .take(MAX_PROBLEMS_PER_KIND)
            .map(|f| Named {
                key: f.key.clone(),
                detail: f.detail.clone(),
            })
            .collect(),
        in_flight_omitted: v.in_flight.saturating_sub(MAX_PROBLEMS_PER_KIND as u64),
    }
}

/// A run's counts while the pass goes on.
#[derive(Default)]
struct RunAcc {
    commits: u64,
    unsealed: u64,
    events: u64,
    bytes: u64,
    first_commit: String,
    last_commit: String,
    last_commit_id: String,
    target_rows: BTreeMap<String, u64>,
    rows: RowCounts,
}

/// What the streamed pass found.
#[derive(Default)]
struct Counted {
    runs: Vec<RunSection>,
    runs_total: u64,
    omitted: Omitted,
    partitions: u64,
    bytes: u64,
    parts_counted: u64,
    not_counted: Vec<Named>,
    withheld: Option<String>,
    not_found: Vec<String>,
    first_commit: Option<String>,
    last_commit: Option<String>,
}

/// The one streamed pass: the snapshot's parts, each fetched, checked and counted, folded
/// into per-run counts.
async fn count_runs(store: &dyn AtomicPublisher, opts: &ReportOptions) -> Result<Counted> {
    let read = crate::read::snapshot(
        store,
        &ReadOptions {
            as_of_seal: opts.as_of_seal,
            include_unsealed: opts.as_of_seal.is_none(),
            ..ReadOptions::default()
        },
    )
    .await;
    let read = match read {
        Ok(r) => r,
        Err(Error::Integrity(failed)) => {
            return Ok(Counted {
                withheld: Some(format!(
                    "the trusted read refused the store, so no row was counted: {}",
                    failed
                        .iter()
                        .map(|f| format!("{}: {}", f.key, f.detail))
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
                ..Counted::default()
            })
        }
        Err(e) => return Err(e),
    };
    let mut c = Counted::default();
    let mut order: Vec<String> = Vec::new();
    let mut partitions = BTreeSet::new();
    for p in &read.parts {
        let t = &p.pointer.committed_utc;
        if c.first_commit.as_ref().is_none_or(|f| t < f) {
            c.first_commit = Some(t.clone());
        }
        if c.last_commit.as_ref().is_none_or(|l| t > l) {
            c.last_commit = Some(t.clone());
        }
        c.bytes += p.pointer.size_bytes;
        if partitions.insert((p.pointer.run_id.as_str(), p.pointer.target_crs.as_str()))
            && !order.contains(&p.pointer.run_id)
        {
            order.push(p.pointer.run_id.clone());
        }
    }
    c.partitions = partitions.len() as u64;
    c.runs_total = order.len() as u64;
    // The runs given a section: those asked for, else the first, in order of first commit.
    let chosen: Vec<String> = if opts.run_ids.is_empty() {
        order.iter().take(MAX_RUNS).cloned().collect()
    } else {
        let known: BTreeSet<&str> = order.iter().map(String::as_str).collect();
        c.not_found = opts
            .run_ids
            .iter()
            .filter(|r| !known.contains(r.as_str()))
            .cloned()
            .collect();
        order
            .iter()
            .filter(|r| opts.run_ids.contains(r))
            .take(MAX_RUNS)
            .cloned()
            .collect()
    };
    let chosen_set: BTreeSet<&str> = chosen.iter().map(String::as_str).collect();
    let (counted, skipped): (Vec<SnapshotPart>, Vec<SnapshotPart>) = read
        .parts
        .into_iter()
        .partition(|p| chosen_set.contains(p.pointer.run_id.as_str()));
    for p in &skipped {
        c.omitted.commits += 1;
        c.omitted.events += p.pointer.row_count;
    }
    c.omitted.runs = (order.len() - chosen.len()) as u64;
    let mut accs: BTreeMap<String, RunAcc> = BTreeMap::new();
    let mut results = futures::stream::iter(counted.into_iter().map(|p| async move {
        let bytes = match fetch_checked(store, &p, DigestCheck::Fastest).await {
            Ok(b) => b,
            Err(Error::Integrity(f)) => return Ok::<_, Error>((p, Err(f))),
            Err(e) => return Err(e),
        };
        let (key, crs) = (p.pointer.part_path.clone(), p.pointer.target_crs.clone());
        let rows = crate::base::pool::run(move || count::count_part(&key, &crs, bytes)).await?;
        Ok((p, Ok(rows)))
    }))
    .buffered(COUNT_CONCURRENCY);
    while let Some((p, rows)) = results.try_next().await? {
        let rows = match rows {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                c.not_counted.push(Named {
                    key: p.pointer.part_path.clone(),
                    detail: e.to_string(),
                });
                continue;
            }
            Err(failed) => {
                c.not_counted.extend(
                    failed
                        .into_iter()
                        .map(|Failed { key, detail }| Named { key, detail }),
                );
                continue;
            }
        };
        c.parts_counted += 1;
        let a = accs.entry(p.pointer.run_id.clone()).or_default();
        let t = &p.pointer.committed_utc;
        if a.commits == 0 || *t < a.first_commit {
            a.first_commit = t.clone();
        }
        if a.commits == 0 || *t >= a.last_commit {
            a.last_commit = t.clone();
            a.last_commit_id = p.pointer.commit_id.clone();
        }
        a.commits += 1;
        a.unsealed += u64::from(p.sealed_by.is_none());
        a.events += p.pointer.row_count;
        a.bytes += p.pointer.size_bytes;
        *a.target_rows
            .entry(p.pointer.target_crs.clone())
            .or_default() += p.pointer.row_count;
        a.rows.merge(rows);
    }
    c.runs = chosen
        .into_iter()
        .filter_map(|r| accs.remove(&r).map(|a| section(r, a)))
        .collect();
    Ok(c)
}

fn utc_of_us(us: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(us)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_default()
}

fn breakdown(map: BTreeMap<String, u64>) -> Breakdown {
    let total = map.values().sum();
    let mut all: Vec<(String, u64)> = map.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let rest = all.split_off(all.len().min(MAX_VALUES));
    Breakdown {
        total,
        items: all
            .into_iter()
            .map(|(value, count)| ValueCount { value, count })
            .collect(),
        other_values: rest.len() as u64,
        other_count: rest.iter().map(|r| r.1).sum(),
    }
}

fn bin_label(i: usize) -> (String, Option<f64>, Option<f64>) {
    let lo = i.checked_sub(1).map(|j| ACCURACY_EDGES[j]);
    let hi = ACCURACY_EDGES.get(i).copied();
    let label = match (lo, hi) {
        (None, Some(h)) => format!("< {h} m"),
        (Some(l), Some(h)) => format!("{l}–{h} m"),
        (Some(l), None) => format!("≥ {l} m"),
        (None, None) => String::new(),
    };
    (label, lo, hi)
}

fn section(run_id: String, a: RunAcc) -> RunSection {
    let rows = a.rows;
    let outcomes: Vec<String> = rows
        .stage_outcome
        .keys()
        .map(|(_, o)| o.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut stages: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for ((s, o), n) in &rows.stage_outcome {
        let row = stages
            .entry(s.clone())
            .or_insert_with(|| vec![0; outcomes.len()]);
        if let Some(i) = outcomes.iter().position(|x| x == o) {
            row[i] += n;
        }
    }
    let accuracy = rows
        .accuracy
        .iter()
        .map(|(crs, h)| Histogram {
            target_crs: crs.clone(),
            with_value: h.bins.iter().sum(),
            without_value: h.null,
            min: h.range.map(|r| r.0),
            max: h.range.map(|r| r.1),
            bins: (0..ACCURACY_BINS)
                .map(|i| {
                    let (label, lo, hi) = bin_label(i);
                    Bin {
                        label,
                        lo,
                        hi,
                        count: h.bins[i],
                    }
                })
                .collect(),
        })
        .collect();
    RunSection {
        run_id,
        commits: a.commits,
        unsealed_commits: a.unsealed,
        events: a.events,
        bytes: a.bytes,
        first_commit_utc: a.first_commit,
        last_commit_utc: a.last_commit,
        first_event_utc: rows.event_time_us.map(|t| utc_of_us(t.0)),
        last_event_utc: rows.event_time_us.map(|t| utc_of_us(t.1)),
        sample_commit_id: a.last_commit_id,
        outcomes,
        stages: stages
            .into_iter()
            .map(|(stage, counts)| StageRow {
                total: counts.iter().sum(),
                stage,
                counts,
            })
            .collect(),
        rejection_reasons: breakdown(rows.rejection_reasons),
        target_crs: breakdown(a.target_rows),
        source_crs: breakdown(rows.source_crs),
        tools: breakdown(rows.tools),
        accuracy,
    }
}

/// Quote a shell word when it needs it.
fn sh(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// SQL string literal.
fn sql(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn recipes(opts: &ReportOptions, v: &Report, runs: &[RunSection]) -> Vec<Recipe> {
    let store = sh(&opts.store_url);
    let mut verify = format!("lineage verify --store {store}");
    if let Some(h) = &opts.verify.expect_head {
        verify.push_str(&format!(" --expect-head {h}"));
    }
    for k in &opts.key_sources {
        verify.push_str(&format!(" --public-key {}", sh(k)));
    }
    if let Some(f) = opts.verify.signed_from {
        verify.push_str(&format!(" --signed-from {f}"));
    }
    if let Some((_, w)) = &opts.witness {
        verify.push_str(&format!(" --witness {}", sh(w)));
    }
    let mut out = vec![Recipe {
        what: "The whole store: seal chain, every pointer and part, against the same trust anchors"
            .into(),
        tool: "lineage".into(),
        command: verify,
    }];
    let head = v.head.clone().unwrap_or_else(|| "<HEAD_DIGEST>".into());
    let commit = runs
        .first()
        .map(|r| r.sample_commit_id.clone())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "<COMMIT_ID>".into());
    out.push(Recipe {
        what: "One commit is in the sealed history (an inclusion proof under the head digest)"
            .into(),
        tool: "lineage".into(),
        command: format!("lineage prove --store {store} {commit} --head {head} --out proof.json"),
    });
    let key = opts
        .key_sources
        .first()
        .map(|k| format!(" --public-key {}", sh(k)))
        .unwrap_or_default();
    out.push(Recipe {
        what: "The proof, offline, without the store".into(),
        tool: "lineage".into(),
        command: format!("lineage verify-proof proof.json --head {head}{key}"),
    });
    let version = opts.as_of_seal.or(v.head_seq);
    let url = crate::export::canonical_store_url(&opts.store_url);
    let table = sql(url.strip_prefix("file://").unwrap_or(&url));
    out.push(Recipe {
        what: "Events by run, stage and outcome, as the Delta table the seals make".into(),
        tool: "duckdb".into(),
        command: format!(
            "INSTALL delta; LOAD delta; SELECT run_id, stage, outcome, count(*) AS events FROM delta_scan({table}) GROUP BY ALL ORDER BY ALL;"
        ),
    });
    let version_arg = version
        .map(|n| format!(", version={n}"))
        .unwrap_or_default();
    out.push(Recipe {
        what: format!(
            "The same with deltalake (Python){}",
            version
                .map(|n| format!(", as of seal {n}"))
                .unwrap_or_default()
        ),
        tool: "python".into(),
        command: format!(
            "from deltalake import DeltaTable; t = DeltaTable({table}{version_arg}).to_pyarrow_table(); print(t.group_by([\"run_id\", \"stage\", \"outcome\"]).aggregate([([], \"count_all\")]))"
        ),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_ranges_are_compact() {
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[1, 2, 3, 4, 7, 9, 10]), "1-4, 7, 9-10");
    }

    #[test]
    fn a_long_chain_is_grouped_into_at_most_the_cap() {
        let seals: Vec<(u64, String, u64, bool, bool)> = (1..=1001)
            .map(|i| {
                (
                    i,
                    format!("2026-01-01T00:00:{:02}Z", i % 60),
                    2,
                    i % 2 == 0,
                    i == 5,
                )
            })
            .collect();
        let t = timeline(&seals, true);
        assert!(
            t.grouped && t.points.len() <= MAX_TIMELINE_POINTS,
            "{}",
            t.points.len()
        );
        assert_eq!(t.points.iter().map(|p| p.commits).sum::<u64>(), 2002);
        assert_eq!((t.seals, t.signed, t.witnessed), (1001, 500, Some(1)));
        assert_eq!(t.points.first().map(|p| p.first_seq), Some(1));
        assert_eq!(t.points.last().map(|p| p.last_seq), Some(1001));
        let few = timeline(&seals[..3], false);
        assert!(!few.grouped && few.points.len() == 3 && few.witnessed.is_none());
    }
}

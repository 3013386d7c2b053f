//! The one streamed pass over the trusted read ([`crate::read`]): the snapshot as of a
//! seal, each part of a run given a section fetched once, checked against its pointer and
//! counted ([`crate::parts::scan`]), folded into per-run counts, then dropped. A part that
//! fails its check is not counted and is named; a snapshot the trusted read refuses
//! withholds the counts, and says why.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use futures::{StreamExt, TryStreamExt};

use crate::base::digest::Check as DigestCheck;
use crate::base::error::{Error, Failed, Result};
use crate::parts::scan::{count_part, Accuracy, PartCounts, PartStats};
use crate::parts::scan::{ACCURACY_BINS, ACCURACY_EDGES};
use crate::publish::AtomicPublisher;
use crate::read::scan::fetch_checked;
use crate::read::snapshot::types::SnapshotPart;
use crate::read::snapshot::ReadOptions;
use crate::report::model::{Bin, Breakdown, Histogram, Named, Omitted, RunSection, Runs};
use crate::report::model::{StageRow, ValueCount, MAX_RUNS, MAX_VALUES};
use crate::report::options::ReportOptions;

/// Parts fetched and counted at once (each held whole while checked and decoded).
const COUNT_CONCURRENCY: usize = 4;

/// A run's counts while the pass goes on.
#[derive(Default)]
struct RunAcc {
    commits: u64,
    unsealed: u64,
    events: u64,
    /// Events of commits no seal covers yet.
    unsealed_events: u64,
    bytes: u64,
    first_commit: String,
    last_commit: String,
    /// The newest sealed commit (its time, its id): what `lineage prove` can prove.
    last_sealed: Option<(String, String)>,
    target_rows: BTreeMap<String, u64>,
    stats: PartStats,
    /// Target CRS → its `accuracy_m` counts.
    accuracy: BTreeMap<String, Accuracy>,
}

impl RunAcc {
    /// Add part `p`, whose rows say `counts`.
    fn add(&mut self, p: &SnapshotPart, counts: PartCounts) {
        let t = &p.pointer.committed_utc;
        if self.commits == 0 || *t < self.first_commit {
            self.first_commit = t.clone();
        }
        if self.commits == 0 || *t >= self.last_commit {
            self.last_commit = t.clone();
        }
        if p.sealed_by.is_some() && self.last_sealed.as_ref().is_none_or(|(l, _)| t >= l) {
            self.last_sealed = Some((t.clone(), p.pointer.commit_id.clone()));
        }
        self.commits += 1;
        if p.sealed_by.is_none() {
            self.unsealed += 1;
            self.unsealed_events += p.pointer.row_count;
        }
        self.events += p.pointer.row_count;
        self.bytes += p.pointer.size_bytes;
        *self
            .target_rows
            .entry(p.pointer.target_crs.clone())
            .or_default() += p.pointer.row_count;
        self.stats.merge(&counts.stats);
        self.accuracy
            .entry(p.pointer.target_crs.clone())
            .or_default()
            .merge(&counts.accuracy);
    }
}

/// What the streamed pass found.
#[derive(Default)]
pub(crate) struct Counted {
    runs: Vec<RunSection>,
    /// Runs in the snapshot.
    pub runs_total: u64,
    omitted: Omitted,
    /// Partitions (run × target CRS) in the snapshot.
    pub partitions: u64,
    /// Bytes of the snapshot's parts.
    pub bytes: u64,
    parts_counted: u64,
    not_counted: Vec<Named>,
    /// Why nothing was counted, when the trusted read refused the store.
    pub withheld: Option<String>,
    not_found: Vec<String>,
    /// The first commit's time.
    pub first_commit: Option<String>,
    /// The newest commit's time.
    pub last_commit: Option<String>,
}

/// One part fetched: counted, or why not.
enum Fetched {
    Counted(PartCounts),
    NotCounted(Vec<Named>),
}

impl Counted {
    /// The sections of the runs shown.
    pub(crate) fn sections(&self) -> &[RunSection] {
        &self.runs
    }

    /// The report's account of the runs.
    pub(crate) fn into_runs(self) -> Runs {
        Runs {
            total: self.runs_total,
            shown: self.runs.len() as u64,
            omitted: self.omitted,
            parts_counted: self.parts_counted,
            parts_not_counted: self.not_counted,
            withheld: self.withheld,
            not_found: self.not_found,
            items: self.runs,
        }
    }

    /// The snapshot's size and time span from its pointers; its runs in order of first
    /// commit.
    fn survey(&mut self, parts: &[SnapshotPart]) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        let mut partitions = BTreeSet::new();
        for p in parts {
            let t = &p.pointer.committed_utc;
            if self.first_commit.as_ref().is_none_or(|f| t < f) {
                self.first_commit = Some(t.clone());
            }
            if self.last_commit.as_ref().is_none_or(|l| t > l) {
                self.last_commit = Some(t.clone());
            }
            self.bytes += p.pointer.size_bytes;
            if partitions.insert((p.pointer.run_id.as_str(), p.pointer.target_crs.as_str()))
                && !order.contains(&p.pointer.run_id)
            {
                order.push(p.pointer.run_id.clone());
            }
        }
        self.partitions = partitions.len() as u64;
        self.runs_total = order.len() as u64;
        order
    }

    /// The runs given a section: those asked for, else the first, in order of first commit
    /// (`order`). Runs asked for that have no commit are noted.
    fn choose(&mut self, order: &[String], opts: &ReportOptions) -> Vec<String> {
        if opts.run_ids.is_empty() {
            return order.iter().take(MAX_RUNS).cloned().collect();
        }
        let known: BTreeSet<&str> = order.iter().map(String::as_str).collect();
        self.not_found = opts
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
    }

    /// Fetch, check and count `parts`, a few at a time, into per-run counts.
    async fn count_parts(
        &mut self,
        store: &dyn AtomicPublisher,
        parts: Vec<SnapshotPart>,
    ) -> Result<BTreeMap<String, RunAcc>> {
        let mut accs: BTreeMap<String, RunAcc> = BTreeMap::new();
        let mut results = futures::stream::iter(parts.into_iter().map(|p| async move {
            let fetched = fetch_and_count(store, &p).await?;
            Ok::<_, Error>((p, fetched))
        }))
        .buffered(COUNT_CONCURRENCY);
        while let Some((p, fetched)) = results.try_next().await? {
            match fetched {
                Fetched::Counted(counts) => {
                    self.parts_counted += 1;
                    accs.entry(p.pointer.run_id.clone())
                        .or_default()
                        .add(&p, counts);
                }
                Fetched::NotCounted(named) => self.not_counted.extend(named),
            }
        }
        Ok(accs)
    }
}

/// The one streamed pass: the snapshot's parts, each fetched, checked and counted, folded
/// into per-run counts.
pub(crate) async fn count_runs(
    store: &dyn AtomicPublisher,
    opts: &ReportOptions,
) -> Result<Counted> {
    let parts = match snapshot_parts(store, opts).await? {
        Ok(parts) => parts,
        Err(withheld) => {
            return Ok(Counted {
                withheld: Some(withheld),
                ..Counted::default()
            })
        }
    };
    let mut c = Counted::default();
    let order = c.survey(&parts);
    let chosen = c.choose(&order, opts);
    let chosen_set: BTreeSet<&str> = chosen.iter().map(String::as_str).collect();
    let (counted, skipped): (Vec<SnapshotPart>, Vec<SnapshotPart>) = parts
        .into_iter()
        .partition(|p| chosen_set.contains(p.pointer.run_id.as_str()));
    for p in &skipped {
        c.omitted.commits += 1;
        c.omitted.events += p.pointer.row_count;
    }
    c.omitted.runs = (order.len() - chosen.len()) as u64;
    let mut accs = c.count_parts(store, counted).await?;
    c.runs = chosen
        .into_iter()
        .filter_map(|r| accs.remove(&r).map(|a| section(r, a)))
        .collect();
    Ok(c)
}

/// The snapshot's parts, or (when the trusted read refuses the store) why no row is
/// counted.
async fn snapshot_parts(
    store: &dyn AtomicPublisher,
    opts: &ReportOptions,
) -> Result<std::result::Result<Vec<SnapshotPart>, String>> {
    let read = crate::read::snapshot(
        store,
        &ReadOptions {
            as_of_seal: opts.as_of_seal,
            include_unsealed: opts.as_of_seal.is_none(),
            ..ReadOptions::default()
        },
    )
    .await;
    match read {
        Ok(r) => Ok(Ok(r.parts)),
        Err(Error::Integrity(failed)) => Ok(Err(format!(
            "the trusted read refused the store, so no row was counted: {}",
            failed
                .iter()
                .map(|f| format!("{}: {}", f.key, f.detail))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
        Err(e) => Err(e),
    }
}

/// Fetch part `p`, check it against its pointer and count its rows (on the encoder pool).
async fn fetch_and_count(store: &dyn AtomicPublisher, p: &SnapshotPart) -> Result<Fetched> {
    let bytes = match fetch_checked(store, p, DigestCheck::Fastest).await {
        Ok(b) => b,
        Err(Error::Integrity(failed)) => {
            return Ok(Fetched::NotCounted(
                failed
                    .into_iter()
                    .map(|Failed { key, detail }| Named {
                        key,
                        detail: detail.to_string(),
                    })
                    .collect(),
            ))
        }
        Err(e) => return Err(e),
    };
    let key = p.pointer.part_path.clone();
    let counted = {
        let key = key.clone();
        let limits = store.read_limits();
        crate::base::pool::run(move || count_part(&key, bytes, limits)).await?
    };
    Ok(match counted {
        Ok(counts) => Fetched::Counted(counts),
        Err(e) => Fetched::NotCounted(vec![Named {
            key,
            detail: e.to_string(),
        }]),
    })
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

/// The `accuracy_m` histogram of target CRS `crs`.
fn accuracy_histogram(crs: &str, h: &Accuracy) -> Histogram {
    Histogram {
        target_crs: crs.to_string(),
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
    }
}

/// The stage × outcome table: its columns (every outcome, sorted) and its rows.
fn stage_table(stats: &PartStats) -> (Vec<String>, Vec<StageRow>) {
    let outcomes: Vec<String> = stats
        .stages
        .values()
        .flat_map(|s| s.outcomes.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rows = stats
        .stages
        .iter()
        .map(|(stage, s)| {
            let counts: Vec<u64> = outcomes.iter().map(|o| s.outcome(o)).collect();
            StageRow {
                total: counts.iter().sum(),
                stage: stage.clone(),
                counts,
            }
        })
        .collect();
    (outcomes, rows)
}

fn section(run_id: String, a: RunAcc) -> RunSection {
    let (outcomes, stages) = stage_table(&a.stats);
    let all = a.stats.total();
    RunSection {
        run_id,
        commits: a.commits,
        unsealed_commits: a.unsealed,
        events: a.events,
        unsealed_events: a.unsealed_events,
        bytes: a.bytes,
        first_commit_utc: a.first_commit,
        last_commit_utc: a.last_commit,
        first_event_utc: all.event_time_us.map(|t| utc_of_us(t.0)),
        last_event_utc: all.event_time_us.map(|t| utc_of_us(t.1)),
        sample_commit_id: a.last_sealed.map(|(_, id)| id).unwrap_or_default(),
        outcomes,
        stages,
        rejection_reasons: breakdown(all.rejection_reasons),
        target_crs: breakdown(a.target_rows),
        source_crs: breakdown(all.source_crs),
        tools: breakdown(all.tools),
        accuracy: a
            .accuracy
            .iter()
            .map(|(crs, h)| accuracy_histogram(crs, h))
            .collect(),
    }
}

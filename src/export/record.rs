//! The format-neutral ISO lineage record of one run: what both encodings
//! ([`crate::export::iso19115`]'s 19115-3 and [`crate::export::iso19139`]) write.

use std::collections::BTreeMap;

use crate::base::error::Result;
use crate::base::time::rfc3339_us;
use crate::export::catalogue::{public_store_url, store_name, IsoOptions};
use crate::export::openlineage::run_uuid;
use crate::export::{merge_stats, RunExport, Snapshot};
use crate::parts::scan::{OperationStats, StageStats};
use crate::read::snapshot::types::SealRef;

/// Metres as records write them: rounded to the micrometre, shortest decimal form.
pub(crate) fn metres(v: f64) -> String {
    format!("{}", (v * 1e6).round() / 1e6)
}

/// How a record names an operation: `EPSG:1175 (NAD27 to WGS 84 (6))`, its code alone,
/// its name alone, or that none was recorded.
pub(crate) fn operation_label(code: &str, op: &OperationStats) -> String {
    match (code, op.name()) {
        ("", None) => "operation not recorded".to_string(),
        ("", Some(n)) => n.to_string(),
        (c, None) => c.to_string(),
        (c, Some(n)) => format!("{c} ({n})"),
    }
}

/// An operation's accuracy and grids in words: `accuracy max 1 m, mean 0.5 m over 3 of 4
/// events; grids a.tif (4); 1 degraded`.
pub(crate) fn operation_facts(op: &OperationStats) -> String {
    let mut parts = vec![format!("{} features", op.events)];
    match (op.accuracy_max, op.accuracy_mean()) {
        (Some(max), Some(mean)) => parts.push(format!(
            "accuracy_m max {} m, mean {} m over {} of them",
            metres(max),
            metres(mean),
            op.with_accuracy
        )),
        _ => parts.push("no accuracy_m recorded".to_string()),
    }
    match (op.grids.is_empty(), op.grids_unknown) {
        (false, _) => parts.push(format!("grids {}", summarise(&op.grids))),
        (true, 0) => parts.push("no grid used".to_string()),
        (true, _) => {}
    }
    if op.degraded > 0 {
        parts.push(format!(
            "{} degraded (the best operation was not available)",
            op.degraded
        ));
    }
    parts.join(", ")
}

/// One process step: a stage of the run into one target CRS.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub stage: String,
    pub target: String,
    pub stats: StageStats,
    pub begin: String,
    pub end: String,
    pub commit_ids: Vec<String>,
}

impl Step {
    pub(crate) fn transformed(&self) -> u64 {
        self.stats.outcome("transformed")
    }
    pub(crate) fn rejected(&self) -> u64 {
        self.stats.outcome("rejected")
    }

    /// "crs_transform" or "a, b" for several event types.
    pub(crate) fn event_types(&self) -> String {
        self.stats
            .event_types
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The outcome counts, with reasons, in one sentence.
    pub(crate) fn outcome_summary(&self) -> String {
        let mut parts = vec![
            format!("{} transformed", self.transformed()),
            format!("{} rejected", self.rejected()),
        ];
        for (o, n) in &self.stats.outcomes {
            if o != "transformed" && o != "rejected" {
                parts.push(format!("{n} {o}"));
            }
        }
        let mut s = parts.join(", ");
        if !self.stats.rejection_reasons.is_empty() {
            s.push_str(&format!(
                "; rejection reasons: {}",
                summarise(&self.stats.rejection_reasons)
            ));
        }
        s
    }

    pub(crate) fn description(&self) -> String {
        let sources = if self.stats.source_crs.is_empty() {
            "no source CRS recorded".to_string()
        } else {
            format!("from {}", summarise(&self.stats.source_crs))
        };
        format!(
            "Stage {} ({}) into {} of {} features {sources}: {}.",
            self.stage,
            self.event_types(),
            self.target,
            self.stats.rows,
            self.outcome_summary()
        )
    }

    /// The tools (`tool_version`) of the step, joined.
    pub(crate) fn tools(&self) -> String {
        self.stats
            .tools
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The grids the step's operations used, with their events.
    pub(crate) fn grids(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for op in self.stats.operations.values() {
            for (g, n) in &op.grids {
                *out.entry(g.clone()).or_default() += n;
            }
        }
        out
    }

    /// The run-time parameters of the step: source and target CRSs, grids.
    pub(crate) fn runtime_parameters(&self) -> String {
        let sources = if self.stats.source_crs.is_empty() {
            "none recorded".to_string()
        } else {
            summarise(&self.stats.source_crs)
        };
        let grids = self.grids();
        let unknown: u64 = self
            .stats
            .operations
            .values()
            .map(|o| o.grids_unknown)
            .sum();
        let grids = match (grids.is_empty(), unknown) {
            (true, 0) => "none used".to_string(),
            (true, _) => "not recorded".to_string(),
            (false, 0) => summarise(&grids),
            (false, n) => format!("{}; not recorded for {n} events", summarise(&grids)),
        };
        format!(
            "source CRS: {sources}; target CRS: {}; grids: {grids}",
            self.target
        )
    }

    /// Events without a source CRS.
    pub(crate) fn without_source(&self) -> u64 {
        self.stats.rows - self.stats.source_crs.values().sum::<u64>()
    }
}

/// `a (12), b (3)`: most frequent first, then by name.
pub(crate) fn summarise(counts: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = counts.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The format-neutral content of a record.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub run_id: String,
    pub identifier: String,
    /// The store in words: its identity and, when others can reach it, its URL.
    pub store: String,
    pub store_id: Option<String>,
    /// The store's URL when it is not a local path ([`public_store_url`]).
    pub store_url: Option<String>,
    pub title: String,
    /// Contact, e-mail, bounding box, keywords, topic categories.
    pub opts: IsoOptions,
    pub date: String,
    pub begin: String,
    pub end: String,
    pub targets: Vec<String>,
    pub steps: Vec<Step>,
    pub seal: Option<SealRef>,
    pub unsealed: usize,
    pub commits: usize,
    pub rows: u64,
    /// The ids of the commits `repair` adopted.
    pub adopted: Vec<String>,
}

impl Record {
    pub(crate) fn new(snap: &Snapshot, run: &RunExport, opts: &IsoOptions) -> Result<Self> {
        let mut steps = Vec::new();
        for (target, commits) in run.by_target() {
            let stats = merge_stats(commits.iter().copied());
            for (stage, s) in stats.stages {
                let (lo, hi) = s.event_time_us.unwrap_or((0, 0));
                steps.push(Step {
                    stage,
                    target: target.to_string(),
                    begin: rfc3339_us(lo),
                    end: rfc3339_us(hi),
                    stats: s,
                    commit_ids: commits
                        .iter()
                        .map(|c| c.pointer.commit_id.clone())
                        .collect(),
                });
            }
        }
        steps.sort_by(|a, b| a.stage.cmp(&b.stage).then(a.target.cmp(&b.target)));
        let p = |f: fn(&crate::format::pointer::Pointer) -> &String| {
            run.commits.iter().map(move |c| f(&c.pointer).clone())
        };
        let store_url = public_store_url(&snap.store_url);
        Ok(Record {
            run_id: run.run_id.clone(),
            identifier: run_uuid(snap.store_id.as_deref(), &run.run_id).to_string(),
            store: store_name(snap.store_id.as_deref(), store_url.as_deref()),
            store_id: snap.store_id.clone(),
            store_url,
            title: opts
                .title
                .clone()
                .unwrap_or_else(|| format!("Lineage of run {}", run.run_id)),
            opts: opts.clone(),
            date: run.last_committed().to_string(),
            begin: p(|p| &p.min_event_time_utc).min().unwrap_or_default(),
            end: p(|p| &p.max_event_time_utc).max().unwrap_or_default(),
            targets: run.by_target().keys().map(|t| t.to_string()).collect(),
            steps,
            seal: run.covering_seal().cloned(),
            unsealed: run.unsealed(),
            commits: run.commits.len(),
            rows: run.commits.iter().map(|c| c.pointer.row_count).sum(),
            adopted: run
                .commits
                .iter()
                .filter(|c| c.pointer.adopted)
                .map(|c| c.pointer.commit_id.clone())
                .collect(),
        })
    }

    /// Every step's counts together.
    pub(crate) fn total(&self) -> StageStats {
        let mut t = StageStats::default();
        for s in &self.steps {
            t.merge(&s.stats);
        }
        t
    }

    /// The coordinate operations of every step, by code (`""`: not recorded), and all of
    /// them together (`None` when no transformed event was counted).
    pub(crate) fn operations(&self) -> (BTreeMap<String, OperationStats>, Option<OperationStats>) {
        let ops = self.total().operations;
        let mut all: Option<OperationStats> = None;
        for o in ops.values() {
            all.get_or_insert_with(OperationStats::default).merge(o);
        }
        (ops, all)
    }

    /// What proves the records, in words (no markup: catalogues show it as text).
    pub(crate) fn proof_sentence(&self) -> String {
        match (&self.seal, self.unsealed) {
            (Some(s), _) => format!(
                "All {} commits are sealed: seal {} of the store, head digest sha256 {}, covers them; \
                 lineage verify --expect-head {} checks the store and lineage prove COMMIT --head {} proves any commit.",
                self.commits, s.seq, s.sha256, s.sha256, s.sha256
            ),
            (None, n) => format!(
                "{n} of {} commits are not sealed yet: no head digest proves them until the store is sealed.",
                self.commits
            ),
        }
    }

    /// The commits `repair` adopted, in words (empty when none was).
    pub(crate) fn adopted_sentence(&self) -> String {
        match self.adopted.len() {
            0 => String::new(),
            n => format!(
                " {n} of the {} commits were adopted by lineage repair (their pointers written from orphan parts' own footers, so nothing their writer wrote vouches for them: a writer that died before its pointer, or a part planted by anyone who can write): {}.",
                self.commits,
                self.adopted.join(", ")
            ),
        }
    }

    /// The lineage statement (INSPIRE's resource lineage), generated from the counts:
    /// what came in (source CRSs), what went out (target CRSs), what was rejected and
    /// why, which tools and coordinate operations ran with their accuracy and grids, when,
    /// and where the per-feature record is and what proves it.
    pub(crate) fn statement(&self) -> String {
        let t = self.total();
        let tools = t.tools.keys().cloned().collect::<Vec<_>>().join(", ");
        let sources = if t.source_crs.is_empty() {
            "no recorded source CRS".to_string()
        } else {
            summarise(&t.source_crs)
        };
        let without = t.rows - t.source_crs.values().sum::<u64>();
        let without = match without {
            0 => String::new(),
            n => format!(" ({n} without a recorded source CRS)"),
        };
        let mut s = format!(
            "Run {} of {tools} processed {} events (one per feature and stage) from {sources}{without} into {} between {} and {}: {}.",
            self.run_id,
            t.rows,
            self.targets.join(", "),
            self.begin,
            self.end,
            outcome_words(&t),
        );
        let (ops, all) = self.operations();
        if !ops.is_empty() {
            let list: Vec<String> = ops
                .iter()
                .map(|(code, op)| format!("{}: {}", operation_label(code, op), operation_facts(op)))
                .collect();
            s.push_str(&format!(" Coordinate operations: {}.", list.join("; ")));
        }
        if let Some(max) = all.as_ref().and_then(|a| a.accuracy_max) {
            let a = all.as_ref().map_or(0, |a| a.with_accuracy);
            let mean = all
                .as_ref()
                .and_then(OperationStats::accuracy_mean)
                .unwrap_or(max);
            s.push_str(&format!(
                " Positional accuracy of the transformed features, as the operations declare it (accuracy_m): max {} m, mean {} m over {a} features.",
                metres(max),
                metres(mean)
            ));
        }
        s.push_str(&format!(
            " Each feature's lineage is recorded in {} ({} events in {} commits, {} process steps by stage and target CRS). {}{}",
            self.store,
            self.rows,
            self.commits,
            self.steps.len(),
            self.proof_sentence(),
            self.adopted_sentence()
        ));
        s
    }

    pub(crate) fn abstract_text(&self) -> String {
        let rejected: u64 = self.steps.iter().map(Step::rejected).sum();
        let transformed: u64 = self.steps.iter().map(Step::transformed).sum();
        format!(
            "Features standardised by run {} ({} events: {transformed} transformed, {rejected} rejected), \
             with per-feature lineage kept in a tamper-evident lineage-store.",
            self.run_id, self.rows
        )
    }
}

/// `216 transformed, 24 rejected (outside_area_of_use (22), ...)` of a stage's counts.
fn outcome_words(t: &StageStats) -> String {
    let mut parts = vec![
        format!("{} transformed", t.outcome("transformed")),
        format!("{} rejected", t.outcome("rejected")),
    ];
    if !t.rejection_reasons.is_empty() {
        if let Some(r) = parts.last_mut() {
            r.push_str(&format!(" ({})", summarise(&t.rejection_reasons)));
        }
    }
    for (o, n) in &t.outcomes {
        if o != "transformed" && o != "rejected" {
            parts.push(format!("{n} {o}"));
        }
    }
    parts.join(", ")
}

/// One `DQ_AbsoluteExternalPositionalAccuracy` of a record: a statistic of `accuracy_m`
/// over the transformed events of all operations, or of one.
#[derive(Debug, Clone)]
pub(crate) struct AccuracyReport {
    /// The measure's name: `maximum accuracy_m`, `mean accuracy_m`, and for one operation
    /// `... of operation EPSG:1175 (NAD27 to WGS 84 (6))`.
    pub measure: String,
    /// What was measured over which events.
    pub description: String,
    /// Metres ([`metres`]).
    pub value: String,
}

/// How the accuracy was evaluated, in words (the same in every report).
pub(crate) const ACCURACY_METHOD: &str = "Indirect: the accuracy_m each event recorded, which is the accuracy the coordinate operation declares (PROJ's operation accuracy), not a measurement against reference data; events without one (PROJ's unknown accuracy, or none recorded) are left out and counted.";

/// The EPSG unit of measure of every value: metre.
pub(crate) const METRE_URI: &str = "http://www.opengis.net/def/uom/EPSG/0/9001";

impl Record {
    /// Max and mean `accuracy_m` over every operation, then per operation (by code),
    /// of the transformed events that recorded one; none when no event did.
    pub(crate) fn accuracy_reports(&self) -> Vec<AccuracyReport> {
        let (ops, all) = self.operations();
        let mut scopes: Vec<(String, &OperationStats)> = Vec::new();
        if let Some(a) = &all {
            scopes.push((String::new(), a));
        }
        for (code, op) in &ops {
            scopes.push((format!(" of {}", operation_label(code, op)), op));
        }
        let mut out = Vec::new();
        for (of, op) in scopes {
            let (Some(max), Some(mean)) = (op.accuracy_max, op.accuracy_mean()) else {
                continue;
            };
            let over = format!(
                "over the {} of {} transformed events{of} in run {} that recorded accuracy_m ({} without)",
                op.with_accuracy,
                op.events,
                self.run_id,
                op.events - op.with_accuracy
            );
            for (stat, v) in [("maximum", max), ("mean", mean)] {
                out.push(AccuracyReport {
                    measure: format!("{stat} accuracy_m{of}"),
                    description: format!("The {stat} of accuracy_m, in metres, {over}."),
                    value: metres(v),
                });
            }
        }
        out
    }
}

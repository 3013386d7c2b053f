//! The format-neutral ISO lineage record of one run: what both encodings
//! ([`crate::export::iso19115`]'s 19115-3 and [`crate::export::iso19139`]) write.

use std::collections::BTreeMap;

use crate::base::error::Result;
use crate::base::time::rfc3339_us;
use crate::export::openlineage::run_uuid;
use crate::export::{merge_stats, RunExport, Snapshot};
use crate::parts::scan::StageStats;
use crate::read::snapshot::types::SealRef;

/// What the store cannot say about the record.
#[derive(Debug, Clone, Default)]
pub struct IsoOptions {
    /// Title of the data set (default: `Lineage of run <run_id>`).
    pub title: Option<String>,
    /// Organisation to name as the metadata contact (default: none, `nilReason="missing"`).
    pub contact: Option<String>,
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
            "Stage `{}` ({}) into {} of {} features {sources}: {}.",
            self.stage,
            self.event_types(),
            self.target,
            self.stats.rows,
            self.outcome_summary()
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
    pub store: String,
    pub title: String,
    pub contact: Option<String>,
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
        Ok(Record {
            run_id: run.run_id.clone(),
            identifier: run_uuid(snap.store_id.as_deref(), &run.run_id).to_string(),
            store: snap.store_url.clone(),
            title: opts
                .title
                .clone()
                .unwrap_or_else(|| format!("Lineage of run {}", run.run_id)),
            contact: opts.contact.clone(),
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

    /// What proves the records, in words.
    pub(crate) fn proof_sentence(&self) -> String {
        match (&self.seal, self.unsealed) {
            (Some(s), _) => format!(
                "All {} commits are sealed: seal {} of the store, head digest sha256 {}, covers them; \
                 `lineage verify --expect-head {}` checks the store and `lineage prove <commit> --head {}` proves any commit.",
                self.commits, s.seq, s.sha256, s.sha256, s.sha256
            ),
            (None, n) => format!(
                "{n} of {} commits are not sealed yet: seal the store and export again for a head digest that proves the records.",
                self.commits
            ),
        }
    }

    /// The commits `repair` adopted, in words (empty when none was).
    pub(crate) fn adopted_sentence(&self) -> String {
        match self.adopted.len() {
            0 => String::new(),
            n => format!(
                " {n} of the {} commits were adopted by `lineage repair` (their pointers written from orphan parts' own footers, so nothing their writer wrote vouches for them: a writer that died before its pointer, or a part planted by anyone who can write): {}.",
                self.commits,
                self.adopted.join(", ")
            ),
        }
    }

    pub(crate) fn statement(&self) -> String {
        format!(
            "Lineage of run {} recorded in lineage-store {}: {} events in {} commits, {} process steps \
             (stage and target CRS), target reference systems {}, events from {} to {}. {}{}",
            self.run_id,
            self.store,
            self.rows,
            self.commits,
            self.steps.len(),
            self.targets.join(", "),
            self.begin,
            self.end,
            self.proof_sentence(),
            self.adopted_sentence()
        )
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

//! The verdict: every problem of the verification and the witness check, by kind, and the
//! objects in flight, headed by the verdict in words (the one `verify` prints).

use std::collections::BTreeMap;

use crate::audit::anchor_outcome::outcome_lines;
use crate::audit::findings::{verdict_headline, Report};
use crate::report::model::{Named, ProblemGroup, Verdict, MAX_PROBLEMS_PER_KIND};
use crate::witness::WitnessReport;

/// The verdict of verification `v` and, when one was asked for, the witness check.
pub(crate) fn verdict(v: &Report, witness: Option<&WitnessReport>) -> Verdict {
    let (total, groups) = group_problems(v, witness);
    let mut anchors = v.anchors.clone();
    anchors.extend(witness.map(crate::witness::anchor_outcome));
    let lines = outcome_lines(&anchors);
    Verdict {
        anchored: !anchors.is_empty(),
        anchors,
        anchoring: lines.join("; "),
        adopted_commits: v.adopted,
        adopted_accepted: v.accepted_adopted(),
        adopted: v
            .adopted_commits
            .iter()
            .take(MAX_PROBLEMS_PER_KIND)
            .cloned()
            .collect(),
        clean: total == 0,
        headline: verdict_headline(total, v.in_flight, v.accepted_adopted()),
        problems: total,
        in_flight: v.in_flight,
        groups,
        in_flight_objects: v
            .in_flight_objects
            .iter()
            .take(MAX_PROBLEMS_PER_KIND)
            .map(|f| Named {
                key: f.key.clone(),
                detail: f.detail.to_string(),
            })
            .collect(),
        in_flight_omitted: v.in_flight.saturating_sub(MAX_PROBLEMS_PER_KIND as u64),
    }
}

/// Every problem, by check and kind (at most [`MAX_PROBLEMS_PER_KIND`] of each named), and
/// how many there are in all.
fn group_problems(v: &Report, witness: Option<&WitnessReport>) -> (u64, Vec<ProblemGroup>) {
    let mut groups: BTreeMap<(String, String), ProblemGroup> = BTreeMap::new();
    let items = v
        .problems
        .iter()
        .map(|p| ("verify", p.kind.name(), &p.key, p.detail.to_string()))
        .chain(witness.into_iter().flat_map(|w| {
            w.problems.iter().map(|p| {
                let kind = serde_json::to_value(p.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                ("witness", kind, &p.key, p.detail.clone())
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
                detail,
            });
        } else {
            g.omitted += 1;
        }
    }
    (total, groups.into_values().collect())
}

//! Adopted commits: pointers `repair` wrote for orphan parts, from the parts' own footers.
//!
//! Nothing an adopted commit's writer wrote vouches for it: its part was written by a
//! writer that died before its pointer, or planted by anyone who can write to the store,
//! and nothing in the store tells which. Its pointer (`"adopted": true`, bound by its
//! digest once sealed) and the seal that seals it (its entry's `adopted`) keep the mark
//! for good. Every one `verify` reads is listed ([`Report::adopted_commits`]); one the
//! auditor's anchor does not cover (sealed after the seal with the expected head digest,
//! or, without `--expect-head`, any) is an [`ProblemKind::AdoptedCommit`] problem unless
//! the auditor accepts it (`accept_adopted`).

use crate::audit::findings::{AdoptedCommit, Problem, ProblemKind, Report};
use crate::base::param::{text, Param};
use crate::format::pointer::Pointer;

/// The adopted commit of pointer `key` (`p`), sealed by seal `sealed_by` (not judged yet).
pub(crate) fn found(key: &str, p: &Pointer, sealed_by: Option<u64>) -> AdoptedCommit {
    AdoptedCommit {
        key: key.to_string(),
        commit_id: p.commit_id.clone(),
        part_path: p.part_path.clone(),
        sealed_by,
        anchored: false,
        accepted: false,
    }
}

/// Judge the adopted commits in `report`: covered by the expected head, accepted
/// (`accept`), or a problem each; sorted by key, counted.
pub(crate) fn judge(report: &mut Report, accept: bool) {
    let mut adopted = std::mem::take(&mut report.adopted_commits);
    adopted.sort_by(|a, b| a.key.cmp(&b.key));
    adopted.dedup_by(|a, b| a.key == b.key);
    let head = report.expected_head_seq;
    for a in &mut adopted {
        a.anchored = matches!((a.sealed_by, head), (Some(s), Some(h)) if s <= h);
        if a.anchored {
            continue;
        }
        if accept {
            a.accepted = true;
            continue;
        }
        report.push_problem(problem(a, head));
    }
    report.adopted = adopted.len() as u64;
    report.adopted_commits = adopted;
}

/// The `adopted_commit` problem of `a`, not covered by the expected head's seal `head`.
fn problem(a: &AdoptedCommit, head: Option<u64>) -> Problem {
    let sealed = match a.sealed_by {
        Some(s) => format!("sealed by seal {s}"),
        None => "not sealed yet".to_string(),
    };
    let uncovered = match head {
        Some(h) => format!("after seal {h}, the expected head's"),
        None => "and no expected head covers it".to_string(),
    };
    Problem::new(
        ProblemKind::AdoptedCommit,
        &a.key,
        text![
            format!(
                "commit {} (part {}) was adopted by `lineage repair`, {sealed}, {uncovered}: its pointer was written from the part's own footer, and nothing its writer wrote vouches for it (written by a writer that died before its pointer, or planted; nothing in the store tells which); ",
                a.commit_id, a.part_path
            ),
            Param::AcceptAdopted,
            " accepts it if you know which writer wrote it"
        ],
    )
}

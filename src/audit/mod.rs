//! The audit path: reading pointers back (`log`), proving the store (`verify`), sealing it
//! (`seal`, `chain`, `merkle`), proving single commits (`proof`), and the two maintenance
//! commands (`repair` adopts orphan parts, `sweep` removes stale temps); the auditor's
//! questions: `seals` (the list), `show` (one commit or seal in words), `diff` (between
//! two seals).
//! See docs/audit-guide.md for what each of these proves.

pub(crate) mod anchor_outcome;
pub(crate) mod anchors;
pub mod chain;
pub mod compaction_log;
pub(crate) mod cosigners;
pub(crate) mod diff;
pub(crate) mod findings;
pub(crate) mod links;
pub(crate) mod log;
pub(crate) mod proof;
mod range_anchors;
pub(crate) mod repair;
pub(crate) mod seals;
pub(crate) mod show;
pub(crate) mod sweep;
pub(crate) mod verify;

//! The audit path: reading pointers back (`log`), proving the store (`verify`), sealing it
//! (`seal`, `chain`, `merkle`), proving single commits (`proof`), and the two maintenance
//! commands (`repair` adopts orphan parts, `sweep` removes stale temps).
//! See docs/audit-guide.md for what each of these proves.

pub mod chain;
pub mod log;
pub mod proof;
pub mod repair;
pub mod report;
pub mod sweep;
pub mod verify;

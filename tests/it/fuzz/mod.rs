//! Fuzz findings, replayed as ordinary tests.

mod regressions;

//! The integration tests: one binary, a module per area (`cargo test --test it AREA::`),
//! and one tree of shared helpers, [`support`].
//!
//! Every test of every area runs in this one process, on parallel threads. A test that
//! changes process-wide state runs its body in a child process of its own
//! ([`support::own_process`]); one that needs the storage emulators finds them through
//! the variables `localstack/start.sh` writes ([`support::Emulator`]).

// In tests a panic is the failure report, and helpers are not API. Tests may read the
// real clock and randomness (clippy.toml keeps them behind the library's injected ones).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::disallowed_methods,
    unreachable_pub
)]

mod support;

mod audit;
mod cli;
mod compact;
mod delta;
mod export;
mod fuzz;
mod history;
mod iceberg;
mod input;
mod layering;
mod publish;
mod read;
mod replicate;
mod report;
mod security;
mod timestamp;
mod tlog;
mod witness;
mod write;

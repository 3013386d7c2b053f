//! The Arrow IPC input reader (file or stream) into the contract; the checks are in checks.rs (shared with tests/it/fuzz/regressions.rs).
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::arrow(data));

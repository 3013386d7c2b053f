//! The page-header walk that bounds what a page decodes to; the checks are in checks.rs
//! (shared with tests/it/fuzz/regressions.rs).
#![no_main]

#[path = "checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::pages(data));

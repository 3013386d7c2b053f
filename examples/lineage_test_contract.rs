//! The `lineage` CLI with a **test-only** contract version 1.4.0 registered: the released
//! 1.3.0's columns plus a nullable `transform_pipeline` (string). The tests of contract versions
//! (tests/it/write/contract_versions.rs, tests/python/test_contract_versions.py) run it as
//! `target/debug/examples/lineage_test_contract`; `cargo test` builds it.
//!
//! This is how a version that must not ship is registered: through the library API
//! ([`lineage_store::contract::register_version`]) in a binary of its own, so the
//! `lineage` binary never knows 1.4.0. A released version goes into `contract::RELEASED`.

use std::process::ExitCode;

use lineage_store::contract::{self, Column, Kind};

/// The column the test-only 1.4.0 adds.
const TRANSFORM_PIPELINE: Column = Column {
    name: "transform_pipeline",
    kind: Kind::Str,
    required: false,
    doc: "PROJ pipeline of the transformation (test-only version 1.4.0)",
};

fn main() -> ExitCode {
    let mut columns = contract::newest().columns.clone();
    columns.push(TRANSFORM_PIPELINE);
    if let Err(e) = contract::register_version("1.4.0", &columns) {
        eprintln!("error: cannot register the test-only version 1.4.0: {e}");
        return ExitCode::from(4);
    }
    lineage_store::cli::main()
}

//! `verify`, `repair`, `sweep`, seals and proofs: clean stores, tampering, races, and the
//! audit commands through the CLI.

mod auditor;
mod clean;
mod cli;
mod in_flight;
mod lineage_dir;
mod lost_lineage;
mod partition_values;
mod races;
mod repair_history;
mod repair_sweep;
mod row_proof;
mod row_proof_compact;
mod seal;
mod show_proofs;
mod signing;
mod tamper;
mod warnings;
mod writer_keys;

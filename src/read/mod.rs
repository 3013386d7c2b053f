//! The trusted read path: a store as of a seal, every part checked against its sealed
//! pointer while it is read (the design of delta-kernel-rs: a snapshot, then a scan).
//!
//! - [`mod@snapshot`]: the commits sealed by seals 1..N (default: the newest), read from the
//!   seals, never from a listing; each sealed pointer must be the bytes its seal recorded.
//!   Unsealed commits only when asked for, checked against their own keys.
//! - [`mod@scan`]: the snapshot's parts, each fetched once, its size and digest checked before
//!   any of its rows is handed on; a failure ends the scan naming the part.
//! - [`prune`]: skipping parts a feature lookup cannot match (footer statistics, bloom
//!   filters).
//! - [`as_of`]: a time as the newest seal sealed at or before it.
//! - [`provenance`]: each row's commit, sealing seal and part, beside its columns.
//! - [`location`]: where a part is, as DuckDB, Polars and pyarrow take it.
//! - [`listing`]: each part as `files --json` lists it (its commit or compaction, seal,
//!   and whether its commit was adopted).
//! - [`out`]: a scan written as Parquet, Arrow IPC, NDJSON or CSV.
//! - [`copy`]: a scan of every column and row written to Parquet by copying the checked
//!   parts' column chunks (no decode, no re-encode).
//!
//! Beside `write`, on the layers below both: the formats, the publisher, the parts and the
//! history objects. `export` reads through it.

pub(crate) mod as_of;
pub(crate) mod copy;
pub(crate) mod listing;
pub(crate) mod location;
pub(crate) mod out;
pub(crate) mod provenance;
pub mod prune;
pub mod scan;
pub mod snapshot;

pub use scan::{check_all, scan, Scan, ScanOptions, ScanReader, ScanStats};
pub use snapshot::{
    snapshot, ReadOptions, SealRange, SealRef, Snapshot, SnapshotPart, SnapshotSeal,
};

//! lineage-store: an append-only, tamper-evident history of lineage events as Parquet,
//! on a local disk or on object stores.
//!
//! # Layout
//!
//! Data flows top to bottom through these modules:
//!
//! - [`input`]: NDJSON / CSV / Arrow IPC / Parquet → contract batches, each row knowing
//!   its input line ([`events`] holds the row builder and [`events::Origin`]).
//! - [`contract`]: the frozen 15-column schema (version 1.2.0) and the schema check.
//! - [`validate`]: row rules (required fields, safe `run_id`, CRS canonicalisation via
//!   [`crs`]); runs over the whole input before anything is published. [`rules`]: value
//!   rules shared by every format (time range, leap seconds, NUL) and quoting in messages;
//!   [`conform`]: binary input's columns matched to the contract by name.
//! - [`writer`]: groups rows into flushes per (run_id, target_crs), encodes each once
//!   ([`encode`]: Parquet + sha256 and BLAKE3 in memory, in parallel; [`digest`]), publishes
//!   the part and then its [`pointer`], create-only, reading back after ambiguous answers.
//! - [`publish`]: the [`publish::AtomicPublisher`] trait and its backends (POSIX, memory,
//!   S3/Azure/GCS through `object_store`, a fault-injecting wrapper); [`store`] turns a
//!   `--store` URL into one (object-store URLs and credentials in `store::cloud`).
//! - [`stream`]: bounded-memory appends (read twice: validate, then commit) and the
//!   [`stream::Sink`] for jobs that emit events as they go.
//! - [`commit_key`]: idempotent appends for retried jobs (`--commit-key`).
//! - [`keys`]: the object layout; every key is built and classified there.
//! - [`audit`]: the read side: `log`, `verify`, seals with RFC 9162 Merkle roots and
//!   Ed25519 signatures, inclusion proofs, `repair` of orphans and `sweep` of stale temps.
//! - [`history`]: the index, head markers, hash tiles and leaf locators that keep `log`,
//!   `seal`, `prove` and `verify --since-seal` O(new + log n) at any age.
//! - [`replicate`]: copy a store to another (any backend to any backend), and compare a
//!   replica with its source; [`witness`]: heads recorded in a second store.
//! - [`export`]: lineage out to other tools: OpenLineage run events (NDJSON, optionally
//!   posted to an endpoint) and ISO 19115-3 / ISO 19139 `LI_Lineage` metadata.
//! - [`cli`]: one file per command; `src/bin/lineage.rs` only calls [`cli::main`].
//! - [`error`]: one error enum and its mapping to kinds and exit codes.
//! - [`clock`]: injected time and id generation; [`demo`]: sample events.

pub mod audit;
pub mod base;
#[cfg(feature = "cli")]
pub mod cli;
pub mod export;
pub mod format;
pub mod history;
pub mod parts;
pub mod publish;
pub mod replicate;
pub mod schema;
pub mod witness;
pub mod write;

pub use base::error::{Error, ErrorKind, Result};
pub use publish::{AtomicPublisher, Outcome};
pub use write::writer::Writer;

//! lineage-store: an append-only, tamper-evident history of lineage events as Parquet,
//! on a local disk or on object stores.
//!
//! ```no_run
//! # async fn run() -> lineage_store::Result<()> {
//! use lineage_store::{open, verify, Writer};
//! let store = open("/data/lineage", &Default::default()).await?;
//! let batches = lineage_store::generate_demo_events(1_000, 2, 7)?;
//! Writer::new(store.clone()).append(&batches, |_| {}).await?;
//! let report = verify(store.as_ref()).await?;
//! assert!(report.is_clean());
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! The modules are layers. Each imports only layers below it (modules of one layer do not
//! import each other), and no two files import each other, directly or through others:
//! `tests/it/layering.rs` reads every `use` line and path and fails on an upward import or a
//! circle. docs/architecture.md describes each layer; from the bottom:
//!
//! 1. `base`: errors and their one mapping to kinds and exit codes, the parameters a
//!    message names ([`Param`], [`Text`]: each front end words them), the read limits a
//!    store carries ([`ReadLimits`]), refused input's list of errors, the injected clock
//!    and ids, digests (sha256, BLAKE3), time formats and durations, the encoder pool, a
//!    seeded rng. Imports nothing of ours.
//! 2. `schema`: the contract (15 columns, versions 1.2.0+), the row builder with its input
//!    positions, the value rules every format shares, CRS canonicalisation.
//! 3. `format`: the object layout (every key is built and classified here), the pointer,
//!    the commit-key claim, the Delta log's versions and checkpoints: pure data, no I/O.
//! 4. `publish`: the [`AtomicPublisher`] trait and its backends (POSIX, memory, S3 / Azure /
//!    GCS through `object_store`), [`open`]: the one way a store is opened, a URL and
//!    [`StoreOptions`] into a [`Store`] that carries its limits, and create-only
//!    publishing that reads back after an ambiguous answer.
//! 5. `parts`: encoding a flush as a Parquet part, and reading parts back in pieces
//!    (streamed digests, the footer, single column chunks, page headers checked before a
//!    page is decoded).
//! 6. `history`: the seal chain's objects (seals, Merkle trees, frontiers, hash tiles, leaf
//!    locators, head markers, the commit-time index), signing keys, reading pointers, and
//!    sealing, with each seal's Delta Lake version (and, when asked, its checkpoint).
//! 7. `write`: input formats, validation (every error of an input at once), checking an
//!    input without a store ([`check`]), streaming appends with bounded memory, commit
//!    keys, committing one flush, and the [`Writer`] façade. Beside it, `read`: the
//!    trusted read path, a [`snapshot()`] as of a seal and a [`scan()`] of it that checks
//!    every part against its sealed pointer.
//! 8. `audit`: the findings vocabulary, the chain walk, `log`, `verify` (one pipeline, full or
//!    since a seal, sharded), inclusion proofs, `repair` and `sweep`.
//! 9. Applications, each on its own: [`replicate`], [`witness`] (and beside it
//!    `witness::tlog`, outside C2SP witnesses that cosign each checkpoint), [`timestamp`] (a seal's
//!    time from an RFC 3161 TSA), [`export`], and
//!    [`compact`]: sealed commits merged into larger parts, every row accounted for in a
//!    compaction record that a seal puts into effect (its Delta version removes the
//!    sources with `dataChange` false and adds the compacted part).
//! 10. [`report`]: the audit report (HTML, Markdown, JSON): `verify` with its trust
//!     anchors and the witness check, then one streamed count over the trusted read.
//! 11. `cli` (feature `cli`): one file per command, one door through which each opens its
//!     stores, errors worded and mapped to exit codes in one place; `src/bin/lineage.rs`
//!     only calls `cli::main`. Clap lives only here.
//!
//! The layers are private; what users need is re-exported here. The project's own tests,
//! benches and fuzz targets reach further through `internal` (feature `internal-api`, with
//! the test doubles: a failure-injecting, an out-of-order-listing and a metering store),
//! which promises nothing.

// Without `internal-api`, the items only the project's own tests, benches and fuzz targets
// reach are unused: dead code is checked with the feature on (clippy of all targets enables
// it), where the crate is seen as those users see it.
#![cfg_attr(
    not(feature = "internal-api"),
    allow(dead_code, unused_imports, unreachable_pub)
)]
// Unit tests report failures by panicking, and may read the real clock (clippy.toml keeps the library behind its injected one).
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::disallowed_methods
    )
)]

mod audit;
mod base;
#[cfg(feature = "cli")]
pub mod cli;
pub mod compact;
pub mod export;
mod format;
mod history;
mod parts;
mod publish;
mod read;
pub mod replicate;
pub mod report;
mod schema;
pub mod timestamp;
pub mod witness;
mod write;

// Errors.
pub use base::cosign::CosignError;
pub use base::error::{Error, ErrorKind, Failed, Origin, Result};
pub use base::param::{Param, Piece, Text};
pub use base::rejection::{InputError, Place, Rejection, DEFAULT_MAX_ERRORS};

// Injected time and ids.
pub use base::clock::{Clock, FixedClock, IdGen, ManualClock, SeqIds, SystemClock, V7Ids};
pub use base::env::{Environment, MapEnv, ProcessEnv};

// The contract and its rules.
pub use schema::contract;
pub use schema::crs;

// Stores.
pub use base::limits::{
    ReadLimits, DEFAULT_MAX_DECODED_BYTES, DEFAULT_MAX_PAGE_BYTES, DEFAULT_MAX_SEAL_BYTES,
};
pub use publish::memory::MemoryPublisher;
pub use publish::object::{Backend, ObjectStorePublisher};
pub use publish::posix::PosixPublisher;
pub use publish::store::{open, Opening, SideEnv, Store, StoreOptions};
pub use publish::{AtomicPublisher, ObjectInfo, Outcome};

// Writing.
pub use format::pointer::{Pointer, POINTER_FORMAT};
pub use format::writer_record::{WriterRecord, PLATFORM_VARS};
pub use write::check::{check, check_batches, CheckOptions, CheckReport, PartitionSummary};
pub use write::demo::generate as generate_demo_events;
pub use write::input::batches::{validate_all, validate_all_listing, BatchValidator};
pub use write::input::{BatchSource, Format, Input};
pub use write::resume::Kept;
pub use write::stream::append::AppendSummary;
pub use write::stream::{Sink, SinkOptions, DEFAULT_MAX_BUFFERED_BYTES};
pub use write::writer::{Writer, DEFAULT_BATCH_ROWS, DEFAULT_CONCURRENCY, MAX_PART_BYTES};

// The store's identity.
pub use format::identity::StoreIdentity;
pub use history::identity::read_identity;

// Sealing and keys.
pub use history::pointers::{read_pointers, StoredPointer};
pub use history::seal::{Seal, SealEntry, StoredSeal, Trust};
pub use history::sealer::{
    seal, seal_with, DeltaConflict, IcebergOutcome, NotSealed, SealOptions, SealOutcome,
};

// The Delta Lake table the seals make.
/// The seal key's public half, as [`read_public_key`] reads it.
pub use ed25519_dalek::VerifyingKey;
pub use history::delta::delta_version;
pub use history::iceberg::locate::{newest_table as iceberg_table, IcebergTable};
pub use history::signing::{key_id, keygen, read_public_key, read_signing_key};

// Reading: a store as of a seal, every part checked against its sealed pointer.
pub use read::as_of::{parse_as_of_time, seal_as_of_time};
pub use read::listing::{part_listing, CommitListing, CompactionListing, PartListing};
pub use read::location::part_location;
pub use read::out::{
    scan_to_file, write_file as write_scan_file, write_stream as write_scan_stream, OutFormat,
};
pub use read::provenance::PROVENANCE_COLUMNS;
pub use read::{
    check_all, scan, snapshot, ReadOptions, Scan, ScanOptions, ScanReader, ScanStats, SealRange,
    SealRef, Snapshot, SnapshotPart, SnapshotSeal,
};

// Auditing.
pub use audit::anchor_outcome::{AnchorKind, AnchorOutcome, UNANCHORED};
pub use audit::anchors::{AnchorCheck, Anchors, WitnessAnchor};
pub use audit::cosigners::{KeyFound, WitnessKeys};
pub use audit::diff::{diff as diff_seals, AddedCommit, RunChange, SealDiff};
pub use audit::findings::{
    InFlight, InFlightKind, Problem, ProblemKind, Progress, Report, SealTime,
};
pub use audit::log::since_seal;
pub use audit::proof::c2sp::{
    is_compact_row_proof, to_compact_row_proof, to_tlog_proof, verify_compact_row_proof,
    verify_tlog_proof, CompactRowProof, COMPACT_ROW_PROOF_FORMAT,
};
pub use audit::proof::consistency::{
    prove_consistency, verify_consistency_proof, ConsistencySummary,
};
pub use audit::proof::{
    prove, prove_row, verify_proof, Proof, ProofSummary, ProveAgainst, RowEvidence, RowSummary,
};
pub use audit::repair::{repair, repair_with, Adoption, RepairOptions, RepairOutcome};
pub use audit::seals::{list_seals, SealList, SealSummary};
pub use audit::show::{show, CommitShown, SealShown, Shown};
pub use audit::sweep::{sweep, sweep_all, SweepOutcome};
pub use audit::verify::history::timestamps::TSA_TOLERANCE_SECONDS;
pub use audit::verify::options::{ShardSpec, VerifyOptions};
pub use audit::verify::platform::{ResolvedShard, ShardRequest};
pub use audit::verify::report_dir::{read_shard_reports, write_shard_report};
pub use audit::verify::shard::merge as merge_shard_reports;
pub use audit::verify::{verify, verify_with};
pub use base::digest::Check as DigestCheck;
pub use base::time::parse_duration;
pub use format::cosignature::{parse_vkey as parse_witness_vkey, Cosigner};
pub use format::timestamp::{parse_roots as parse_tsa_roots, Roots as TsaRoots};
pub use format::tlog_proof::is_tlog_proof;

// Conforming Arrow data to the contract, and what does not conform.
pub use write::conform;
pub use write::input::batches::conform as conform_batch;
pub use write::lossless;

// The seal chain's hashes, and where a commit's pointer is.
pub use format::keys::pointer_key;
pub use history::merkle;

/// What the project's own tests, benches and fuzz targets use beyond the API above: the
/// layers' inner pieces and the test doubles. Feature `internal-api`; no stability
/// promise; not for other users.
#[cfg(feature = "internal-api")]
#[doc(hidden)]
pub mod internal {
    pub use crate::audit::{
        chain, compaction_log, verify::platform, verify::report_dir, verify::shard,
    };
    pub use crate::base::{digest, time};
    pub use crate::format::{
        checkpoint, claim, compaction, consistency, cosignature, delta, delta_checkpoint,
        delta_stats, entries, iceberg, identity, keys, pointer, timestamp, tlog_proof,
        tlog_witness, writer_record,
    };
    pub use crate::history::checkpoint as sealed_checkpoint;
    pub use crate::history::cosignature as cosigned;
    pub use crate::history::delta::complete_log as complete_delta_log;
    pub use crate::history::delta_checkpoint::{
        write as write_delta_checkpoint, write_if_due as write_delta_checkpoint_if_due,
    };
    pub use crate::history::iceberg::complete_table as complete_iceberg_table;
    pub use crate::history::iceberg::locate::table_location;
    pub use crate::history::identity::ensure_identity;
    pub use crate::history::{complete, frontier, index, merkle, seal, signing, tiles};
    pub use crate::parts::{encode, multiset, pages, read as part, writer_sig};
    pub use crate::publish::{
        checked, disorderly, faulty, list_pages, metered, object, posix, require_objects, store,
    };
    pub use crate::read::prune;
    pub use crate::schema::events;
    pub use crate::write::{conform, input, lossless, validate};
}

/// The README's Rust examples, compiled by `cargo test --doc` so they keep to the public API.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

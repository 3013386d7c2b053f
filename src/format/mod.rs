//! The object layout and the formats of the objects: pure data, no I/O.

pub mod checkpoint;
pub mod claim;
pub mod compaction;
pub mod consistency;
pub mod cosignature;
pub mod delta;
pub mod delta_checkpoint;
pub mod delta_stats;
pub mod entries;
pub mod iceberg;
pub mod identity;
pub mod keys;
pub mod pointer;
pub mod timestamp;
pub mod tlog_proof;
pub mod tlog_witness;
pub mod writer_record;

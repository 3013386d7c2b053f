//! Each seal as an Iceberg snapshot (format version 2): the table metadata file
//! ([`metadata`]), manifests and manifest lists ([`manifest`]) in the Avro object container
//! encoding ([`avro`]). Pure data, no I/O; writing them is `crate::history::iceberg`.
//! Their keys are [`crate::format::keys::iceberg_metadata_key`] and beside it.

pub mod avro;
pub mod manifest;
pub mod metadata;

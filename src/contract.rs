//! The frozen 15-column Arrow contract (schema version 1.2.0).
//!
//! Names, order, types and nullability are exactly the design note's `LINEAGE_ARROW_SCHEMA`
//! (every field nullable, as `pa.schema([(name, type), ...])` makes them). Which fields may
//! actually be null is a rule of the contract checked row by row ([`REQUIRED`]), not a
//! property of the Arrow schema: changing Arrow nullability would make our files' schema
//! differ from what pyarrow readers of the design note expect.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};

/// The contract's version, written into every part's footer.
pub const SCHEMA_VERSION: &str = "1.2.0";
/// Footer key for the schema version.
pub const META_SCHEMA_VERSION: &str = "lineage_schema_version";
/// Footer key for the commit id.
pub const META_COMMIT_ID: &str = "lineage_commit_id";
/// The Hive partition keys, in path order.
pub const PARTITION_KEYS: [&str; 2] = ["run_id", "target_crs"];

/// Column indices, so code reads `col::RUN_ID` instead of a magic number.
#[allow(missing_docs)]
pub mod col {
    pub const EVENT_ID: usize = 0;
    pub const RUN_ID: usize = 1;
    pub const SEQUENCE: usize = 2;
    pub const EVENT_TIME_UTC: usize = 3;
    pub const STAGE: usize = 4;
    pub const EVENT_TYPE: usize = 5;
    pub const FEATURE_ID: usize = 6;
    pub const SOURCE_CRS: usize = 7;
    pub const TARGET_CRS: usize = 8;
    pub const OUTCOME: usize = 9;
    pub const STRATEGY_INDEX: usize = 10;
    pub const ACCURACY_M: usize = 11;
    pub const REJECTION_REASON: usize = 12;
    pub const TOOL_VERSION: usize = 13;
    pub const AUDIT_TAG: usize = 14;
}

/// The logical type of a column, as the input readers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// UTF-8 string.
    Str,
    /// 64-bit integer.
    I64,
    /// 32-bit integer.
    I32,
    /// 64-bit float.
    F64,
    /// Microsecond timestamp in UTC.
    TimestampUtc,
}

/// One column of the contract.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Field name.
    pub name: &'static str,
    /// Logical type.
    pub kind: Kind,
    /// Whether a row may carry null here.
    pub required: bool,
    /// What the column means (shown by `lineage schema`).
    pub doc: &'static str,
}

/// The 15 columns, in order.
pub const COLUMNS: [Column; 15] = [
    c(
        "event_id",
        Kind::Str,
        true,
        "unique id of the event (UUID recommended)",
    ),
    c(
        "run_id",
        Kind::Str,
        true,
        "the job run; partition key, a safe path segment",
    ),
    c(
        "sequence",
        Kind::I64,
        true,
        "position of the event within its run",
    ),
    c(
        "event_time_utc",
        Kind::TimestampUtc,
        true,
        "when it happened, microseconds, UTC",
    ),
    c("stage", Kind::Str, true, "pipeline stage, e.g. reproject"),
    c(
        "event_type",
        Kind::Str,
        true,
        "what was done, e.g. crs_transform",
    ),
    c(
        "feature_id",
        Kind::Str,
        true,
        "the feature transformed or rejected",
    ),
    c(
        "source_crs",
        Kind::Str,
        false,
        "CRS of the input, canonical EPSG:<code>",
    ),
    c(
        "target_crs",
        Kind::Str,
        true,
        "CRS of the output, canonical EPSG:<code>; partition key",
    ),
    c(
        "outcome",
        Kind::Str,
        true,
        "transformed or rejected (or another non-empty word)",
    ),
    c(
        "strategy_index",
        Kind::I32,
        false,
        "index of the transformation pipeline used",
    ),
    c(
        "accuracy_m",
        Kind::F64,
        false,
        "accuracy of the transformation in metres",
    ),
    c(
        "rejection_reason",
        Kind::Str,
        false,
        "why it was rejected; required when outcome is rejected",
    ),
    c(
        "tool_version",
        Kind::Str,
        true,
        "the tool that did the work",
    ),
    c(
        "audit_tag",
        Kind::Str,
        false,
        "free audit label, e.g. iso19115-li:2026Q3",
    ),
];

const fn c(name: &'static str, kind: Kind, required: bool, doc: &'static str) -> Column {
    Column {
        name,
        kind,
        required,
        doc,
    }
}

/// The Arrow type of a logical kind.
pub fn arrow_type(kind: Kind) -> DataType {
    match kind {
        Kind::Str => DataType::Utf8,
        Kind::I64 => DataType::Int64,
        Kind::I32 => DataType::Int32,
        Kind::F64 => DataType::Float64,
        Kind::TimestampUtc => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
    }
}

/// The contract schema, without metadata (shared, built once).
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            Arc::new(Schema::new(
                COLUMNS
                    .iter()
                    .map(|c| Field::new(c.name, arrow_type(c.kind), true))
                    .collect::<Vec<_>>(),
            ))
        })
        .clone()
}

/// The contract schema carrying a part's footer metadata (schema version and commit id),
/// so that readers find it both in the Parquet key-value metadata and in the Arrow schema.
pub fn schema_for_commit(commit_id: &str) -> SchemaRef {
    let meta = HashMap::from([
        (META_SCHEMA_VERSION.to_string(), SCHEMA_VERSION.to_string()),
        (META_COMMIT_ID.to_string(), commit_id.to_string()),
    ]);
    Arc::new(Schema::new_with_metadata(schema().fields().clone(), meta))
}

/// Check that `other` is the contract: same names in the same order with the same types.
/// A non-nullable field where the contract allows null is accepted (it is stricter);
/// metadata is ignored. The error names the first differing field and both types.
pub fn check_schema(other: &Schema) -> Result<()> {
    let ours = schema();
    for (i, want) in ours.fields().iter().enumerate() {
        let Some(got) = other.fields().get(i) else {
            return Err(Error::Schema(format!(
                "field {} `{}` ({}) is missing: the input has only {} fields",
                i + 1,
                want.name(),
                want.data_type(),
                other.fields().len()
            )));
        };
        if got.name() != want.name() {
            return Err(Error::Schema(format!(
                "field {} is `{}` ({}), the contract expects `{}` ({})",
                i + 1,
                got.name(),
                got.data_type(),
                want.name(),
                want.data_type()
            )));
        }
        if got.data_type() != want.data_type() {
            return Err(Error::Schema(format!(
                "field {} `{}` has type {}, the contract expects {} (no implicit cast is made)",
                i + 1,
                want.name(),
                got.data_type(),
                want.data_type()
            )));
        }
    }
    if let Some(extra) = other.fields().get(ours.fields().len()) {
        return Err(Error::Schema(format!(
            "field {} `{}` ({}) is not in the contract, which has {} fields",
            ours.fields().len() + 1,
            extra.name(),
            extra.data_type(),
            ours.fields().len()
        )));
    }
    Ok(())
}

//! The Arrow contract: a registry of versions, starting with the frozen 15-column 1.2.0.
//!
//! Names, order, types and nullability of 1.2.0 are exactly the design note's
//! `LINEAGE_ARROW_SCHEMA` (every field nullable, as `pa.schema([(name, type), ...])` makes
//! them). Which fields may actually be null is a rule of the contract checked row by row
//! ([`Column::required`]), not a property of the Arrow schema: changing Arrow nullability
//! would make our files' schema differ from what pyarrow readers of the design note expect.
//!
//! # Versions
//!
//! A later version of major 1 is 1.2.0's columns, unchanged and in order, followed by new
//! columns that are all nullable (not required): so every reader of an older version reads a
//! newer part's columns it knows, and a reader of the union schema reads an older part with
//! nulls in the added columns. A removed, renamed or retyped column (or a new required one)
//! is a contract change that needs a new major version, and is refused ([`register_version`]).
//! Every part records its version in its footer; `verify` accepts every registered version.
//!
//! A release appends to [`RELEASED`] an entry `("1.4.0", &[...])` listing only the columns
//! it adds (each `required: false`), and documents them (docs/input.md). 1.3.0 is released
//! ([`COLUMNS_1_3_0`]: which coordinate operation ran, the grids it used, whether it was
//! degraded, and the input dataset). Code that needs a version without shipping it
//! (tests, a downstream build) calls [`register_version`] at start-up.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::base::error::{Error, Result};

/// The first, frozen version (the columns of [`COLUMNS`]). What `append` writes by default
/// is [`newest`]; the version of a part is in its footer.
pub const SCHEMA_VERSION: &str = "1.2.0";
/// The version that adds [`COLUMNS_1_3_0`]: the newest the text readers and the row
/// builder know ([`crate::schema::events::EventBuilder`]).
pub const SCHEMA_VERSION_1_3_0: &str = "1.3.0";
/// Footer key for the schema version.
pub const META_SCHEMA_VERSION: &str = "lineage_schema_version";
/// Footer key for the commit id.
pub const META_COMMIT_ID: &str = "lineage_commit_id";
/// Footer key for the id of the store the part was written to (its
/// `_lineage/store.json`), in parts written since part encoding 3: what lets `repair`
/// tell a part of this store from one copied in from another.
pub const META_STORE_ID: &str = "lineage_store_id";
/// Arrow field metadata key the Parquet writer turns into a column's field id.
pub const PARQUET_FIELD_ID: &str = "PARQUET:field_id";

/// The column id of the column at `index` (0-based) of the contract: `index + 1`. Every
/// version is the one before plus columns appended at the end, so positions never change
/// and the id of a column is fixed by the version that introduced it; 1.2.0's 15 columns
/// are ids 1 to 15, the first column a later version adds is 16, and so on.
pub fn field_id(index: usize) -> i32 {
    i32::try_from(index).map_or(i32::MAX, |i| i.saturating_add(1))
}

/// The Hive partition keys, in path order.
pub const PARTITION_KEYS: [&str; 2] = ["run_id", "target_crs"];

/// Column indices, so code reads `col::RUN_ID` instead of a magic number.
pub mod col {
    /// `event_id`.
    pub const EVENT_ID: usize = 0;
    /// `run_id`.
    pub const RUN_ID: usize = 1;
    /// `sequence`.
    pub const SEQUENCE: usize = 2;
    /// `event_time_utc`.
    pub const EVENT_TIME_UTC: usize = 3;
    /// `stage`.
    pub const STAGE: usize = 4;
    /// `event_type`.
    pub const EVENT_TYPE: usize = 5;
    /// `feature_id`.
    pub const FEATURE_ID: usize = 6;
    /// `source_crs`.
    pub const SOURCE_CRS: usize = 7;
    /// `target_crs`.
    pub const TARGET_CRS: usize = 8;
    /// `outcome`.
    pub const OUTCOME: usize = 9;
    /// `strategy_index`.
    pub const STRATEGY_INDEX: usize = 10;
    /// `accuracy_m`.
    pub const ACCURACY_M: usize = 11;
    /// `rejection_reason`.
    pub const REJECTION_REASON: usize = 12;
    /// `tool_version`.
    pub const TOOL_VERSION: usize = 13;
    /// `audit_tag`.
    pub const AUDIT_TAG: usize = 14;
    /// `operation_code` (1.3.0).
    pub const OPERATION_CODE: usize = 15;
    /// `operation_name` (1.3.0).
    pub const OPERATION_NAME: usize = 16;
    /// `grids` (1.3.0).
    pub const GRIDS: usize = 17;
    /// `degraded` (1.3.0).
    pub const DEGRADED: usize = 18;
    /// `input_dataset` (1.3.0).
    pub const INPUT_DATASET: usize = 19;
    /// `input_version` (1.3.0).
    pub const INPUT_VERSION: usize = 20;
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
    /// Boolean (`true` / `false`).
    Bool,
}

/// One column of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// The 15 columns of 1.2.0, in order.
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
        "CRS of the output, canonical EPSG:<code>; partition key; for an event that changes no CRS (schema mapping) the data's CRS, unchanged",
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
        "position of the operation used in PROJ's candidate list on the machine that ran it (not comparable across machines or PROJ versions: use operation_code)",
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

/// The columns 1.3.0 adds to 1.2.0, in order (ids 16 to 21), all nullable: which
/// coordinate operation ran, the grids it used, whether it was the best available, and
/// what the feature came from.
pub const COLUMNS_1_3_0: [Column; 6] = [
    c(
        "operation_code",
        Kind::Str,
        false,
        "the coordinate operation's authority code (EPSG:1175), else PROJ-SHA256:<hex> of its PROJ definition",
    ),
    c(
        "operation_name",
        Kind::Str,
        false,
        "the operation's name, e.g. NAD27 to WGS 84 (6)",
    ),
    c(
        "grids",
        Kind::Str,
        false,
        "grid files the operation used, PROJ short names separated by one space; empty: none; null: unknown",
    ),
    c(
        "degraded",
        Kind::Bool,
        false,
        "true when the best operation for the area was not available (a missing grid) and a less accurate one ran",
    ),
    c(
        "input_dataset",
        Kind::Str,
        false,
        "the dataset the feature came from",
    ),
    c(
        "input_version",
        Kind::Str,
        false,
        "the version of that dataset",
    ),
];

/// The columns whose empty string is a value (not refused as "use null"): `grids`, where
/// empty means "no grid used" and null "unknown".
pub const EMPTY_IS_A_VALUE: [&str; 1] = ["grids"];

/// The name of column `index` of 1.3.0 (1.2.0's then the ones 1.3.0 adds): the columns
/// the text readers know.
pub fn column_name(index: usize) -> Option<&'static str> {
    known_columns().nth(index).map(|c| c.name)
}

/// The columns the text readers and the row builder know, in order: 1.2.0's
/// ([`COLUMNS`]) then those 1.3.0 adds ([`COLUMNS_1_3_0`]).
pub fn known_columns() -> impl Iterator<Item = &'static Column> {
    COLUMNS.iter().chain(COLUMNS_1_3_0.iter())
}

/// How many columns [`known_columns`] has.
pub const KNOWN_COLUMNS: usize = COLUMNS.len() + COLUMNS_1_3_0.len();

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
        Kind::Bool => DataType::Boolean,
    }
}

/// The 1.2.0 schema, without metadata (shared, built once).
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

/// The 1.2.0 schema carrying a part's footer metadata (schema version and commit id),
/// so that readers find it both in the Parquet key-value metadata and in the Arrow schema.
pub fn schema_for_commit(commit_id: &str) -> SchemaRef {
    base().schema_for_commit(commit_id)
}

/// Check that `other` is the 1.2.0 schema (see [`check_schema_against`]).
pub fn check_schema(other: &Schema) -> Result<()> {
    check_schema_against(&schema(), other)
}

/// Check that `other` is `ours`: same names in the same order with the same types.
/// A non-nullable field where the contract allows null is accepted (it is stricter);
/// metadata is ignored. The error names the first differing field and both types.
pub fn check_schema_against(ours: &Schema, other: &Schema) -> Result<()> {
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

/// Released versions after 1.2.0, oldest first: each lists only the columns it adds to the
/// version before it (all nullable).
pub const RELEASED: &[(&str, &[Column])] = &[(SCHEMA_VERSION_1_3_0, &COLUMNS_1_3_0)];

/// One registered version of the contract.
#[derive(Debug, Clone)]
pub struct ContractVersion {
    /// `MAJOR.MINOR.PATCH`, as written into footers and pointers.
    pub version: String,
    /// Its columns, in order (1.2.0's first).
    pub columns: Vec<Column>,
    parsed: (u64, u64, u64),
    schema: SchemaRef,
}

impl ContractVersion {
    fn new(version: &str, columns: Vec<Column>) -> Result<Self> {
        let parsed = parse_version(version)?;
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|c| Field::new(c.name, arrow_type(c.kind), true))
                .collect::<Vec<_>>(),
        ));
        Ok(ContractVersion {
            version: version.to_string(),
            columns,
            parsed,
            schema,
        })
    }

    /// Its Arrow schema, without metadata.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The column ids of its columns, in order: the id of a column is its position in the
    /// contract counting from 1 ([`field_id`]). Versions only append columns, so a column's
    /// id is the same in every version that has it (stable forever) and a new version's
    /// columns take new ids. Written as `PARQUET:field_id` by part encoding 4 and as the
    /// field ids of the Iceberg schema.
    pub fn field_ids(&self) -> Vec<i32> {
        (0..self.columns.len()).map(field_id).collect()
    }

    /// `schema` (this version's, as [`Self::schema_for_part`] gives it) with each field
    /// carrying its column id under [`PARQUET_FIELD_ID`].
    pub fn with_field_ids(&self, schema: &Schema) -> SchemaRef {
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut meta = f.metadata().clone();
                meta.insert(PARQUET_FIELD_ID.to_string(), field_id(i).to_string());
                f.as_ref().clone().with_metadata(meta)
            })
            .collect();
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// Its schema carrying a part's footer metadata (this version and the commit id).
    pub fn schema_for_commit(&self, commit_id: &str) -> SchemaRef {
        self.schema_for_part(commit_id, None)
    }

    /// Its schema carrying a part's footer metadata: this version, the commit id and, when
    /// given, the id of the store the part is written to.
    pub fn schema_for_part(&self, commit_id: &str, store_id: Option<&str>) -> SchemaRef {
        let mut meta = HashMap::from([
            (META_SCHEMA_VERSION.to_string(), self.version.clone()),
            (META_COMMIT_ID.to_string(), commit_id.to_string()),
        ]);
        if let Some(id) = store_id {
            meta.insert(META_STORE_ID.to_string(), id.to_string());
        }
        Arc::new(Schema::new_with_metadata(
            self.schema.fields().clone(),
            meta,
        ))
    }
}

fn parse_version(v: &str) -> Result<(u64, u64, u64)> {
    let bad = || Error::Schema(format!("{v:?} is not a MAJOR.MINOR.PATCH version"));
    let mut it = v.split('.').map(|p| {
        if p.is_empty()
            || !p.bytes().all(|b| b.is_ascii_digit())
            || (p.len() > 1 && p.starts_with('0'))
        {
            None
        } else {
            p.parse::<u64>().ok()
        }
    });
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(Some(a)), Some(Some(b)), Some(Some(c)), None) => Ok((a, b, c)),
        _ => Err(bad()),
    }
}

fn registry() -> &'static RwLock<Vec<Arc<ContractVersion>>> {
    static REGISTRY: OnceLock<RwLock<Vec<Arc<ContractVersion>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut versions = vec![Arc::new(
            ContractVersion::new(SCHEMA_VERSION, COLUMNS.to_vec())
                .unwrap_or_else(|_| unreachable!("1.2.0 is a valid version")),
        )];
        for (v, added) in RELEASED {
            let prev = &versions[versions.len() - 1];
            let mut cols = prev.columns.clone();
            cols.extend_from_slice(added);
            match additive(prev, v, &cols) {
                Ok(next) => versions.push(Arc::new(next)),
                // A bad RELEASED entry is a bug caught by the tests; never half-register.
                Err(e) => tracing::error!("contract version {v} not registered: {e}"),
            }
        }
        RwLock::new(versions)
    })
}

/// Every registered version, oldest first.
pub fn versions() -> Vec<Arc<ContractVersion>> {
    registry().read().map(|r| r.clone()).unwrap_or_default()
}

fn base() -> Arc<ContractVersion> {
    versions()
        .into_iter()
        .next()
        .unwrap_or_else(|| unreachable!("1.2.0 is always registered"))
}

/// The newest registered version: what `append` writes by default.
pub fn newest() -> Arc<ContractVersion> {
    versions().pop().unwrap_or_else(base)
}

/// The registered version `v`.
pub fn version(v: &str) -> Result<Arc<ContractVersion>> {
    let all = versions();
    all.iter().find(|c| c.version == v).cloned().ok_or_else(|| {
        Error::Schema(format!(
            "schema version {v} is not registered (registered: {})",
            names(&all)
        ))
    })
}

fn names(all: &[Arc<ContractVersion>]) -> String {
    all.iter()
        .map(|c| c.version.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The registered version whose columns `other` has (names, order, types; metadata
/// ignored). Versions differ in their columns, so at most one matches. The error names
/// the first difference from the newest version.
pub fn version_of_schema(other: &Schema) -> Result<Arc<ContractVersion>> {
    let all = versions();
    for v in all.iter().rev() {
        if check_schema_against(&v.schema, other).is_ok() {
            return Ok(v.clone());
        }
    }
    let newest = all.last().cloned().unwrap_or_else(base);
    match check_schema_against(&newest.schema, other) {
        Err(Error::Schema(m)) if all.len() > 1 => Err(Error::Schema(format!(
            "{m} (schema version {}; none of the registered versions {} matches)",
            newest.version,
            names(&all)
        ))),
        Err(e) => Err(e),
        Ok(()) => Ok(newest),
    }
}

/// Register version `v` with all its `columns` (the newest version's, unchanged and in
/// order, then at least one new nullable column). Anything else — a removed, renamed,
/// retyped or reordered column, a new required column, a version not above the newest, or
/// another major — is refused as a contract change that needs a new major version.
/// Registering the same version with the same columns again is a no-op.
pub fn register_version(v: &str, columns: &[Column]) -> Result<Arc<ContractVersion>> {
    let mut reg = registry()
        .write()
        .map_err(|_| Error::internal("contract registry poisoned"))?;
    if let Some(existing) = reg.iter().find(|c| c.version == v) {
        if existing.columns == columns {
            return Ok(existing.clone());
        }
        return Err(Error::Schema(format!(
            "schema version {v} is registered with other columns"
        )));
    }
    let newest = reg[reg.len() - 1].clone();
    let next = Arc::new(additive(&newest, v, columns)?);
    reg.push(next.clone());
    Ok(next)
}

/// Check that `v` with `columns` is an additive successor of `prev`.
fn additive(prev: &ContractVersion, v: &str, columns: &[Column]) -> Result<ContractVersion> {
    let parsed = parse_version(v)?;
    let major = |why: String| {
        Error::Schema(format!(
            "contract change refused for {v}: {why}; that needs a new major version ({}.0.0), which is a new contract, not a version of this one",
            prev.parsed.0 + 1
        ))
    };
    if parsed.0 != prev.parsed.0 {
        return Err(major(format!(
            "major {} differs from {}'s",
            parsed.0, prev.version
        )));
    }
    if parsed <= prev.parsed {
        return Err(Error::Schema(format!(
            "schema version {v} is not newer than {}",
            prev.version
        )));
    }
    if let Some(why) = changed_column(prev, columns) {
        return Err(major(why));
    }
    let added = &columns[prev.columns.len().min(columns.len())..];
    if added.is_empty() {
        return Err(Error::Schema(format!(
            "schema version {v} adds no column to {}",
            prev.version
        )));
    }
    for (i, c) in added.iter().enumerate() {
        if c.required {
            return Err(major(format!(
                "new column `{}` is required (a new column must be nullable)",
                c.name
            )));
        }
        if columns[..prev.columns.len() + i]
            .iter()
            .any(|o| o.name == c.name)
        {
            return Err(Error::Schema(format!(
                "schema version {v} has column `{}` twice",
                c.name
            )));
        }
    }
    ContractVersion::new(v, columns.to_vec())
}

/// How a column of `prev` is removed, renamed, moved, retyped or made (not) required in
/// `columns`, if one is: the first such change.
fn changed_column(prev: &ContractVersion, columns: &[Column]) -> Option<String> {
    for (i, old) in prev.columns.iter().enumerate() {
        match columns.iter().position(|c| c.name == old.name) {
            None => {
                return Some(match columns.get(i) {
                    Some(c) if !prev.columns.iter().any(|o| o.name == c.name) => format!(
                        "column {} `{}` of {} is renamed to `{}`",
                        i + 1,
                        old.name,
                        prev.version,
                        c.name
                    ),
                    _ => format!("column `{}` of {} is removed", old.name, prev.version),
                })
            }
            Some(j) if j != i => {
                return Some(format!(
                    "column `{}` moves from position {} to {}",
                    old.name,
                    i + 1,
                    j + 1
                ))
            }
            Some(j) => {
                let c = &columns[j];
                if c.kind != old.kind || c.required != old.required {
                    return Some(format!(
                        "column `{}` changes from {:?}{} to {:?}{}",
                        old.name,
                        old.kind,
                        if old.required { " required" } else { "" },
                        c.kind,
                        if c.required { " required" } else { "" }
                    ));
                }
            }
        }
    }
    None
}

/// Batches of the version `from` as version `to`: the same batches when equal; with the
/// columns `to` adds appended as nulls when `to` is a later version. Refused when `to`
/// lacks columns of `from` (that would drop values).
pub fn conform(
    batches: Vec<arrow_array::RecordBatch>,
    from: &ContractVersion,
    to: &ContractVersion,
) -> Result<Vec<arrow_array::RecordBatch>> {
    if from.version == to.version {
        return Ok(batches);
    }
    if to.columns.len() < from.columns.len() || to.columns[..from.columns.len()] != from.columns[..]
    {
        return Err(Error::Schema(format!(
            "the input is schema version {} and cannot be written as {}: it has columns {} lacks ({})",
            from.version,
            to.version,
            to.version,
            from.columns[to.columns.len().min(from.columns.len())..]
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    batches
        .into_iter()
        .map(|b| {
            let mut cols = b.columns().to_vec();
            for c in &to.columns[from.columns.len()..] {
                cols.push(arrow_array::new_null_array(
                    &arrow_type(c.kind),
                    b.num_rows(),
                ));
            }
            Ok(arrow_array::RecordBatch::try_new(to.schema(), cols)?)
        })
        .collect()
}

/// The version an append writes: `requested` when given; else, for typed input (Arrow,
/// Parquet: the schema says which version it is), the input's own version (of its first
/// batch); else the newest (a text reader's batch is the oldest version that holds its
/// values: 1.2.0, or 1.3.0 when a row has a value in a column 1.3.0 adds; the columns a
/// later version adds are null). Returns `batches` conformed to it ([`conform`]).
pub fn for_append(
    batches: Vec<arrow_array::RecordBatch>,
    requested: Option<&str>,
    typed: bool,
) -> Result<(Arc<ContractVersion>, Vec<arrow_array::RecordBatch>)> {
    let requested = requested.map(version).transpose()?;
    let Some(first) = batches.first() else {
        return Ok((requested.unwrap_or_else(newest), batches));
    };
    let input = version_of_schema(first.schema().as_ref())?;
    let target = append_target(requested.as_ref(), typed, &input);
    // Each batch from its own version: the text readers make a batch of 1.2.0 when none
    // of its rows has a value in a column 1.3.0 adds.
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let from = version_of_schema(b.schema().as_ref())?;
        out.extend(conform(vec![b], &from, &target)?);
    }
    Ok((target, out))
}

/// The version an append of `input`-version rows writes (see [`for_append`]): `requested`
/// when given, else `input` for typed input, else the newest.
pub fn append_target(
    requested: Option<&Arc<ContractVersion>>,
    typed: bool,
    input: &Arc<ContractVersion>,
) -> Arc<ContractVersion> {
    match requested {
        Some(v) => v.clone(),
        None if typed => input.clone(),
        None => newest(),
    }
}

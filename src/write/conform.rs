//! Binary input (Arrow IPC, Parquet) matched to a registered contract version by column
//! names, and what counts as empty input.
//!
//! Accepted where the values are the same, re-encoded losslessly:
//! - columns by name, in any order (a table built from a dict in another order);
//! - a string column as `LargeUtf8`, `Utf8View` or dictionary-encoded (of any of the three),
//!   as pyarrow and Polars write them; stored as `Utf8`;
//! - `event_time_utc` as microseconds with its zone spelled `UTC`, `+00:00`, `Z` or
//!   `Etc/UTC`; stored as `UTC`;
//! - non-nullable fields (stricter than the contract).
//!
//! Refused, naming the field and both types: a missing, extra or duplicated column, and any
//! other type (an `Int32` sequence, milliseconds, a time without zone): casting those could
//! change a value or hide a drifted producer. Every column that differs is named in one
//! refusal, each with the cast (pyarrow, Polars, SQL) that makes it the contract's type,
//! and a hint for conforming the whole table when casts would.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema, TimeUnit};

use crate::base::error::{Error, Result};
use crate::base::rejection::{Collector, InputError, Place};
use crate::schema::contract::{self, ContractVersion, Kind};
use crate::schema::rules::cut;
use crate::write::input::format::Format;

/// Zone names that mean UTC, for `event_time_utc`.
const UTC_NAMES: [&str; 4] = ["UTC", "+00:00", "Z", "Etc/UTC"];

/// Whether `bytes` hold no events at all: nothing, or (for the text formats) only white
/// space after an optional byte-order mark. Appending no events is a no-op.
pub fn is_empty_input(bytes: &[u8], format: Format) -> bool {
    match format {
        Format::Ndjson | Format::Csv => bytes
            .strip_prefix(b"\xef\xbb\xbf")
            .unwrap_or(bytes)
            .iter()
            .all(u8::is_ascii_whitespace),
        Format::Arrow | Format::Parquet => bytes.is_empty(),
    }
}

/// How each contract column is taken from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// The column as it is.
    Same,
    /// A string column in another encoding, re-encoded as `Utf8`.
    Str,
    /// A UTC timestamp whose zone is spelled differently, relabelled `UTC`.
    Utc,
}

/// Where each contract column comes from in an input schema, and which registered
/// contract version the input is.
#[derive(Debug, Clone)]
pub struct Plan {
    from: Vec<(usize, Take)>,
    version: Arc<ContractVersion>,
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The registered version whose column names are closest to `names` (exactly them when the
/// input is well-formed); on a tie the newest, so errors speak of the current contract.
fn closest_version(names: &[&str]) -> Arc<ContractVersion> {
    contract::versions()
        .into_iter()
        .rev()
        .min_by_key(|v| {
            let extra = names
                .iter()
                .filter(|n| !v.columns.iter().any(|c| c.name == **n))
                .count();
            let missing = v
                .columns
                .iter()
                .filter(|c| !names.contains(&c.name))
                .count();
            extra + missing
        })
        .unwrap_or_else(contract::newest)
}

/// Match `input` to a registered contract version by column names (see the module docs),
/// or refuse it naming every column that differs at once (missing, extra, duplicated,
/// of another type: the type found, the type expected and the cast that would fix it),
/// with a hint for conforming the whole table when casts would.
pub fn plan(input: &Schema) -> Result<Plan> {
    let fields = input.fields();
    let mut errors = Collector::new(0);
    let schema_error =
        |field: &str, reason: String| InputError::new(Place::Schema, Some(field), None, reason);
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    let version = closest_version(&names);
    let n = version.columns.len();
    let column_of = |name: &str| version.columns.iter().position(|c| c.name == name);
    let mut castable = true;
    let mut extra = false;
    for (i, f) in fields.iter().enumerate() {
        if let Some(first) = fields[..i].iter().position(|g| g.name() == f.name()) {
            castable = false;
            errors.push(
                schema_error(
                    f.name(),
                    format!(
                        "field {} `{}` appears twice (also field {})",
                        i + 1,
                        cut(f.name()),
                        first + 1
                    ),
                ),
                column_of(f.name()).unwrap_or(usize::MAX),
            );
        } else if column_of(f.name()).is_none() {
            extra = true;
            let hint = match crate::schema::rules::meant(f.name()) {
                Some(name) if !names.contains(&name) => format!("; did you mean `{name}`?"),
                _ => String::new(),
            };
            errors.push(
                schema_error(
                    &cut(f.name()),
                    format!(
                        "field {} `{}` ({}) is not in the contract, which has {n} fields{hint}",
                        i + 1,
                        cut(f.name()),
                        f.data_type(),
                    ),
                ),
                usize::MAX,
            );
        }
    }
    let ours = version.schema();
    let mut from = Vec::with_capacity(n);
    let mut casts: Vec<(&str, &'static str)> = Vec::new();
    for (ci, want) in ours.fields().iter().enumerate() {
        let Some((i, got)) = input.column_with_name(want.name()) else {
            castable = false;
            errors.push(
                schema_error(
                    want.name(),
                    format!(
                        "the input lacks field `{}` ({}): every one of the {n} fields must be present (all null for no values)",
                        want.name(),
                        want.data_type(),
                    ),
                ),
                ci,
            );
            continue;
        };
        let take = match (want.data_type(), got.data_type()) {
            (w, g) if w == g => Take::Same,
            (DataType::Utf8, g) if is_string(g) => Take::Str,
            (DataType::Utf8, DataType::Dictionary(_, v)) if is_string(v) => Take::Str,
            (
                DataType::Timestamp(TimeUnit::Microsecond, _),
                DataType::Timestamp(TimeUnit::Microsecond, Some(tz)),
            ) if UTC_NAMES.contains(&tz.as_ref()) => Take::Utc,
            (w, g) => {
                let kind = version.columns[ci].kind;
                let fix = cast_fix(g, kind);
                castable &= fix.cast;
                if fix.cast {
                    casts.push((want.name().as_str(), polars_type(kind)));
                }
                errors.push(
                    schema_error(
                        want.name(),
                        format!(
                            "field {} `{}` has type {g}, the contract expects {w}: {}",
                            i + 1,
                            want.name(),
                            fix.how
                        ),
                    ),
                    ci,
                );
                continue;
            }
        };
        from.push((i, take));
    }
    if !errors.is_empty() {
        errors.hint(conform_hint(&version, castable, extra, &casts));
    }
    errors.finish()?;
    Ok(Plan { from, version })
}

/// How a column of type `got` becomes the contract's `kind`, and whether a plain cast
/// does it (safe casts refuse values that do not fit, so nothing is changed silently).
struct Fix {
    how: String,
    cast: bool,
}

/// The type of a contract kind in pyarrow, Polars and SQL.
fn type_names(kind: Kind) -> (&'static str, &'static str, &'static str) {
    match kind {
        Kind::Str => ("pa.string()", "pl.String", "VARCHAR"),
        Kind::I64 => ("pa.int64()", "pl.Int64", "BIGINT"),
        Kind::I32 => ("pa.int32()", "pl.Int32", "INTEGER"),
        Kind::F64 => ("pa.float64()", "pl.Float64", "DOUBLE"),
        Kind::TimestampUtc => (
            "pa.timestamp(\"us\", tz=\"UTC\")",
            "pl.Datetime(\"us\", \"UTC\")",
            "TIMESTAMPTZ",
        ),
    }
}

fn polars_type(kind: Kind) -> &'static str {
    type_names(kind).1
}

fn cast_fix(got: &DataType, kind: Kind) -> Fix {
    let (pa, pl, sql) = type_names(kind);
    let cast = |what: &str| Fix {
        how: format!("{what} (pyarrow `{pa}`, Polars `{pl}`, SQL `{sql}`)"),
        cast: true,
    };
    match (got, kind) {
        (DataType::Null, _) => cast("an all-null column of type null; cast it"),
        (DataType::FixedSizeBinary(16), Kind::Str) => Fix {
            how: "16 bytes, a UUID? Write its text form (SQL `CAST(… AS VARCHAR)`, Python `str(uuid.UUID(bytes=b))`)".into(),
            cast: false,
        },
        (g, Kind::TimestampUtc) if is_string(g) => Fix {
            how: "times as text; parse them (pyarrow `pc.cast(col, pa.timestamp(\"us\", tz=\"UTC\"))`, Polars `.str.to_datetime(time_unit=\"us\", time_zone=\"UTC\")`, SQL `CAST(… AS TIMESTAMPTZ)`)".into(),
            cast: false,
        },
        (DataType::Timestamp(_, None), Kind::TimestampUtc) => Fix {
            how: "times without a zone are ambiguous; if they are UTC, say so (pyarrow `pc.assume_timezone(col, \"UTC\")`, Polars `.dt.replace_time_zone(\"UTC\")`) and cast to microseconds".into(),
            cast: false,
        },
        (DataType::Timestamp(_, Some(_)), Kind::TimestampUtc) => {
            cast("cast it to microseconds in UTC, the same instants")
        }
        (g, Kind::I32 | Kind::I64) if g.is_integer() => {
            cast("cast it; a safe cast refuses values that do not fit")
        }
        (g, Kind::F64) if g.is_numeric() => cast("cast it"),
        (g, Kind::Str) if is_string(g) => cast("cast it"),
        _ => Fix {
            how: format!("convert it (pyarrow `{pa}`, Polars `{pl}`, SQL `{sql}`); nothing is cast implicitly"),
            cast: false,
        },
    }
}

/// What conforms a whole table, when casts do.
fn conform_hint(
    version: &ContractVersion,
    castable: bool,
    extra: bool,
    casts: &[(&str, &str)],
) -> String {
    let base = format!(
        "the contract ({} columns, version {}) is what `lineage schema` prints; nothing is cast implicitly",
        version.columns.len(),
        version.version
    );
    if !castable {
        return base;
    }
    let mut fix = format!(
        "{base}. A pyarrow table conforms with `table.select(lineage_store.SCHEMA.names).cast(lineage_store.SCHEMA)`"
    );
    if !casts.is_empty() {
        let dict: Vec<String> = casts.iter().map(|(n, t)| format!("\"{n}\": {t}")).collect();
        let select = if extra {
            ".drop(<the extra columns>)"
        } else {
            ""
        };
        fix.push_str(&format!(
            ", a Polars frame with `df{select}.cast({{{}}})`",
            dict.join(", ")
        ));
    }
    fix
}

impl Plan {
    /// The registered contract version the input is.
    pub fn version(&self) -> &Arc<ContractVersion> {
        &self.version
    }

    /// The batch in its contract version's schema (no metadata).
    pub fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let cols = self
            .from
            .iter()
            .map(|&(i, take)| {
                let col = batch.column(i);
                match take {
                    Take::Same => Ok(col.clone()),
                    Take::Str => to_utf8(col),
                    Take::Utc => Ok(Arc::new(
                        col.as_primitive::<TimestampMicrosecondType>()
                            .clone()
                            .with_timezone("UTC"),
                    ) as ArrayRef),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(self.version.schema(), cols)?)
    }
}

/// A string column of any accepted encoding as `Utf8`, value for value.
fn to_utf8(col: &ArrayRef) -> Result<ArrayRef> {
    if let Some(d) = col.as_any_dictionary_opt() {
        let values = to_utf8(d.values())?;
        return Ok(arrow_select::take::take(values.as_ref(), d.keys(), None)?);
    }
    let out: StringArray = match col.data_type() {
        DataType::Utf8 => return Ok(col.clone()),
        DataType::LargeUtf8 => return narrow_large_utf8(col),
        DataType::Utf8View => {
            let s = col.as_string_view();
            let total: usize = s.iter().flatten().map(str::len).sum();
            check_fits(total)?;
            s.iter().collect()
        }
        other => {
            return Err(Error::Internal(format!(
                "conform: {other} is not a string type"
            )))
        }
    };
    Ok(Arc::new(out))
}

/// `LargeUtf8` → `Utf8` without copying the strings: the values buffer is shared, only
/// the offsets are narrowed (a pyarrow or Polars table handed over in memory stays where it is).
fn narrow_large_utf8(col: &ArrayRef) -> Result<ArrayRef> {
    let large = col.as_string::<i64>();
    check_fits(large.value_data().len())?;
    let offsets = large
        .offsets()
        .iter()
        .map(|&o| i32::try_from(o))
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| Error::Internal("conform: offsets beyond i32 after check_fits".into()))?;
    Ok(Arc::new(StringArray::try_new(
        arrow_buffer::OffsetBuffer::new(offsets.into()),
        large.values().clone(),
        large.nulls().cloned(),
    )?))
}

/// `Utf8` offsets are 32-bit: a batch of more string bytes cannot be re-encoded.
fn check_fits(bytes: usize) -> Result<()> {
    if bytes > i32::MAX as usize {
        return Err(Error::Schema(format!(
            "a string column of {bytes} bytes in one batch is over the 2 GiB a Utf8 column holds; write smaller batches"
        )));
    }
    Ok(())
}

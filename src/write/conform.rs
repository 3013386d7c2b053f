//! Binary input (Arrow IPC, Parquet, batches in memory) matched to a registered contract
//! version by column names, and what counts as empty input.
//!
//! Accepted where the values are the same, re-encoded losslessly:
//! - columns by name, in any order (a table built from a dict in another order);
//! - a string column as `LargeUtf8`, `Utf8View` or dictionary-encoded (of any of the three),
//!   as pyarrow and Polars write them; stored as `Utf8`;
//! - `event_time_utc` as microseconds with any valid zone (`UTC`, `+00:00`, `Z`,
//!   `Etc/UTC`, `Europe/Berlin`, `+05:30`, ...): an Arrow timestamp with a zone holds UTC
//!   instants whatever zone labels it (DuckDB labels `TIMESTAMPTZ` with its session's
//!   zone), so the values are kept and relabelled `UTC`;
//! - a column of type `Null` (pyarrow's and Polars' type for a column that is all `None`):
//!   it can hold nothing but nulls, so it is the contract's type, all null; a required
//!   field then fails the row rule (`row 1, field ...: is null, but the contract requires
//!   a value`);
//! - non-nullable fields (stricter than the contract).
//!
//! Refused, naming every differing field at once with both types: a missing, extra or
//! duplicated column, and any other type (an `Int32` sequence, milliseconds, a time
//! without zone): casting those could change a value or hide a drifted producer. Each
//! differing column is one error of the refusal (through the rejection collector, as the
//! text readers report lines), with the cast (pyarrow, Polars, SQL) that makes it the
//! contract's type, and the refusal ends with a hint for conforming the whole table when
//! casts would. A caller who wants the lossless conversions made says so
//! ([`crate::write::lossless`]).
//!
//! The schema is checked even when the input has no rows (an Arrow file or stream with a
//! schema and no batches, an empty table): one rule for the CLI and the Python package.
//! Only input without any schema (no bytes at all) is "no events" without a check.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::timezone::Tz;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema, TimeUnit};

use crate::base::error::{Error, Origin as ErrOrigin, Result};
use crate::base::rejection::{Collector, InputError, Place};
use crate::schema::contract::{self, ContractVersion, Kind};
use crate::schema::rules::cut;
use crate::write::input::format::Format;

/// Zone names that mean UTC, for `event_time_utc` (also those Arrow's zone parser does not
/// know, such as `Z`).
const UTC_NAMES: [&str; 4] = ["UTC", "+00:00", "Z", "Etc/UTC"];

/// Whether `tz` is a zone an Arrow timestamp may carry: a UTC spelling, an IANA name or a
/// fixed offset (`+05:30`).
pub fn is_valid_zone(tz: &str) -> bool {
    UTC_NAMES.contains(&tz) || tz.parse::<Tz>().is_ok()
}

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
    /// A timestamp in microseconds labelled with another zone, relabelled `UTC`.
    Utc,
    /// A `Null` column: the contract's type, all null.
    Null,
}

/// Where each contract column comes from in an input schema, and which registered
/// contract version the input is.
#[derive(Debug, Clone)]
pub struct Plan {
    from: Vec<(usize, Take)>,
    version: Arc<ContractVersion>,
}

/// One way an input schema differs from the contract.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// A column name appears more than once (`index`: 0-based, of the repetition).
    Duplicate {
        /// Position in the input.
        index: usize,
        /// Position of its first appearance.
        first: usize,
        /// The name.
        name: String,
    },
    /// A column the contract does not have.
    Extra {
        /// Position in the input.
        index: usize,
        /// The name.
        name: String,
        /// Its type.
        got: DataType,
        /// The contract's field it is probably a misspelling of, when the input lacks
        /// that field.
        meant: Option<&'static str>,
    },
    /// A contract column the input lacks.
    Missing {
        /// The name.
        name: String,
        /// The contract's type.
        want: DataType,
    },
    /// A column of another type.
    Type {
        /// Position in the input.
        index: usize,
        /// The name.
        name: String,
        /// Its type.
        got: DataType,
        /// The contract's type.
        want: DataType,
    },
}

impl Mismatch {
    /// The field it is about.
    pub fn field(&self) -> &str {
        match self {
            Mismatch::Duplicate { name, .. }
            | Mismatch::Extra { name, .. }
            | Mismatch::Missing { name, .. }
            | Mismatch::Type { name, .. } => name,
        }
    }

    /// The difference in words; with `fields` (the contract's number of fields), as the
    /// refusal words it.
    fn describe(&self, fields: Option<usize>) -> String {
        match self {
            Mismatch::Duplicate { index, first, name } => format!(
                "field {} `{}` appears twice (also field {})",
                index + 1,
                cut(name),
                first + 1
            ),
            Mismatch::Extra {
                index,
                name,
                got,
                meant,
            } => {
                let which = fields.map(|n| format!(", which has {n} fields")).unwrap_or_default();
                let meant = meant
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                format!(
                    "field {} `{}` ({got}) is not in the contract{which}{meant}",
                    index + 1,
                    cut(name)
                )
            }
            Mismatch::Missing { name, want } => match fields {
                Some(n) => format!(
                    "the input lacks field `{name}` ({want}): every one of the {n} fields must be present (all null for no values)"
                ),
                None => format!("the input lacks field `{name}` ({want})"),
            },
            Mismatch::Type {
                index,
                name,
                got,
                want,
            } => format!(
                "field {} `{name}` has type {got}, the contract expects {want}",
                index + 1
            ),
        }
    }
}

/// The difference in a few words (the refusal adds how to fix it).
impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(None))
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The registered version an input with columns `names` is taken as: the oldest that has
/// every contract column among them (exactly its columns when the input is well-formed; a
/// 1.2.0 table with `operation_code` is a 1.3.0 table that lacks the other columns 1.3.0
/// adds, not a 1.2.0 table with an extra column). Names of no version do not count.
pub(crate) fn closest_version(names: &[&str]) -> Arc<ContractVersion> {
    let all = contract::versions();
    let Some(newest) = all.last() else {
        return contract::newest();
    };
    let known: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| newest.columns.iter().any(|c| c.name == *n))
        .collect();
    all.iter()
        .find(|v| known.iter().all(|n| v.columns.iter().any(|c| c.name == *n)))
        .cloned()
        .unwrap_or_else(|| newest.clone())
}

/// How a column of type `got` is taken as the contract's `want`, if it can be as it is.
fn take(want: &DataType, got: &DataType) -> Option<Take> {
    Some(match (want, got) {
        (w, g) if w == g => Take::Same,
        (_, DataType::Null) => Take::Null,
        (DataType::Utf8, g) if is_string(g) => Take::Str,
        (DataType::Utf8, DataType::Dictionary(_, v)) if is_string(v) => Take::Str,
        (
            DataType::Timestamp(TimeUnit::Microsecond, _),
            DataType::Timestamp(TimeUnit::Microsecond, Some(tz)),
        ) if is_valid_zone(tz) => Take::Utc,
        _ => return None,
    })
}

/// Every way `input` differs from the registered contract version closest to it (nothing
/// when it can be taken as it is, see the module docs), and that version; in the order the
/// refusal lists them: by the contract's column order (a duplicated column at its
/// field), then the columns the contract does not have, in input order.
pub fn mismatches(input: &Schema) -> (Arc<ContractVersion>, Vec<Mismatch>) {
    match check(input) {
        Ok(plan) => (plan.version, Vec::new()),
        Err((version, found)) => (version, found),
    }
}

/// The contract column a mismatch is about, for ordering (`usize::MAX`: not in it).
fn column_of(version: &ContractVersion, name: &str) -> usize {
    version
        .columns
        .iter()
        .position(|c| c.name == name)
        .unwrap_or(usize::MAX)
}

fn check(input: &Schema) -> std::result::Result<Plan, (Arc<ContractVersion>, Vec<Mismatch>)> {
    let fields = input.fields();
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    let version = closest_version(&names);
    let mut found = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        if let Some(first) = fields[..i].iter().position(|g| g.name() == f.name()) {
            found.push(Mismatch::Duplicate {
                index: i,
                first,
                name: f.name().clone(),
            });
        } else if !version.columns.iter().any(|c| c.name == f.name()) {
            found.push(Mismatch::Extra {
                index: i,
                name: f.name().clone(),
                got: f.data_type().clone(),
                meant: crate::schema::rules::meant(f.name()).filter(|m| !names.contains(m)),
            });
        }
    }
    let ours = version.schema();
    let mut from = Vec::with_capacity(ours.fields().len());
    for want in ours.fields() {
        let Some((i, got)) = input.column_with_name(want.name()) else {
            found.push(Mismatch::Missing {
                name: want.name().clone(),
                want: want.data_type().clone(),
            });
            continue;
        };
        match take(want.data_type(), got.data_type()) {
            Some(t) => from.push((i, t)),
            None => found.push(Mismatch::Type {
                index: i,
                name: want.name().clone(),
                got: got.data_type().clone(),
                want: want.data_type().clone(),
            }),
        }
    }
    if found.is_empty() {
        Ok(Plan { from, version })
    } else {
        // Stable: duplicates before the type of the same column, extras in input order.
        found.sort_by_key(|m| column_of(&version, m.field()));
        Err((version, found))
    }
}

/// The refusal of `found` (not empty): every difference at once, one [`InputError`] each
/// (the type found, the type expected and the cast that would fix it in pyarrow, Polars
/// and SQL), with a hint for conforming the whole table when casts would
/// ([`Error::Rejected`]).
pub fn mismatch_error(version: &ContractVersion, found: &[Mismatch]) -> Error {
    let n = version.columns.len();
    let mut errors = Collector::new(0);
    let mut castable = true;
    let mut extra = false;
    let mut casts: Vec<(&str, &'static str)> = Vec::new();
    for m in found {
        let column = column_of(version, m.field());
        let mut reason = m.describe(Some(n));
        let mut field = m.field().to_string();
        match m {
            Mismatch::Duplicate { .. } | Mismatch::Missing { .. } => castable = false,
            Mismatch::Extra { name, .. } => {
                extra = true;
                field = cut(name);
            }
            Mismatch::Type { name, got, .. } => {
                let kind = version.columns[column].kind;
                let fix = cast_fix(got, kind);
                castable &= fix.cast;
                if fix.cast {
                    casts.push((name.as_str(), polars_type(kind)));
                }
                reason = format!("{reason}: {}", fix.how);
            }
        }
        errors.push(
            InputError::new(Place::Schema, Some(&field), None, reason),
            column,
        );
    }
    errors.hint(conform_hint(version, castable, extra, &casts));
    match errors.finish() {
        Err(e) => e,
        Ok(()) => Error::internal("conform: a refusal without a difference"),
    }
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
        Kind::Bool => ("pa.bool_()", "pl.Boolean", "BOOLEAN"),
    }
}

fn polars_type(kind: Kind) -> &'static str {
    type_names(kind).1
}

/// The fix for a column of type `got` (never `Null`, nor a type taken as it is: those are
/// accepted, see the module docs).
fn cast_fix(got: &DataType, kind: Kind) -> Fix {
    let (pa, pl, sql) = type_names(kind);
    let cast = |what: &str| Fix {
        how: format!("{what} (pyarrow `{pa}`, Polars `{pl}`, SQL `{sql}`)"),
        cast: true,
    };
    match (got, kind) {
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
        (DataType::Timestamp(_, Some(tz)), Kind::TimestampUtc) if !is_valid_zone(tz) => Fix {
            how: format!(
                "`{}` is not a time zone (an IANA name such as `Europe/Berlin`, an offset such as `+05:30`, or `UTC`); label the times with the zone they are in",
                cut(tz)
            ),
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
    // `SCHEMA` is 1.2.0's; a later version's schema is `contract_schema(version)`.
    let schema = if version.version == contract::SCHEMA_VERSION {
        "lineage_store.SCHEMA".to_string()
    } else {
        format!("lineage_store.contract_schema(\"{}\")", version.version)
    };
    let mut fix = format!(
        "{base}. A pyarrow table conforms with `table.select({schema}.names).cast({schema})`"
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

/// Match `input` to a registered contract version by column names (see the module docs),
/// or refuse it naming every column that differs at once ([`mismatch_error`]).
pub fn plan(input: &Schema) -> Result<Plan> {
    check(input).map_err(|(version, found)| mismatch_error(&version, &found))
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
            .enumerate()
            .map(|(out, &(i, take))| {
                let col = batch.column(i);
                match take {
                    Take::Same => Ok(col.clone()),
                    Take::Str => to_utf8(col),
                    Take::Utc => Ok(Arc::new(
                        col.as_primitive::<TimestampMicrosecondType>()
                            .clone()
                            .with_timezone("UTC"),
                    ) as ArrayRef),
                    Take::Null => Ok(arrow_array::new_null_array(
                        self.version.schema().field(out).data_type(),
                        col.len(),
                    )),
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
        // The caller's dictionary: keys outside its values are refused input.
        return arrow_select::take::take(values.as_ref(), d.keys(), None)
            .map_err(|e| Error::arrow(ErrOrigin::Input, e));
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
            return Err(Error::internal(format!(
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
        .map_err(|_| Error::internal("conform: offsets beyond i32 after check_fits"))?;
    StringArray::try_new(
        arrow_buffer::OffsetBuffer::new(offsets.into()),
        large.values().clone(),
        large.nulls().cloned(),
    )
    .map(|a| Arc::new(a) as ArrayRef)
    .map_err(|e| Error::arrow(ErrOrigin::Input, e))
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

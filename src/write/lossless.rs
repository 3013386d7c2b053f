//! Lossless conversions a caller asks for explicitly (the Python package's
//! `lineage_store.conform`): input whose types are not the contract's, converted to them
//! where no value can change, checked value by value; anything lossy is refused naming the
//! row and field. Appending never converts by itself ([`crate::write::conform`]).
//!
//! Each column is converted to the contract's type for its name:
//! - any integer type to `Int32` / `Int64`, every value checked to fit;
//! - a floating-point column to an integer type when every value is integral and fits
//!   (pandas holds an integer column with missing values as `float64`; its NaN arrive in
//!   Arrow as nulls; a NaN that is still a NaN is refused);
//! - an integer to `Float64` when exact (|v| ≤ 2^53); `Float16` / `Float32` to `Float64`
//!   (always exact: the same number, which may print with more digits);
//! - a `Decimal128` (DuckDB's `0.02` is `DECIMAL(3,2)`) to `Float64` when the float64
//!   nearest it, written back in its shortest form, is the same decimal (`0.02` is; a
//!   20-digit decimal is not), or to an integer type when integral and it fits;
//! - a timestamp with any valid zone, in seconds, milliseconds, microseconds or
//!   nanoseconds, to microseconds labelled `UTC` (the same instants): nanoseconds only
//!   when no value has a sub-microsecond part, seconds and milliseconds checked for
//!   overflow;
//! - `Null` to the contract's type (all null), and every re-encoding `append` accepts by
//!   itself (string layouts, zone labels).
//!
//! Refused: a missing, extra or duplicated column (nothing is invented or dropped unless
//! asked, see [`Reshape`]); a timestamp without a zone (which zone its times are in would
//! be a guess); any other pair of types (a string for a number, ...). Every such field is
//! named at once, one error each ([`Error::Rejected`], each at the schema).
//!
//! Asked for ([`Reshape`]): a nullable column the input lacks is added, all null
//! (`fill_missing`; never a required one), and a column that is in no registered version
//! is dropped (`drop_extra`). With `fill_missing` the input is conformed to the oldest
//! registered version that has every contract column it holds (a 1.2.0 table with
//! `operation_code` becomes 1.3.0, the other columns 1.3.0 adds null).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::base::error::{Error, Result};
use crate::base::rejection::{Collector, InputError, Place};
use crate::schema::contract::{self, ContractVersion};
use crate::write::conform::{self, Mismatch};

/// What [`plan_with`] may do beyond converting types (both off: [`plan`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reshape {
    /// Add each nullable contract column the input lacks, all null.
    pub fill_missing: bool,
    /// Drop each column that is in no registered contract version.
    pub drop_extra: bool,
}

/// What was done to one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The field.
    pub field: String,
    /// Its type in the input.
    pub from: DataType,
    /// The contract's type.
    pub to: DataType,
    /// Why no value changed.
    pub how: &'static str,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.from, &self.to) {
            (DataType::Null, to) if self.how == ADDED => {
                write!(
                    f,
                    "`{}`: added as {to}, all null ({})",
                    self.field, self.how
                )
            }
            (from, DataType::Null) if self.how == DROPPED => {
                write!(f, "`{}`: {from}, dropped ({})", self.field, self.how)
            }
            (from, to) => write!(f, "`{}`: {from} → {to} ({})", self.field, self.how),
        }
    }
}

/// Why a column was added ([`Reshape::fill_missing`]).
const ADDED: &str = "a nullable column the input lacks";
/// Why a column was dropped ([`Reshape::drop_extra`]).
const DROPPED: &str = "not a column of any contract version";

/// A conversion checked value by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conv {
    /// Integer to integer, each value checked to fit.
    Int,
    /// Floating point to integer, each value integral and fitting.
    FloatToInt,
    /// Integer to float64, each value exact.
    IntToFloat,
    /// Float16/32 to float64.
    Widen,
    /// Decimal to float64, each value exact.
    DecToFloat,
    /// Decimal to integer, each value integral and fitting.
    DecToInt,
    /// Timestamp in another unit (zone any) to µs.
    Time(TimeUnit),
}

fn is_int(t: &DataType) -> bool {
    t.is_integer()
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// How `got` converts to `want` losslessly (value by value), or why it cannot.
fn conv(want: &DataType, got: &DataType) -> std::result::Result<(Conv, &'static str), String> {
    use DataType as D;
    let ok = match (want, got) {
        (D::Int32 | D::Int64, g) if is_int(g) => (Conv::Int, "every value fits"),
        (D::Int32 | D::Int64, g) if is_float(g) => (
            Conv::FloatToInt,
            "every value is a whole number that fits; NaN as null is null",
        ),
        (D::Int32 | D::Int64, D::Decimal128(..)) => {
            (Conv::DecToInt, "every value is a whole number that fits")
        }
        (D::Float64, g) if is_int(g) => (Conv::IntToFloat, "every value is exact in float64"),
        (D::Float64, D::Float16 | D::Float32) => (Conv::Widen, "float64 holds every value exactly"),
        (D::Float64, D::Decimal128(..)) => (
            Conv::DecToFloat,
            "every value is exactly the float64 written the same way",
        ),
        (D::Timestamp(TimeUnit::Microsecond, _), D::Timestamp(_, None)) => {
            return Err(
                "has no time zone: which zone its times are in would be a guess; give it one (pandas `tz_localize`, Polars `dt.replace_time_zone`, SQL `timezone('UTC', ...)`)"
                    .into(),
            )
        }
        (D::Timestamp(TimeUnit::Microsecond, _), D::Timestamp(unit, Some(tz))) => {
            if !conform::is_valid_zone(tz) {
                return Err(format!("has time zone {tz:?}, which is not a valid zone"));
            }
            (
                Conv::Time(*unit),
                match unit {
                    TimeUnit::Nanosecond => "no value has a sub-microsecond part; the same instants, in UTC",
                    _ => "the same instants, in UTC",
                },
            )
        }
        _ => return Err("has no lossless conversion to it".into()),
    };
    Ok(ok)
}

/// Whether a column of type `got` converts to the contract's `want` losslessly, values
/// permitting (see the module docs).
pub fn can_convert(want: &DataType, got: &DataType) -> bool {
    conv(want, got).is_ok()
}

/// How an input is conformed: columns converted value by value, then taken as `append`
/// takes them.
#[derive(Debug, Clone)]
pub struct Lossless {
    shape: Shape,
    /// The input's schema as `shape` takes it.
    shaped: SchemaRef,
    convs: Vec<(usize, Conv, DataType)>,
    version: Arc<ContractVersion>,
    changes: Vec<Change>,
    /// The input's schema after the conversions (before `append`'s own re-encodings).
    converted: SchemaRef,
    plan: conform::Plan,
}

/// Plan the lossless conversions of `input` (see the module docs); refuses, naming every
/// field at once, what cannot be converted losslessly whatever its values.
pub fn plan(input: &Schema) -> Result<Lossless> {
    plan_with(input, Reshape::default())
}

/// [`plan`], adding missing nullable columns and dropping extra ones as `reshape` asks
/// (see the module docs).
pub fn plan_with(input: &Schema, reshape: Reshape) -> Result<Lossless> {
    let (shape, reshaped, mut changes) = shape_of(input, reshape);
    let input = &reshaped;
    let (version, found) = conform::mismatches(input);
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut convs = Vec::new();
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    for m in &found {
        match m {
            Mismatch::Type {
                index,
                name,
                got,
                want,
            } => match conv(want, got) {
                Ok((c, how)) => {
                    convs.push((*index, c, want.clone()));
                    fields[*index] = Field::new(name, want.clone(), true);
                    changes.push(Change {
                        field: name.clone(),
                        from: got.clone(),
                        to: want.clone(),
                        how,
                    });
                }
                Err(why) => refused.push((
                    name.clone(),
                    format!(
                        "field {} `{name}` ({got}) {why}; the contract expects {want}",
                        index + 1
                    ),
                )),
            },
            other => refused.push((other.field().to_string(), refusal(other, reshape))),
        }
    }
    if !refused.is_empty() {
        let mut errors = Collector::new(0);
        for (field, why) in refused {
            let column = version
                .columns
                .iter()
                .position(|c| c.name == field)
                .unwrap_or(usize::MAX);
            errors.push(
                InputError::new(
                    Place::Schema,
                    Some(&crate::schema::rules::cut(&field)),
                    None,
                    format!(
                        "cannot conform to the contract {} losslessly: {why}",
                        version.version
                    ),
                ),
                column,
            );
        }
        errors.finish()?;
    }
    let converted = Arc::new(Schema::new(fields));
    let plan = conform::plan(&converted)?;
    // In the contract's column order.
    let order = |f: &str| version.columns.iter().position(|c| c.name == f);
    changes.sort_by_key(|c| order(&c.field));
    Ok(Lossless {
        shape,
        shaped: Arc::new(reshaped.clone()),
        convs,
        version,
        changes,
        converted,
        plan,
    })
}

/// How the input's columns are taken before any conversion: each kept column by its
/// index in the input, then the added ones (all null, of the contract's type).
#[derive(Debug, Clone, Default)]
struct Shape {
    /// `None`: the input's columns as they are.
    keep: Option<Vec<usize>>,
    /// Columns added, all null.
    add: Vec<Field>,
}

/// The refusal of a mismatch no conversion fixes, with what `reshape` could do about it.
fn refusal(m: &Mismatch, reshape: Reshape) -> String {
    match m {
        Mismatch::Missing { .. } if !reshape.fill_missing => {
            format!("{m} (fill_missing adds a nullable column the input lacks, all null)")
        }
        Mismatch::Missing { .. } => {
            format!("{m}: a required column, which fill_missing does not invent")
        }
        Mismatch::Extra { .. } if !reshape.drop_extra => {
            format!("{m} (drop_extra drops a column that is in no contract version)")
        }
        other => other.to_string(),
    }
}

/// The input's schema as `reshape` takes it (see [`Shape`]), and what was done.
fn shape_of(input: &Schema, reshape: Reshape) -> (Shape, Schema, Vec<Change>) {
    let all = contract::versions();
    let Some(newest) = all.last() else {
        return (Shape::default(), input.clone(), Vec::new());
    };
    let known = |n: &str| newest.columns.iter().any(|c| c.name == n);
    let mut changes = Vec::new();
    let mut keep = Vec::new();
    for (i, f) in input.fields().iter().enumerate() {
        if reshape.drop_extra && !known(f.name()) {
            changes.push(Change {
                field: f.name().clone(),
                from: f.data_type().clone(),
                to: DataType::Null,
                how: DROPPED,
            });
        } else {
            keep.push(i);
        }
    }
    let mut fields: Vec<Field> = keep.iter().map(|&i| input.field(i).clone()).collect();
    let mut add = Vec::new();
    if reshape.fill_missing {
        let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        // The oldest version holding every contract column the input has.
        let target = all
            .iter()
            .find(|v| {
                names
                    .iter()
                    .filter(|n| known(n))
                    .all(|n| v.columns.iter().any(|c| c.name == *n))
            })
            .unwrap_or(newest);
        for c in target.columns.iter().filter(|c| !c.required) {
            if !names.contains(&c.name) {
                let want = contract::arrow_type(c.kind);
                changes.push(Change {
                    field: c.name.to_string(),
                    from: DataType::Null,
                    to: want,
                    how: ADDED,
                });
                add.push(Field::new(c.name, DataType::Null, true));
            }
        }
    }
    fields.extend(add.iter().cloned());
    let same = keep.len() == input.fields().len();
    let shape = Shape {
        keep: (!same).then_some(keep),
        add,
    };
    (shape, Schema::new(fields), changes)
}

impl Shape {
    /// `batch` as the shape takes it.
    fn apply(&self, batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
        if self.keep.is_none() && self.add.is_empty() {
            return Ok(batch.clone());
        }
        let mut cols: Vec<ArrayRef> = match &self.keep {
            Some(keep) => keep.iter().map(|&i| batch.column(i).clone()).collect(),
            None => batch.columns().to_vec(),
        };
        for _ in &self.add {
            cols.push(Arc::new(arrow_array::NullArray::new(batch.num_rows())));
        }
        Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?)
    }
}

impl Lossless {
    /// The conversions made, one per column `append` would refuse, in the contract's order.
    /// (What `append` takes as it is, string layouts, zone labels and `Null` columns, is
    /// re-encoded too, changing no value, and not listed.)
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// The contract version the input is conformed to.
    pub fn version(&self) -> &Arc<ContractVersion> {
        &self.version
    }

    /// `batch` in the contract's schema; `first_row` is the 1-based number of its first
    /// row in the whole input, for errors (`row 12, field `strategy_index`: ...`).
    pub fn apply(&self, batch: &RecordBatch, first_row: u64) -> Result<RecordBatch> {
        let batch = &self.shape.apply(batch, &self.shaped)?;
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        for (i, c, want) in &self.convs {
            let name = self.converted.field(*i).name();
            cols[*i] = convert(batch.column(*i), *c, want).map_err(|(row, why)| {
                Error::record(
                    format!("row {}, field `{name}`", first_row + row as u64),
                    why,
                )
            })?;
        }
        let converted = RecordBatch::try_new(self.converted.clone(), cols)?;
        self.plan.apply(&converted)
    }
}

/// A value that cannot be converted: its 0-based row in the batch and why.
type Lossy = (usize, String);

fn int_values(col: &dyn Array) -> Option<Vec<Option<i128>>> {
    macro_rules! ints {
        ($($t:ty),*) => {$(
            if let Some(a) = col.as_primitive_opt::<$t>() {
                return Some(a.iter().map(|v| v.map(i128::from)).collect());
            }
        )*};
    }
    ints!(Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type);
    None
}

fn float_values(col: &dyn Array) -> Option<Vec<Option<f64>>> {
    if let Some(a) = col.as_primitive_opt::<Float64Type>() {
        return Some(a.iter().collect());
    }
    if let Some(a) = col.as_primitive_opt::<Float32Type>() {
        return Some(a.iter().map(|v| v.map(f64::from)).collect());
    }
    if let Some(a) = col.as_primitive_opt::<Float16Type>() {
        return Some(a.iter().map(|v| v.map(|h| h.to_f64())).collect());
    }
    None
}

/// Integers as the contract's integer type, each checked.
fn to_int(values: Vec<Option<i128>>, want: &DataType) -> std::result::Result<ArrayRef, Lossy> {
    let (lo, hi) = match want {
        DataType::Int32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    };
    if let Some((row, v)) = values
        .iter()
        .enumerate()
        .find_map(|(r, v)| v.filter(|v| *v < lo || *v > hi).map(|v| (r, v)))
    {
        return Err((row, format!("{v} does not fit {want} ({lo} to {hi})")));
    }
    // In range: the narrowing casts below are exact.
    Ok(match want {
        DataType::Int32 => Arc::new(
            values
                .into_iter()
                .map(|v| v.map(|v| v as i32))
                .collect::<Int32Array>(),
        ),
        _ => Arc::new(
            values
                .into_iter()
                .map(|v| v.map(|v| v as i64))
                .collect::<Int64Array>(),
        ),
    })
}

/// The digits and power of ten of a decimal number, without trailing zeros (0 is `("0", 0)`).
fn normal(digits: &str, exp: i64) -> (String, i64) {
    let d = digits.trim_start_matches('0');
    if d.is_empty() {
        return ("0".into(), 0);
    }
    let t = d.trim_end_matches('0');
    (t.to_string(), exp + (d.len() - t.len()) as i64)
}

/// The float64 a decimal is exactly, if any: the nearest float64, written back in its
/// shortest round-trip form, must be the same decimal.
fn decimal_to_f64(v: i128, scale: i8) -> Option<f64> {
    let negative = v < 0;
    let digits = v.unsigned_abs().to_string();
    let want = normal(&digits, -i64::from(scale));
    let text = format!(
        "{}{}e{}",
        if negative { "-" } else { "" },
        digits,
        -i64::from(scale)
    );
    let f: f64 = text.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    // `{:e}` is the shortest representation that reads back as the same float64.
    let shortest = format!("{:e}", f.abs());
    let (mantissa, exp) = shortest.split_once('e')?;
    let exp: i64 = exp.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let got = normal(&format!("{int}{frac}"), exp - frac.len() as i64);
    (got == want && (f < 0.0) == (negative && want.0 != "0")).then_some(f)
}

fn decimal_text(v: i128, scale: i8) -> String {
    if scale <= 0 {
        return format!("{v}{}", "0".repeat(usize::from(scale.unsigned_abs())));
    }
    let s = usize::from(scale.unsigned_abs());
    let digits = format!("{:0>width$}", v.unsigned_abs(), width = s + 1);
    let (int, frac) = digits.split_at(digits.len() - s);
    format!("{}{int}.{frac}", if v < 0 { "-" } else { "" })
}

/// `col` converted as `c` plans, to `want`; the first value that would change is an error
/// (its row and why).
fn convert(col: &ArrayRef, c: Conv, want: &DataType) -> std::result::Result<ArrayRef, Lossy> {
    match c {
        Conv::Int => to_int(int_values(col).ok_or_else(|| internal("an integer"))?, want),
        Conv::FloatToInt => float_to_int(col, want),
        Conv::IntToFloat => int_to_float(col),
        Conv::Widen => Ok(Arc::new(
            float_values(col)
                .ok_or_else(|| internal("a float"))?
                .into_iter()
                .collect::<Float64Array>(),
        )),
        Conv::DecToFloat | Conv::DecToInt => {
            let a = col
                .as_primitive_opt::<Decimal128Type>()
                .ok_or_else(|| internal("a decimal"))?;
            if c == Conv::DecToFloat {
                dec_to_float(a)
            } else {
                dec_to_int(a, want)
            }
        }
        Conv::Time(unit) => time_to_micros(col, unit),
    }
}

/// The error of a column that is not of the type the plan found.
fn internal(what: &str) -> Lossy {
    (0, format!("internal: {what} is not the type planned"))
}

/// Floats that are whole numbers, to the integer type `want`.
fn float_to_int(col: &ArrayRef, want: &DataType) -> std::result::Result<ArrayRef, Lossy> {
    let vals = float_values(col).ok_or_else(|| internal("a float"))?;
    let mut out = Vec::with_capacity(vals.len());
    for (r, v) in vals.into_iter().enumerate() {
        out.push(match v {
            None => None,
            Some(f) if f.is_nan() => {
                return Err((
                    r,
                    "NaN is not a whole number (null is the value for none)".into(),
                ))
            }
            // Whole numbers up to 2^63 are exact in both; the range is checked below.
            Some(f) if f.fract() == 0.0 && f.abs() < 1e19 => Some(f as i128),
            Some(f) => return Err((r, format!("{f} is not a whole number"))),
        });
    }
    to_int(out, want)
}

/// Integers up to 2^53 in magnitude, to float64.
fn int_to_float(col: &ArrayRef) -> std::result::Result<ArrayRef, Lossy> {
    let vals = int_values(col).ok_or_else(|| internal("an integer"))?;
    const EXACT: i128 = 1 << 53;
    if let Some((r, v)) = vals
        .iter()
        .enumerate()
        .find_map(|(r, v)| v.filter(|v| v.abs() > EXACT).map(|v| (r, v)))
    {
        return Err((r, format!("{v} has no exact float64 (beyond 2^53)")));
    }
    Ok(Arc::new(
        vals.into_iter()
            .map(|v| v.map(|v| v as f64))
            .collect::<Float64Array>(),
    ))
}

/// Decimals that are exactly a float64, to float64.
fn dec_to_float(a: &arrow_array::Decimal128Array) -> std::result::Result<ArrayRef, Lossy> {
    let scale = a.scale();
    let mut out = Vec::with_capacity(a.len());
    for (r, v) in a.iter().enumerate() {
        out.push(match v {
            None => None,
            Some(v) => Some(decimal_to_f64(v, scale).ok_or_else(|| {
                (
                    r,
                    format!("{} has no exact float64", decimal_text(v, scale)),
                )
            })?),
        });
    }
    Ok(Arc::new(out.into_iter().collect::<Float64Array>()))
}

/// Decimals that are whole numbers, to the integer type `want`.
fn dec_to_int(
    a: &arrow_array::Decimal128Array,
    want: &DataType,
) -> std::result::Result<ArrayRef, Lossy> {
    let scale = a.scale();
    let mut out = Vec::with_capacity(a.len());
    for (r, v) in a.iter().enumerate() {
        out.push(match v {
            None => None,
            Some(v) => {
                let whole = if scale >= 0 {
                    let p = 10i128.checked_pow(u32::from(scale.unsigned_abs()));
                    p.filter(|p| v % p == 0).map(|p| v / p)
                } else {
                    10i128
                        .checked_pow(u32::from(scale.unsigned_abs()))
                        .and_then(|p| v.checked_mul(p))
                };
                Some(whole.ok_or_else(|| {
                    (
                        r,
                        format!("{} is not a whole number", decimal_text(v, scale)),
                    )
                })?)
            }
        });
    }
    to_int(out, want)
}

/// Timestamps in `unit` to UTC microseconds, each in range and (from nanoseconds) whole.
fn time_to_micros(col: &ArrayRef, unit: TimeUnit) -> std::result::Result<ArrayRef, Lossy> {
    let a: Vec<Option<i64>> = match unit {
        TimeUnit::Second => col
            .as_primitive_opt::<arrow_array::types::TimestampSecondType>()
            .map(|a| a.iter().collect()),
        TimeUnit::Millisecond => col
            .as_primitive_opt::<arrow_array::types::TimestampMillisecondType>()
            .map(|a| a.iter().collect()),
        TimeUnit::Microsecond => col
            .as_primitive_opt::<arrow_array::types::TimestampMicrosecondType>()
            .map(|a| a.iter().collect()),
        TimeUnit::Nanosecond => col
            .as_primitive_opt::<arrow_array::types::TimestampNanosecondType>()
            .map(|a| a.iter().collect()),
    }
    .ok_or_else(|| internal("a timestamp"))?;
    let mut out = Vec::with_capacity(a.len());
    for (r, v) in a.into_iter().enumerate() {
        let Some(v) = v else {
            out.push(None);
            continue;
        };
        let us = match unit {
            TimeUnit::Second => v.checked_mul(1_000_000),
            TimeUnit::Millisecond => v.checked_mul(1_000),
            TimeUnit::Microsecond => Some(v),
            TimeUnit::Nanosecond => {
                let sub = v.rem_euclid(1_000);
                if sub != 0 {
                    return Err((
                        r,
                        format!(
                            "{v} ns since 1970 has a sub-microsecond part ({sub} ns) that the contract's microseconds cannot hold"
                        ),
                    ));
                }
                Some(v.div_euclid(1_000))
            }
        };
        out.push(Some(us.ok_or_else(|| {
            (
                r,
                format!("{v} is out of the range of microseconds since 1970"),
            )
        })?));
    }
    Ok(Arc::new(
        TimestampMicrosecondArray::from(out).with_timezone("UTC"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_convert_only_when_the_float64_is_the_same_decimal() {
        assert_eq!(decimal_to_f64(2, 2), Some(0.02));
        assert_eq!(decimal_to_f64(-150, 2), Some(-1.5));
        assert_eq!(decimal_to_f64(0, 3), Some(0.0));
        assert_eq!(decimal_to_f64(12, -3), Some(12000.0));
        // 0.1 + 2^-60 needs more digits than float64 has.
        assert_eq!(decimal_to_f64(12_345_678_901_234_567_891, 20), None);
        assert_eq!(decimal_to_f64(9_007_199_254_740_993, 0), None); // 2^53 + 1
        assert_eq!(decimal_text(-5, 3), "-0.005");
        assert_eq!(decimal_text(12, -2), "1200");
    }

    #[test]
    fn timestamps_lose_nothing_or_are_refused_with_the_row() {
        use arrow_array::TimestampNanosecondArray;
        let ok: ArrayRef = Arc::new(
            TimestampNanosecondArray::from(vec![Some(1_000), None, Some(-2_000)])
                .with_timezone("Europe/Berlin"),
        );
        let want = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let got = convert(&ok, Conv::Time(TimeUnit::Nanosecond), &want).unwrap();
        let got = got.as_primitive::<arrow_array::types::TimestampMicrosecondType>();
        assert_eq!(
            got.iter().collect::<Vec<_>>(),
            vec![Some(1), None, Some(-2)]
        );
        let lossy: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![1_000, 1_001]));
        let (row, why) = convert(&lossy, Conv::Time(TimeUnit::Nanosecond), &want).unwrap_err();
        assert_eq!(row, 1);
        assert!(why.contains("sub-microsecond part (1 ns)"), "{why}");
    }

    #[test]
    fn integers_are_checked_for_range() {
        let col: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(1 << 40)]));
        let (row, why) = convert(&col, Conv::Int, &DataType::Int32).unwrap_err();
        assert_eq!(row, 2);
        assert!(why.starts_with("1099511627776 does not fit Int32"), "{why}");
        let col: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let got = convert(&col, Conv::Int, &DataType::Int32).unwrap();
        assert_eq!(
            got.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(),
            vec![Some(1), None]
        );
        let col: ArrayRef = Arc::new(Float64Array::from(vec![Some(2.0), None, Some(2.5)]));
        let (row, _) = convert(&col, Conv::FloatToInt, &DataType::Int32).unwrap_err();
        assert_eq!(row, 2);
    }
}

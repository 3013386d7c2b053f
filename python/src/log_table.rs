//! `Store.log()`: the pointers as one Arrow table (built here, handed to pyarrow through
//! the C data interface).

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use lineage_store::pointer_key;
use lineage_store::{Error, Pointer};
use pyo3::prelude::*;

use crate::errors::{IntoPyResult, LResult};

/// The columns of the log, in order (the pointer's fields; times as UTC timestamps).
pub fn schema() -> SchemaRef {
    let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let s = |n: &str| Field::new(n, DataType::Utf8, false);
    let i = |n: &str| Field::new(n, DataType::Int64, false);
    Arc::new(Schema::new(vec![
        s("commit_id"),
        s("run_id"),
        s("target_crs"),
        s("part_path"),
        i("row_count"),
        i("size_bytes"),
        s("schema_version"),
        s("sha256"),
        Field::new("blake3", DataType::Utf8, true),
        Field::new("committed_utc", ts.clone(), false),
        i("first_sequence"),
        i("last_sequence"),
        Field::new("min_event_time_utc", ts.clone(), false),
        Field::new("max_event_time_utc", ts, false),
        s("tool_version"),
        Field::new("commit_key", DataType::Utf8, true),
        Field::new("adopted", DataType::Boolean, false),
    ]))
}

fn micros(p: &Pointer, field: &str, v: &str) -> LResult<i64> {
    chrono::DateTime::parse_from_rfc3339(v)
        .map(|t| t.timestamp_micros())
        .map_err(|e| Error::Corrupt {
            what: "pointer",
            key: pointer_key(&p.run_id, &p.commit_id),
            message: format!("{field} {v:?} is not an RFC 3339 time: {e}").into(),
        })
}

fn count(p: &Pointer, field: &str, v: u64) -> LResult<i64> {
    i64::try_from(v).map_err(|_| Error::Corrupt {
        what: "pointer",
        key: pointer_key(&p.run_id, &p.commit_id),
        message: format!("{field} {v} is out of range").into(),
    })
}

/// The pointers as one record batch in [`schema`].
pub fn batch(pointers: &[Pointer]) -> LResult<RecordBatch> {
    let mut strs: Vec<StringBuilder> = (0..7).map(|_| StringBuilder::new()).collect();
    let mut ints: Vec<Int64Builder> = (0..4).map(|_| Int64Builder::new()).collect();
    let mut times: Vec<TimestampMicrosecondBuilder> = (0..3)
        .map(|_| TimestampMicrosecondBuilder::new().with_timezone("UTC"))
        .collect();
    let mut key = StringBuilder::new();
    let mut blake3 = StringBuilder::new();
    let mut adopted = BooleanBuilder::new();
    for p in pointers {
        for (b, v) in strs.iter_mut().zip([
            &p.commit_id,
            &p.run_id,
            &p.target_crs,
            &p.part_path,
            &p.schema_version,
            &p.sha256,
            &p.tool_version,
        ]) {
            b.append_value(v);
        }
        for (b, v) in ints.iter_mut().zip([
            count(p, "row_count", p.row_count)?,
            count(p, "size_bytes", p.size_bytes)?,
            p.first_sequence,
            p.last_sequence,
        ]) {
            b.append_value(v);
        }
        for (b, (f, v)) in times.iter_mut().zip([
            ("committed_utc", &p.committed_utc),
            ("min_event_time_utc", &p.min_event_time_utc),
            ("max_event_time_utc", &p.max_event_time_utc),
        ]) {
            b.append_value(micros(p, f, v)?);
        }
        key.append_option(p.commit_key.as_deref());
        blake3.append_option(p.blake3.as_deref());
        adopted.append_value(p.adopted);
    }
    let s: Vec<ArrayRef> = strs
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    let i: Vec<ArrayRef> = ints
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    let t: Vec<ArrayRef> = times
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    let columns = vec![
        s[0].clone(),
        s[1].clone(),
        s[2].clone(),
        s[3].clone(),
        i[0].clone(),
        i[1].clone(),
        s[4].clone(),
        s[5].clone(),
        Arc::new(blake3.finish()),
        t[0].clone(),
        i[2].clone(),
        i[3].clone(),
        t[1].clone(),
        t[2].clone(),
        s[6].clone(),
        Arc::new(key.finish()),
        Arc::new(adopted.finish()),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}

/// The pointers as a `pyarrow.Table`.
pub fn to_pyarrow<'py>(py: Python<'py>, pointers: &[Pointer]) -> PyResult<Bound<'py, PyAny>> {
    let b = batch(pointers).py_err(py)?;
    let table = Table::try_new(vec![b], schema())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    table.into_pyarrow(py)
}

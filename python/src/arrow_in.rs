//! Arrow data from Python, through the Arrow C data interface (the PyCapsule protocol):
//! `__arrow_c_stream__` (pyarrow Table / RecordBatchReader / RecordBatch, Polars DataFrame,
//! DuckDB relation, pandas DataFrame, ...) or `__arrow_c_array__` (a struct array: a record
//! batch). The buffers are the producer's, referenced, not copied; pyarrow is never
//! imported here.
//!
//! The producer's buffers are checked (`validate_full`: offsets in bounds, UTF-8) before
//! any row rule reads them: a buggy producer is refused, never trusted.
//!
//! Arrays are imported here rather than by `arrow-pyarrow` for one reason: Polars (like
//! arrow2 before it) exports a `Null` array with one buffer, a null pointer, where the C
//! data interface specifies none, and arrow-rs refuses that ("The datatype "Null" doesn't
//! expect buffer at index 0"), naming no field. A `Null` array whose every buffer is a null
//! pointer holds nothing, so it is taken as the zero-buffer array the specification
//! describes; then the contract's own rule names the field.

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use arrow_array::ffi::{from_ffi_and_data_type, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{DataType, Schema, SchemaRef};
use lineage_store::{Error, Result};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors;

/// The library a producer belongs to, for messages in the caller's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// pyarrow, or any other producer (fixes are spelled with pyarrow).
    Arrow,
    /// A pandas DataFrame.
    Pandas,
    /// A Polars DataFrame.
    Polars,
    /// A DuckDB relation.
    DuckDb,
}

impl Producer {
    /// The name `lineage_store._fixes` knows it by.
    pub fn name(self) -> &'static str {
        match self {
            Producer::Arrow => "pyarrow",
            Producer::Pandas => "pandas",
            Producer::Polars => "polars",
            Producer::DuckDb => "duckdb",
        }
    }
}

/// Imported Arrow data, not read yet.
#[derive(Debug)]
pub struct Source {
    /// The schema every batch has.
    pub schema: SchemaRef,
    /// Whose data it is.
    pub producer: Producer,
    /// Whether the producer holds all of the data in memory anyway (a table, a data frame,
    /// one batch), so batches can be kept without costing memory; `false` for streams
    /// computed as they are read (a `RecordBatchReader`, a DuckDB query, anything else).
    pub held: bool,
    from: From,
}

#[derive(Debug)]
enum From {
    /// An ArrowArrayStream: batches are pulled by [`Source::next_batch`].
    Stream(Box<FFI_ArrowArrayStream>),
    /// A single record batch (`__arrow_c_array__`).
    Batch(Option<RecordBatch>),
}

fn type_of(data: &Bound<'_, PyAny>) -> (String, String) {
    let t = data.get_type();
    let module = t
        .module()
        .map(|m| m.to_string())
        .unwrap_or_else(|_| String::new());
    let name = t
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    (module, name)
}

fn producer_of(module: &str) -> Producer {
    match module.split('.').next().unwrap_or_default() {
        "pandas" => Producer::Pandas,
        "polars" => Producer::Polars,
        "duckdb" | "_duckdb" => Producer::DuckDb,
        _ => Producer::Arrow,
    }
}

/// Kinds whose data is in memory whatever we do (the stream only hands it out).
fn held_in_memory(module: &str, name: &str) -> bool {
    matches!(
        (module.split('.').next().unwrap_or_default(), name),
        ("pyarrow", "Table" | "RecordBatch")
            | ("polars", "DataFrame")
            | ("pandas", "DataFrame")
            | ("lineage_store", "Conformed")
    )
}

/// Take `data` through the PyCapsule protocol (with the GIL held: this calls Python).
pub fn import(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Source> {
    let geometry = crate::geo_in::geometry_columns(py, data)?;
    if !geometry.is_empty() {
        return Err(crate::geo_in::refused(py, &geometry));
    }
    let (module, type_name) = type_of(data);
    let refused = |what: &str, cause: PyErr| {
        let e = errors::raise(
            py,
            "InputError",
            format!("cannot take the Arrow data from {what}"),
            None,
        );
        e.set_cause(py, Some(cause));
        e
    };
    let producer = producer_of(&module);
    if data.hasattr(intern!(py, "__arrow_c_stream__"))? {
        let what = format!("a {type_name} (__arrow_c_stream__)");
        let (stream, schema) = import_stream(py, data).map_err(|e| refused(&what, e))?;
        return Ok(Source {
            schema,
            producer,
            held: held_in_memory(&module, &type_name),
            from: From::Stream(stream),
        });
    }
    if data.hasattr(intern!(py, "__arrow_c_array__"))? {
        let what = format!("a {type_name} (__arrow_c_array__)");
        let batch = import_array(py, data).map_err(|e| refused(&what, e))?;
        return Ok(Source {
            schema: batch.schema(),
            producer,
            held: true,
            from: From::Batch(Some(batch)),
        });
    }
    Err(errors::raise(
        py,
        "InputError",
        format!(
            "expected Arrow data (a pyarrow Table, RecordBatch or RecordBatchReader, a Polars or pandas DataFrame, a DuckDB relation, or any object with __arrow_c_stream__ or __arrow_c_array__), got a {type_name}"
        ),
        None,
    ))
}

fn value_error(m: impl std::fmt::Display) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(m.to_string())
}

/// The pointer a capsule holds, checking its name.
fn capsule_pointer(capsule: &Bound<'_, PyAny>, name: &CStr, method: &str) -> PyResult<*mut c_void> {
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| value_error(format!("{method} did not return a PyCapsule")))?;
    let ptr = capsule.pointer_checked(Some(name)).map_err(|e| {
        let w = value_error(format!("{method} did not return a capsule named {name:?}"));
        w.set_cause(capsule.py(), Some(e));
        w
    })?;
    Ok(ptr.as_ptr())
}

#[allow(unsafe_code)]
fn import_stream(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
) -> PyResult<(Box<FFI_ArrowArrayStream>, SchemaRef)> {
    let capsule = data.call_method1(intern!(py, "__arrow_c_stream__"), (py.None(),))?;
    let ptr = capsule_pointer(&capsule, c"arrow_array_stream", "__arrow_c_stream__")?;
    // SAFETY: a capsule named `arrow_array_stream` holds an ArrowArrayStream; `from_raw`
    // moves it out (the capsule's own is marked released, as the protocol asks).
    let mut stream = Box::new(unsafe { FFI_ArrowArrayStream::from_raw(ptr.cast()) });
    let get_schema = stream
        .get_schema()
        .ok_or_else(|| value_error("the Arrow stream has no get_schema"))?;
    let mut ffi_schema = FFI_ArrowSchema::empty();
    // SAFETY: called with the stream it belongs to and an empty schema to fill.
    let rc = unsafe { get_schema(stream.as_mut(), &mut ffi_schema) };
    if rc != 0 {
        return Err(value_error(format!(
            "the Arrow stream's get_schema failed: {}",
            last_error(&mut stream, rc)
        )));
    }
    let schema = Schema::try_from(&ffi_schema).map_err(value_error)?;
    Ok((stream, Arc::new(schema)))
}

#[allow(unsafe_code)]
fn import_array(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<RecordBatch> {
    let pair = data.call_method1(intern!(py, "__arrow_c_array__"), (py.None(),))?;
    let (schema_capsule, array_capsule): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
        pair.extract().map_err(|_| {
            value_error("__arrow_c_array__ did not return a (schema, array) pair of capsules")
        })?;
    let schema_ptr = capsule_pointer(&schema_capsule, c"arrow_schema", "__arrow_c_array__")?;
    let array_ptr = capsule_pointer(&array_capsule, c"arrow_array", "__arrow_c_array__")?;
    // SAFETY: the schema capsule keeps ownership of its schema; it is only read.
    let ffi_schema = unsafe { &*schema_ptr.cast::<FFI_ArrowSchema>() };
    let DataType::Struct(fields) = DataType::try_from(ffi_schema).map_err(value_error)? else {
        return Err(value_error(
            "__arrow_c_array__ gave an array that is not a struct array (a record batch)",
        ));
    };
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        ffi_schema.metadata().unwrap_or_default(),
    ));
    // SAFETY: a capsule named `arrow_array` holds an ArrowArray; moved out.
    let array = unsafe { FFI_ArrowArray::from_raw(array_ptr.cast()) };
    let batch = to_batch(array, schema).map_err(value_error)?;
    // Checked like every stream batch.
    check_buffers(&batch).map_err(|e| value_error(e.to_string()))?;
    Ok(batch)
}

/// The ArrowArray of the C data interface (the struct every producer fills): only to find
/// a `Null` array's buffer count, see [`fix_null_buffers`].
#[repr(C)]
struct RawArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut RawArray,
    dictionary: *mut RawArray,
    release: Option<unsafe extern "C" fn(*mut RawArray)>,
    private_data: *mut c_void,
}

/// Take a `Null` array exported with buffers that are all null pointers (Polars: one) as
/// the zero-buffer array the C data interface specifies; recurses into struct children.
/// Only the buffer count is changed; the producer's release callback frees what it
/// allocated from its own private data, never from the count.
///
/// # Safety
/// `array` is a live ArrowArray of type `data_type`, not yet imported.
#[allow(unsafe_code)]
unsafe fn fix_null_buffers(array: *mut RawArray, data_type: &DataType) {
    let a = unsafe { &mut *array };
    match data_type {
        DataType::Null if a.n_buffers > 0 && !a.buffers.is_null() => {
            let all_null =
                (0..a.n_buffers as usize).all(|i| unsafe { (*a.buffers.add(i)).is_null() });
            if all_null {
                a.n_buffers = 0;
            }
        }
        DataType::Struct(fields) if a.n_children as usize == fields.len() => {
            for (i, f) in fields.iter().enumerate() {
                let child = unsafe { *a.children.add(i) };
                if !child.is_null() {
                    unsafe { fix_null_buffers(child, f.data_type()) };
                }
            }
        }
        _ => {}
    }
}

#[allow(unsafe_code)]
fn to_batch(
    mut array: FFI_ArrowArray,
    schema: SchemaRef,
) -> std::result::Result<RecordBatch, arrow_schema::ArrowError> {
    let data_type = DataType::Struct(schema.fields().clone());
    // SAFETY: `array` is the live, not yet imported array of `data_type` (FFI_ArrowArray
    // is the interface's C struct, which RawArray spells out).
    unsafe { fix_null_buffers((&mut array as *mut FFI_ArrowArray).cast(), &data_type) };
    // SAFETY: the producer promises the array matches its schema; the buffers are checked
    // (`validate_full`) before any value is read.
    let data = unsafe { from_ffi_and_data_type(array, data_type) }?;
    let len = data.len();
    RecordBatch::try_new_with_options(
        schema,
        StructArray::from(data).into_parts().1,
        &RecordBatchOptions::new().with_row_count(Some(len)),
    )
}

#[allow(unsafe_code)]
fn last_error(stream: &mut FFI_ArrowArrayStream, rc: i32) -> String {
    let from_producer = stream.get_last_error().and_then(|f| {
        // SAFETY: called with its own stream; the string is valid until the next call.
        let p: *const c_char = unsafe { f(stream) };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    });
    from_producer.unwrap_or_else(|| format!("error {rc}"))
}

/// Every column's buffers checked (offsets in bounds, UTF-8).
fn check_buffers(b: &RecordBatch) -> Result<()> {
    for (field, column) in b.schema().fields().iter().zip(b.columns()) {
        column.to_data().validate_full().map_err(|e| {
            Error::usage(format!(
                "the producer's Arrow data for field `{}` is invalid: {e}",
                field.name()
            ))
        })?;
    }
    Ok(())
}

impl Source {
    /// The next batch, its buffers checked; `None` at the end. Call without the GIL: a
    /// producer that needs it (a Python generator behind a RecordBatchReader) takes it.
    #[allow(unsafe_code)]
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let stream = match &mut self.from {
            From::Batch(b) => return Ok(b.take()),
            From::Stream(s) => s,
        };
        let failed = |m: String| Error::usage(format!("{} {m}", crate::errors::STREAM_FAILED));
        let get_next = stream
            .get_next()
            .ok_or_else(|| failed("the stream has no get_next".into()))?;
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: called with its own stream and an empty array to fill.
        let rc = unsafe { get_next(stream.as_mut(), &mut array) };
        if rc != 0 {
            return Err(failed(last_error(stream, rc)));
        }
        if array.is_released() {
            return Ok(None); // the end of the stream
        }
        let b = to_batch(array, self.schema.clone()).map_err(|e| failed(e.to_string()))?;
        check_buffers(&b)?;
        Ok(Some(b))
    }

    /// Every batch.
    pub fn read_all(mut self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        while let Some(b) = self.next_batch()? {
            out.push(b);
        }
        Ok(out)
    }
}

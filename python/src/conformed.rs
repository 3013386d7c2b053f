//! `lineage_store.conform(data)`: the lossless conversions a caller asks for (the
//! library's `write::lossless`), and the `Conformed` table it returns.
//!
//! `Conformed` pickles as its batches in an Arrow IPC stream and its changes (rebuilt by
//! [`_restore_conformed`]), so a pool worker can return what `conform` gave it.
//!
//! `Conformed` holds the converted batches (in the contract's schema) and what was done to
//! each column; it is Arrow data itself (`__arrow_c_stream__`), so
//! `store.append(lineage_store.conform(df))` needs no pyarrow, and `to_pyarrow()` gives a
//! `pyarrow.Table`.

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::SchemaRef;
use lineage_store::lossless;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

use crate::arrow_in;
use crate::errors::IntoPyResult;
use crate::runtime::detached;

/// What a `Conformed` pickles as: `_restore_conformed` and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, Vec<String>));

/// An input conformed to the contract: Arrow data (`__arrow_c_stream__`) in the contract's
/// schema, and `changes`, what was done to each column whose type was not the contract's.
#[pyclass(module = "lineage_store", frozen)]
#[derive(Debug)]
pub struct Conformed {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    changes: Vec<String>,
}

/// Convert `data` (any Arrow producer) to the contract's types where no value can change:
/// integers checked for range, nanoseconds with no sub-microsecond part, any time zone to
/// UTC, `Null` columns, exact decimals and floats (see docs/python.md). Anything lossy
/// raises `InputError` naming the row and field; a column that cannot be converted
/// whatever its values (a missing or extra column, a time without zone, a string for a
/// number) is named with the others at once, one entry of `errors` each. With
/// `fill_missing`, each nullable contract column the input lacks is added, all null (to
/// the oldest version holding the input's columns); with `drop_extra`, each column of no
/// contract version is dropped (a GeoDataFrame's geometry too). Row rules are not checked
/// here: `append` checks them.
#[pyfunction]
#[pyo3(signature = (data, *, fill_missing=false, drop_extra=false))]
pub fn conform(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    fill_missing: bool,
    drop_extra: bool,
) -> PyResult<Conformed> {
    let geometry = crate::geo_in::geometry_columns(py, data)?;
    let mut changes: Vec<String> = Vec::new();
    let mut source = if geometry.is_empty() {
        arrow_in::import(py, data)?
    } else if drop_extra {
        for g in &geometry {
            changes.push(format!(
                "`{g}`: geometry, dropped (a GeoDataFrame's geometry column)"
            ));
        }
        let frame = crate::geo_in::without_geometry(py, data, &geometry)?;
        arrow_in::import(py, &frame)?
    } else {
        return Err(crate::geo_in::refused(py, &geometry));
    };
    let reshape = lossless::Reshape {
        fill_missing,
        drop_extra,
    };
    let plan = lossless::plan_with(&source.schema, reshape).py_err(py)?;
    changes.extend(plan.changes().iter().map(ToString::to_string));
    let schema = plan.version().schema();
    let batches = detached(py, move || {
        let mut out = Vec::new();
        let mut row = 1u64;
        while let Some(b) = source.next_batch()? {
            let n = b.num_rows() as u64;
            out.push(plan.apply(&b, row)?);
            row += n;
        }
        Ok(out)
    })
    .py_err(py)?;
    Ok(Conformed {
        schema,
        batches,
        changes,
    })
}

#[pymethods]
impl Conformed {
    /// What was done to each column whose type was not the contract's, one line each
    /// (`` `strategy_index`: Int64 → Int32 (every value fits) ``); empty when nothing was.
    #[getter]
    fn changes(&self) -> Vec<String> {
        self.changes.clone()
    }

    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The conformed data as a `pyarrow.Table` (needs pyarrow).
    fn to_pyarrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Table::try_new(self.batches.clone(), self.schema.clone())
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?
            .into_pyarrow(py)
    }

    /// The Arrow PyCapsule stream protocol: any Arrow consumer (`append`, pyarrow, Polars,
    /// DuckDB) takes the conformed batches. `requested_schema` is not supported and ignored,
    /// as the protocol allows.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            self.schema.clone(),
        );
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// Pickled as its batches (an Arrow IPC stream) and its changes.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let mut data = Vec::new();
        let written = (|| {
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut data, &self.schema)?;
            for b in &self.batches {
                w.write(b)?;
            }
            w.finish()
        })();
        written.map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        let restore = py
            .import("lineage_store._native")?
            .getattr("_restore_conformed")?;
        Ok((restore, (PyBytes::new(py, &data), self.changes.clone())))
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "Conformed(num_rows={}, changes={:?})",
            self.num_rows(),
            self.changes
        )
    }
}

/// Rebuild a pickled `Conformed` (see the module docs).
#[pyfunction]
pub fn _restore_conformed(data: &[u8], changes: Vec<String>) -> PyResult<Conformed> {
    let bad = |e: arrow_schema::ArrowError| pyo3::exceptions::PyValueError::new_err(e.to_string());
    let reader = arrow_ipc::reader::StreamReader::try_new(data, None).map_err(bad)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(bad)?;
    Ok(Conformed {
        schema,
        batches,
        changes,
    })
}

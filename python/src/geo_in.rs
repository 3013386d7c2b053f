//! A GeoDataFrame handed to `append`, `check`, a writer or `conform`: its geometry
//! columns are no contract field (lineage records what was done to each feature, not the
//! feature), and pandas' Arrow export cannot even convert them. Such input is refused
//! naming each geometry column, with the two ways to go on: drop them, or
//! `conform(gdf, drop_extra=True)`, which drops them ([`without_geometry`]).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors;

/// The geometry columns of `data` when it is a geopandas GeoDataFrame (columns of dtype
/// `geometry`, the active one first), else none.
pub fn geometry_columns(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let t = data.get_type();
    let module = t.module().map(|m| m.to_string()).unwrap_or_default();
    if module.split('.').next() != Some("geopandas") {
        return Ok(Vec::new());
    }
    if !data.hasattr(intern!(py, "columns"))? || !data.hasattr(intern!(py, "dtypes"))? {
        return Ok(Vec::new());
    }
    let mut out: Vec<String> = Vec::new();
    let dtypes = data.getattr(intern!(py, "dtypes"))?;
    for item in dtypes.call_method0(intern!(py, "items"))?.try_iter()? {
        let (name, dtype): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let kind: String = dtype
            .getattr(intern!(py, "name"))
            .and_then(|n| n.extract())
            .unwrap_or_default();
        if kind == "geometry" {
            out.push(name.str()?.to_string());
        }
    }
    // The active geometry column first: the one the caller knows as `gdf.geometry`.
    let active: Option<String> = data
        .getattr(intern!(py, "_geometry_column_name"))
        .ok()
        .and_then(|n| n.extract().ok());
    if let Some(a) = active {
        if let Some(i) = out.iter().position(|c| *c == a) {
            let c = out.remove(i);
            out.insert(0, c);
        }
    }
    Ok(out)
}

/// The refusal of a GeoDataFrame with geometry columns `cols` (not empty): an
/// `InputError` naming each one (`field`, `fields`, one entry of `errors` each).
pub fn refused(py: Python<'_>, cols: &[String]) -> PyErr {
    let names: Vec<String> = cols.iter().map(|c| format!("{c:?}")).collect();
    let reason = |c: &str| {
        format!(
            "the GeoDataFrame's geometry column `{c}` is not a field of the contract (lineage records what was done to each feature, not its geometry)"
        )
    };
    let message = format!(
        "{}\nhint: drop the geometry (`gdf.drop(columns=[{}])`) or pass the frame through `lineage_store.conform(gdf, drop_extra=True)`",
        cols.iter()
            .map(|c| format!("schema mismatch: {}", reason(c)))
            .collect::<Vec<_>>()
            .join("\n"),
        names.join(", ")
    );
    let made = (|| -> PyResult<Bound<'_, PyDict>> {
        let kw = PyDict::new(py);
        let errors = PyList::empty(py);
        for c in cols {
            let d = PyDict::new(py);
            d.set_item("line", py.None())?;
            d.set_item("row", py.None())?;
            d.set_item("field", c)?;
            d.set_item("value", py.None())?;
            d.set_item("reason", reason(c))?;
            errors.append(d)?;
        }
        kw.set_item("field", cols.first())?;
        kw.set_item("fields", cols.to_vec())?;
        kw.set_item(
            "reason",
            reason(cols.first().map_or("geometry", String::as_str)),
        )?;
        kw.set_item("errors", errors)?;
        Ok(kw)
    })();
    match made {
        Ok(kw) => errors::raise(py, "InputError", message, Some(&kw)),
        Err(e) => e,
    }
}

/// `data` without its geometry columns `cols`, as a pandas DataFrame.
pub fn without_geometry<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    cols: &[String],
) -> PyResult<Bound<'py, PyAny>> {
    let kw = PyDict::new(py);
    kw.set_item("columns", cols.to_vec())?;
    let dropped = data.call_method(intern!(py, "drop"), (), Some(&kw))?;
    py.import("pandas")?
        .getattr(intern!(py, "DataFrame"))?
        .call1((dropped,))
}

//! Row rules of the contract, checked on whole batches before anything is published, and
//! the canonicalisation of the CRS columns. Every error names the line or row and field.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type};
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};

use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::schema::contract::{self, col, Kind};
use crate::schema::crs;
use crate::schema::events::{Origin, SourcedBatch};

/// Caches canonical forms across batches (inputs repeat a handful of values).
#[derive(Debug, Default)]
pub struct Validator {
    crs_cache: HashMap<String, String>,
    run_ids_ok: std::collections::HashSet<String>,
}

fn field_err(origin: &Origin, i: usize, field: &str, msg: impl Into<String>) -> Error {
    Error::record(format!("{}, field `{field}`", origin.locate(i)), msg)
}

impl Validator {
    /// A fresh validator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Check every rule on `sb` and return the batch with canonical CRS columns.
    pub fn validate(&mut self, sb: &SourcedBatch) -> Result<RecordBatch> {
        let batch = &sb.batch;
        let origin = &sb.origin;
        let version = contract::version_of_schema(batch.schema().as_ref())?;
        // Required fields: no null, and no empty string.
        for (ci, c) in version.columns.iter().enumerate() {
            let arr = batch.column(ci);
            if c.required && arr.null_count() > 0 {
                if let Some(i) = (0..arr.len()).find(|&i| arr.is_null(i)) {
                    return Err(field_err(
                        origin,
                        i,
                        c.name,
                        "is null, but the contract requires a value",
                    ));
                }
            }
            if c.kind == Kind::Str {
                let s = arr.as_string::<i32>();
                if let Some(i) = (0..s.len()).find(|&i| s.is_valid(i) && s.value(i).is_empty()) {
                    return Err(field_err(
                        origin,
                        i,
                        c.name,
                        "is an empty string (use null for no value)",
                    ));
                }
            }
        }
        crate::schema::rules::check_batch(batch, origin)?;
        let run_ids = batch.column(col::RUN_ID).as_string::<i32>();
        for i in 0..run_ids.len() {
            let r = run_ids.value(i);
            if !self.run_ids_ok.contains(r) {
                if let Some(why) = keys::run_id_problem(r) {
                    return Err(field_err(origin, i, "run_id", why));
                }
                self.run_ids_ok.insert(r.to_string());
            }
        }
        let outcome = batch.column(col::OUTCOME).as_string::<i32>();
        let reason = batch.column(col::REJECTION_REASON);
        if let Some(i) =
            (0..outcome.len()).find(|&i| outcome.value(i) == "rejected" && reason.is_null(i))
        {
            return Err(field_err(
                origin,
                i,
                "rejection_reason",
                "is null, but outcome is `rejected`",
            ));
        }
        let acc = batch.column(col::ACCURACY_M).as_primitive::<Float64Type>();
        if let Some(i) = (0..acc.len())
            .find(|&i| acc.is_valid(i) && !(acc.value(i).is_finite() && acc.value(i) >= 0.0))
        {
            return Err(field_err(
                origin,
                i,
                "accuracy_m",
                // `{:?}` is the shortest exact spelling, in exponent form when long.
                format!(
                    "{:?} is not a finite, non-negative number of metres",
                    acc.value(i)
                ),
            ));
        }
        let strat = batch
            .column(col::STRATEGY_INDEX)
            .as_primitive::<Int32Type>();
        if let Some(i) = (0..strat.len()).find(|&i| strat.is_valid(i) && strat.value(i) < 0) {
            return Err(field_err(
                origin,
                i,
                "strategy_index",
                format!("{} is negative", strat.value(i)),
            ));
        }
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        for (ci, name) in [
            (col::SOURCE_CRS, "source_crs"),
            (col::TARGET_CRS, "target_crs"),
        ] {
            if let Some(canon) = self.canonical_crs(batch.column(ci), origin, name)? {
                cols[ci] = canon;
            }
        }
        Ok(RecordBatch::try_new(version.schema(), cols)?)
    }

    /// The canonical column, or `None` when every value already is canonical.
    fn canonical_crs(
        &mut self,
        arr: &ArrayRef,
        origin: &Origin,
        name: &str,
    ) -> Result<Option<ArrayRef>> {
        let s = arr.as_string::<i32>();
        let mut changed = false;
        for i in 0..s.len() {
            if s.is_null(i) {
                continue;
            }
            let v = s.value(i);
            let canon = match self.crs_cache.get(v) {
                Some(c) => c,
                None => {
                    let c = crs::canonicalize(v).map_err(|m| field_err(origin, i, name, m))?;
                    self.crs_cache.entry(v.to_string()).or_insert(c)
                }
            };
            changed |= canon != v;
        }
        if !changed {
            return Ok(None);
        }
        let out: StringArray = s
            .iter()
            .map(|v| v.map(|v| self.crs_cache.get(v).map(String::as_str).unwrap_or(v)))
            .collect();
        Ok(Some(Arc::new(out)))
    }
}

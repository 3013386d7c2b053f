//! Row rules of the contract, checked on whole batches before anything is published, and
//! the canonicalisation of the CRS columns. Every refused cell is named (line or row,
//! field, value, why), all of them, not only the first: [`Validator::check`] records them
//! in a [`Collector`] that spans the whole input; [`Validator::validate`] refuses one
//! batch with all of its errors.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type};
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};

use crate::base::error::{Error, Result};
use crate::base::rejection::{Collector, InputError, DEFAULT_MAX_ERRORS};
use crate::format::keys;
use crate::schema::contract::{self, col, Kind};
use crate::schema::crs;
use crate::schema::events::SourcedBatch;
use crate::schema::rules::cut;

/// Caches canonical forms across batches (inputs repeat a handful of values).
#[derive(Debug)]
pub struct Validator {
    crs_cache: HashMap<String, String>,
    run_ids_ok: std::collections::HashSet<String>,
    max_errors: usize,
}

impl Default for Validator {
    fn default() -> Self {
        Self::new()
    }
}

/// Reports the refused cells of one batch into a collector, skipping the cells its reader
/// reported already (they are null in the batch because they were refused).
struct Refuse<'a> {
    sb: &'a SourcedBatch,
    names: Vec<&'static str>,
    errors: &'a mut Collector,
}

impl Refuse<'_> {
    fn cell(&mut self, i: usize, ci: usize, value: Option<String>, why: impl Into<String>) {
        if self.sb.read_errors.reported(i, ci) {
            return;
        }
        let e = InputError::new(
            self.sb.origin.place(i),
            self.names.get(ci).copied(),
            value,
            why,
        );
        self.errors.push(e, ci);
    }
}

/// Required fields: no null, and no empty string.
fn required_cells(version: &contract::ContractVersion, batch: &RecordBatch, r: &mut Refuse<'_>) {
    for (ci, c) in version.columns.iter().enumerate() {
        let arr = batch.column(ci);
        if c.required && arr.null_count() > 0 {
            for i in (0..arr.len()).filter(|&i| arr.is_null(i)) {
                r.cell(i, ci, None, "is null, but the contract requires a value");
            }
        }
        if c.kind == Kind::Str && !contract::EMPTY_IS_A_VALUE.contains(&c.name) {
            let s = arr.as_string::<i32>();
            for i in (0..s.len()).filter(|&i| s.is_valid(i) && s.value(i).is_empty()) {
                r.cell(
                    i,
                    ci,
                    Some(String::new()),
                    "is an empty string (use null for no value)",
                );
            }
        }
    }
}

/// A rejection without its reason, an accuracy that is not a finite non-negative number,
/// a negative strategy index.
fn value_rules(batch: &RecordBatch, r: &mut Refuse<'_>) {
    let outcome = batch.column(col::OUTCOME).as_string::<i32>();
    let reason = batch.column(col::REJECTION_REASON);
    for i in (0..outcome.len())
        .filter(|&i| outcome.is_valid(i) && outcome.value(i) == "rejected" && reason.is_null(i))
    {
        r.cell(
            i,
            col::REJECTION_REASON,
            None,
            "is null, but outcome is `rejected`",
        );
    }
    let acc = batch.column(col::ACCURACY_M).as_primitive::<Float64Type>();
    for i in (0..acc.len())
        .filter(|&i| acc.is_valid(i) && !(acc.value(i).is_finite() && acc.value(i) >= 0.0))
    {
        // `{:?}` is the shortest exact spelling, in exponent form when long.
        let v = format!("{:?}", acc.value(i));
        r.cell(
            i,
            col::ACCURACY_M,
            Some(v.clone()),
            format!("{v} is not a finite, non-negative number of metres"),
        );
    }
    let strat = batch
        .column(col::STRATEGY_INDEX)
        .as_primitive::<Int32Type>();
    for i in (0..strat.len()).filter(|&i| strat.is_valid(i) && strat.value(i) < 0) {
        r.cell(
            i,
            col::STRATEGY_INDEX,
            Some(strat.value(i).to_string()),
            format!("{} is negative", strat.value(i)),
        );
    }
}

/// The forms of the columns 1.3.0 adds (when the batch has them): `operation_code` is
/// `AUTHORITY:CODE`, `grids` names separated by single spaces.
fn operation_rules(version: &contract::ContractVersion, batch: &RecordBatch, r: &mut Refuse<'_>) {
    type Rule = fn(&str) -> Option<String>;
    let rules: [(usize, Rule); 2] = [
        (
            col::OPERATION_CODE,
            crate::schema::rules::operation_code_problem,
        ),
        (col::GRIDS, crate::schema::rules::grids_problem),
    ];
    for (ci, rule) in rules {
        let named = version.columns.get(ci).map(|c| c.name);
        if named.is_none() || named != contract::column_name(ci) {
            continue; // 1.2.0
        }
        let Some(s) = batch.column(ci).as_string_opt::<i32>() else {
            continue;
        };
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            if let Some(why) = rule(s.value(i)) {
                r.cell(i, ci, Some(cut(s.value(i))), why);
            }
        }
    }
}

/// An `event_id` given twice in one batch (as the reader cuts it: an NDJSON block, a CSV
/// or Arrow batch, one `write`): every later copy is refused, naming the first. Across
/// batches ids are not compared (that would hold every id of the input in memory).
fn duplicate_ids(batch: &RecordBatch, r: &mut Refuse<'_>) {
    use std::collections::hash_map::Entry;
    let ids = batch.column(col::EVENT_ID).as_string::<i32>();
    // Sized for the batch up front (growing it rehashed every id several times), one hash
    // per id (the entry, not a lookup then an insert).
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
    for i in (0..ids.len()).filter(|&i| ids.is_valid(i) && !ids.value(i).is_empty()) {
        let v = ids.value(i);
        match first.entry(v) {
            Entry::Vacant(e) => {
                e.insert(i);
            }
            Entry::Occupied(e) => {
                let at = match r.sb.origin.place(*e.get()) {
                    crate::base::rejection::Place::Line(l) => format!("line {l}"),
                    crate::base::rejection::Place::Row(n) => format!("row {n}"),
                    crate::base::rejection::Place::Schema => "an earlier row".to_string(),
                };
                r.cell(
                    i,
                    col::EVENT_ID,
                    Some(cut(v)),
                    format!("duplicates the event_id of {at}: each event is appended once"),
                );
            }
        }
    }
}

/// Distinct values of a batch's column met so far, in order of first appearance: a
/// linear scan over the first [`FEW`] (inputs repeat a handful of run ids and CRSs, and
/// comparing a few short keys costs less than hashing every row's value: SipHash of each
/// row's run_id and CRSs was ~10 % of an append's CPU), a hash map past them.
struct Distinct<'a, T> {
    values: Vec<(&'a str, T)>,
    /// [`short_key`] of each of the first [`FEW`] values.
    keys: Vec<(u128, usize)>,
    many: HashMap<&'a str, usize>,
}

/// Distinct values looked up by a linear scan before [`Distinct`] hashes.
const FEW: usize = 16;

/// A value's length and first 16 bytes: equal keys of values of at most 16 bytes are
/// equal values, compared as two integers (no call to compare bytes).
fn short_key(v: &str) -> (u128, usize) {
    let b = v.as_bytes();
    let mut head = [0u8; 16];
    let n = b.len().min(16);
    head[..n].copy_from_slice(&b[..n]);
    (u128::from_le_bytes(head), b.len())
}

impl<'a, T> Distinct<'a, T> {
    fn new() -> Self {
        Self {
            values: Vec::new(),
            keys: Vec::new(),
            many: HashMap::new(),
        }
    }

    /// The slot of `v`, or `None` when it is new.
    fn find(&self, v: &str) -> Option<usize> {
        let key = short_key(v);
        let scanned = self
            .keys
            .iter()
            .enumerate()
            .position(|(i, k)| *k == key && (key.1 <= 16 || self.values[i].0 == v));
        if scanned.is_some() || self.values.len() <= FEW {
            return scanned;
        }
        self.many.get(v).copied()
    }

    /// Remember a new value; its slot.
    fn add(&mut self, v: &'a str, t: T) -> usize {
        let slot = self.values.len();
        if slot < FEW {
            self.keys.push(short_key(v));
        } else {
            self.many.insert(v, slot);
        }
        self.values.push((v, t));
        slot
    }
}

/// What a CRS value of a batch canonicalises to.
enum Canon {
    /// It is canonical.
    Same,
    /// This canonical form.
    To(String),
    /// Refused, with why.
    Refused(String),
}

impl Validator {
    /// A fresh validator; [`validate`](Self::validate) lists the first
    /// [`DEFAULT_MAX_ERRORS`] errors of a batch.
    pub fn new() -> Self {
        Self {
            crs_cache: HashMap::new(),
            run_ids_ok: std::collections::HashSet::new(),
            max_errors: DEFAULT_MAX_ERRORS,
        }
    }

    /// List at most `n` errors of a refused batch (`0`: all) in [`validate`](Self::validate).
    pub fn with_max_errors(mut self, n: usize) -> Self {
        self.max_errors = n;
        self
    }

    /// Check every rule on `sb` and return the batch with canonical CRS columns; refused
    /// (an [`Error::Rejected`] listing every error of the batch, the reader's included)
    /// when any row breaks a rule.
    pub fn validate(&mut self, sb: &SourcedBatch) -> Result<RecordBatch> {
        let mut errors = Collector::new(self.max_errors);
        let out = self.check(sb, &mut errors)?;
        errors.finish()?;
        out.ok_or_else(|| Error::internal("a batch without errors was not validated"))
    }

    /// Check every rule on `sb`, recording every error (the reader's too) in `errors`:
    /// the batch with canonical CRS columns when it has none, else `None`. An `Err` only
    /// for a batch that is not in a registered contract version's schema.
    pub fn check(
        &mut self,
        sb: &SourcedBatch,
        errors: &mut Collector,
    ) -> Result<Option<RecordBatch>> {
        let batch = &sb.batch;
        let version = contract::version_of_schema(batch.schema().as_ref())?;
        let before = errors.total();
        for (column, e) in &sb.read_errors.errors {
            errors.push(e.clone(), *column);
        }
        let mut r = Refuse {
            sb,
            names: version.columns.iter().map(|c| c.name).collect(),
            errors,
        };
        required_cells(&version, batch, &mut r);
        crate::schema::rules::check_batch(batch, &mut |i, ci, value, why| {
            r.cell(i, ci, value, why)
        });
        self.check_run_ids(batch, &mut r);
        value_rules(batch, &mut r);
        operation_rules(&version, batch, &mut r);
        duplicate_ids(batch, &mut r);
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        for ci in [col::SOURCE_CRS, col::TARGET_CRS] {
            if let Some(canon) = self.canonical_crs(batch.column(ci), ci, &mut r) {
                cols[ci] = canon;
            }
        }
        if r.errors.total() > before {
            return Ok(None);
        }
        Ok(Some(RecordBatch::try_new(version.schema(), cols)?))
    }

    /// Refuse each `run_id` that is not acceptable in new input (those found good are
    /// remembered).
    fn check_run_ids(&mut self, batch: &RecordBatch, r: &mut Refuse<'_>) {
        let run_ids = batch.column(col::RUN_ID).as_string::<i32>();
        // The run ids this batch has shown good: compared before the set is hashed.
        let mut good: Distinct<'_, ()> = Distinct::new();
        for i in (0..run_ids.len()).filter(|&i| run_ids.is_valid(i)) {
            let v = run_ids.value(i);
            if v.is_empty() || good.find(v).is_some() {
                continue;
            }
            if self.run_ids_ok.contains(v) {
                good.add(v, ());
                continue;
            }
            match keys::run_id_problem(v) {
                Some(why) => r.cell(i, col::RUN_ID, Some(cut(v)), why),
                None => {
                    self.run_ids_ok.insert(v.to_string());
                    good.add(v, ());
                }
            }
        }
    }

    /// The canonical column, or `None` when every value already is canonical (or some
    /// value is refused: then each refused row is reported).
    fn canonical_crs(&mut self, arr: &ArrayRef, ci: usize, r: &mut Refuse<'_>) -> Option<ArrayRef> {
        let s = arr.as_string::<i32>();
        let mut changed = false;
        let mut refused = false;
        // Each distinct value of the batch canonicalised once (through the cache across
        // batches); every row then only finds its value's slot.
        let mut distinct: Distinct<'_, Canon> = Distinct::new();
        let mut slots: Vec<u32> = Vec::with_capacity(s.len());
        for i in 0..s.len() {
            if s.is_null(i) || s.value(i).is_empty() {
                slots.push(u32::MAX);
                continue;
            }
            let v = s.value(i);
            let slot = match distinct.find(v) {
                Some(slot) => slot,
                None => {
                    let canon = match self.crs_cache.get(v) {
                        Some(c) if c == v => Canon::Same,
                        Some(c) => Canon::To(c.clone()),
                        None => match crs::canonicalize(v) {
                            Ok(c) => {
                                let to = if c == v {
                                    Canon::Same
                                } else {
                                    Canon::To(c.clone())
                                };
                                self.crs_cache.insert(v.to_string(), c);
                                to
                            }
                            Err(why) => Canon::Refused(why),
                        },
                    };
                    distinct.add(v, canon)
                }
            };
            match &distinct.values[slot].1 {
                Canon::Same => {}
                Canon::To(_) => changed = true,
                Canon::Refused(why) => {
                    r.cell(i, ci, Some(cut(v)), why.clone());
                    refused = true;
                }
            }
            // Batches are far below 4 billion rows (readers cut them at 64 Ki rows).
            slots.push(slot as u32);
        }
        if !changed || refused {
            return None;
        }
        let out: StringArray = s
            .iter()
            .zip(&slots)
            .map(|(v, &slot)| {
                v.map(|v| match distinct.values.get(slot as usize) {
                    Some((_, Canon::To(c))) => c.as_str(),
                    _ => v,
                })
            })
            .collect();
        Some(Arc::new(out))
    }
}

//! `lineage check` and `lineage_store.check`: validate an input exactly as `append` does
//! (the same readers, the same version rules, the same row rules, every error listed),
//! without a store, and say what an append of it would do: rows, partitions
//! (run_id × canonical target_crs) and the flushes (commits) at a given `--batch-rows`.
//!
//! Nothing is written anywhere; the input is read once. Memory: one input batch and one
//! counter per partition.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::rejection::DEFAULT_MAX_ERRORS;
use crate::schema::contract::{self, col};
use crate::write::flush::DEFAULT_BATCH_ROWS;
use crate::write::input::source::BatchSource;

/// How to check: as `append` would be run.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Rows per flush an append would use (`--batch-rows`).
    pub batch_rows: usize,
    /// Contract version an append would write (`--schema-version`; `None`: as the input
    /// says, or the newest for text).
    pub schema_version: Option<String>,
    /// Errors listed when the input is refused (`0`: all).
    pub max_errors: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            batch_rows: DEFAULT_BATCH_ROWS,
            schema_version: None,
            max_errors: DEFAULT_MAX_ERRORS,
        }
    }
}

/// One partition an append would write to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionSummary {
    /// Its run.
    pub run_id: String,
    /// Its canonical target CRS.
    pub target_crs: String,
    /// Rows it would receive.
    pub rows: u64,
    /// Commits (parts) they would make at the checked `batch_rows`.
    pub flushes: u64,
}

/// What an append of a valid input would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// Rows (events) in the input.
    pub rows: u64,
    /// The contract version the parts would be written as.
    pub schema_version: String,
    /// The `batch_rows` the flushes are counted at.
    pub batch_rows: usize,
    /// Commits (one part each) the append would make.
    pub flushes: u64,
    /// The partitions, in order of first appearance.
    pub partitions: Vec<PartitionSummary>,
}

/// Validate `source` as `append` would, publishing nothing: what the append would do, or
/// refused ([`Error::Rejected`]) with every error of the input (the first
/// `opts.max_errors` listed, and how many in all). Other errors (an unreadable file, a
/// version not registered) are returned as they are.
pub fn check(source: &dyn BatchSource, opts: &CheckOptions) -> Result<CheckReport> {
    if opts.batch_rows == 0 {
        return Err(Error::invalid(
            Param::BatchRows,
            text!["must be at least 1"],
        ));
    }
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut partitions: Vec<PartitionSummary> = Vec::new();
    let mut rows = 0u64;
    let version = crate::write::stream::first_pass::validate_source(
        source,
        opts.schema_version.as_deref(),
        opts.max_errors,
        &mut |b| {
            rows += b.num_rows() as u64;
            let runs = b.column(col::RUN_ID).as_string::<i32>();
            let crss = b.column(col::TARGET_CRS).as_string::<i32>();
            let mut last: Option<usize> = None;
            for i in 0..b.num_rows() {
                let (r, c) = (runs.value(i), crss.value(i));
                let p = match last {
                    Some(p) if partitions[p].run_id == r && partitions[p].target_crs == c => p,
                    _ => *index
                        .entry((r.to_string(), c.to_string()))
                        .or_insert_with(|| {
                            partitions.push(PartitionSummary {
                                run_id: r.to_string(),
                                target_crs: c.to_string(),
                                rows: 0,
                                flushes: 0,
                            });
                            partitions.len() - 1
                        }),
                };
                partitions[p].rows += 1;
                last = Some(p);
            }
            Ok(())
        },
    )?;
    let version = match version {
        Some(v) => v,
        // No rows: the version an append would be asked for, else the newest.
        None => match &opts.schema_version {
            Some(v) => contract::version(v)?,
            None => contract::newest(),
        },
    };
    let batch_rows = opts.batch_rows as u64;
    for p in &mut partitions {
        p.flushes = p.rows.div_ceil(batch_rows);
    }
    Ok(CheckReport {
        rows,
        schema_version: version.version.clone(),
        batch_rows: opts.batch_rows,
        flushes: partitions.iter().map(|p| p.flushes).sum(),
        partitions,
    })
}

/// [`check`] of batches in memory (the Python package's `check`), conformed as Arrow input.
/// `schema` is the table's or stream's own: it is held to the contract first, also when no
/// batch (or no row) follows, as `append` holds it, so an empty table of another schema is
/// refused naming every difference rather than passing for want of a row to look at.
pub fn check_batches(
    schema: &arrow_schema::Schema,
    batches: Vec<arrow_array::RecordBatch>,
    opts: &CheckOptions,
) -> Result<CheckReport> {
    crate::write::input::batches::check_schema(schema)?;
    check(&crate::write::input::batches::InMemory(batches), opts)
}

//! The first pass of an append ([`super::append`]): read the whole input, conform each
//! batch to the version written and validate it, keeping nothing but a keyed payload's
//! digest (and the validated batches when they fit the memory budget); every error is
//! reported, and any refused row ends the append before anything is published.

use std::sync::Arc;

use arrow_array::RecordBatch;
use tokio::sync::mpsc;

use crate::base::error::{Error, Result};
use crate::base::rejection::Collector;
use crate::schema::events::SourcedBatch;
use crate::write::flush::WriteConfig;
use crate::write::input::source::BatchSource;
use crate::write::stream::payload_summary::PayloadDigest;
use crate::write::stream::payload_summary::PayloadSummary;
use crate::write::stream::version::VersionPin;
use crate::write::validate::Validator;

/// Validated rows pass 1 may keep, per row of `--batch-rows` (about ten flushes' worth).
const KEEP_BYTES_PER_FLUSH_ROW: usize = 2560;

/// Read `source` with a thread of the blocking pool, handing batches over a short queue.
pub(super) fn reader(source: Arc<dyn BatchSource>) -> mpsc::Receiver<Result<SourcedBatch>> {
    let (tx, rx) = mpsc::channel(2);
    tokio::task::spawn_blocking(move || {
        let r = source.read_all(&mut |b| {
            tx.blocking_send(Ok(b))
                .map_err(|_| Error::internal("append stopped reading"))
        });
        if let Err(e) = r {
            let _ = tx.blocking_send(Err(e));
        }
    });
    rx
}

/// [`first_pass`] on a thread of the blocking pool, keeping the validated batches when
/// they fit the memory budget (scaled down for small flushes, whose appends are expected
/// to run in less memory; none when the input says it is larger).
pub(super) async fn spawn_first_pass(
    writer: &WriteConfig,
    source: &Arc<dyn BatchSource>,
    pin: VersionPin,
) -> Result<FirstPass> {
    let src = source.clone();
    let k = writer.commit_key.clone();
    let (rows, max, max_errors) = (writer.batch_rows, writer.max_part_bytes, writer.max_errors);
    let mut keep = writer
        .batch_rows
        .saturating_mul(KEEP_BYTES_PER_FLUSH_ROW)
        .max(32 << 20)
        .min(writer.max_buffered_bytes);
    if source.expected_bytes().is_some_and(|b| b > keep as u64) {
        keep = 0;
    }
    tokio::task::spawn_blocking(move || {
        first_pass(src.as_ref(), pin, k, rows, max, keep, max_errors)
    })
    .await
    .map_err(|e| Error::internal(format!("validation failed: {e}")))?
}

/// What the validation pass found.
pub(super) struct FirstPass {
    /// A keyed payload's digest.
    pub(super) summary: Option<PayloadSummary>,
    /// The validated batches, when all of them fit in the memory budget: the commit pass
    /// then needs no second read (small inputs cost what they did before streaming).
    pub(super) kept: Option<Vec<RecordBatch>>,
    /// The contract version written, fixed by the first batch.
    pub(super) version: VersionPin,
}

fn first_pass(
    source: &dyn BatchSource,
    version: VersionPin,
    key: Option<String>,
    batch_rows: usize,
    max_part_bytes: usize,
    keep_budget: usize,
    max_errors: usize,
) -> Result<FirstPass> {
    let validated = source.validated();
    let mut digest = key.map(|k| PayloadDigest::new(&k, batch_rows, max_part_bytes));
    let mut kept = (!validated).then(Vec::new);
    let mut kept_bytes = 0usize;
    let version = validate_pass(source, version, max_errors, &mut |batch| {
        if let Some(d) = &mut digest {
            d.push(&batch)?;
        }
        if let Some(k) = &mut kept {
            kept_bytes += crate::write::stream::group::data_bytes(&batch);
            if kept_bytes > keep_budget {
                kept = None; // too big: read it again instead
            } else {
                k.push(batch);
            }
        }
        Ok(())
    })?;
    Ok(FirstPass {
        summary: digest.map(PayloadDigest::finish).transpose()?,
        kept,
        version,
    })
}

/// Read all of `source`, conform each batch to the version `version` fixes and validate
/// it, handing each valid batch to `valid` until the first refused row; every error of
/// the input is recorded (the first `max_errors` listed, `0`: all) and the input is
/// refused with all of them at the end. Returns the version written.
fn validate_pass(
    source: &dyn BatchSource,
    mut version: VersionPin,
    max_errors: usize,
    valid: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<VersionPin> {
    let mut v = Validator::new();
    let mut errors = Collector::new(max_errors);
    let (validated, typed) = (source.validated(), source.typed());
    source.read_all(&mut |sb| {
        let (batch, to, from) = version.conform_from(sb.batch, typed)?;
        let sb = SourcedBatch { batch, ..sb };
        let batch = if validated {
            Some(sb.batch)
        } else {
            v.check(&sb, &mut errors)?
        };
        // After the first error only errors matter: nothing will be committed.
        if let Some(b) = batch.filter(|_| errors.is_empty()) {
            version.accept(to);
            version.saw_input(from);
            valid(b)?;
        }
        Ok(())
    })?;
    errors.finish()?;
    Ok(version)
}

/// [`validate_pass`] writing `requested` (or as the input says), for `check`: the
/// version the input would be written as.
pub(crate) fn validate_source(
    source: &dyn BatchSource,
    requested: Option<&str>,
    max_errors: usize,
    valid: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<Option<Arc<crate::schema::contract::ContractVersion>>> {
    let pin = validate_pass(source, VersionPin::new(requested)?, max_errors, valid)?;
    Ok(pin.fixed().cloned())
}

/// `sb` in the version `version` writes, validated unless the source's batches are
/// already; also the version it came as (for [`VersionPin::accept`]).
pub(super) fn conform_valid(
    version: &VersionPin,
    v: &mut Validator,
    sb: SourcedBatch,
    validated: bool,
    typed: bool,
) -> Result<(RecordBatch, Arc<crate::schema::contract::ContractVersion>)> {
    let (batch, to) = version.conform(sb.batch, typed)?;
    if validated {
        return Ok((batch, to));
    }
    let batch = v.validate(&SourcedBatch { batch, ..sb })?;
    Ok((batch, to))
}

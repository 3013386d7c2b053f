//! Appending a whole input with bounded memory, keeping "refused input publishes
//! nothing": the input is read twice.
//!
//! 1. **Validate** every batch (and with a commit key, digest the payload, see
//!    `digest`), keeping nothing. The whole input is read even after a refused row, so
//!    that every error is reported (the first `max_errors`, and how many in all); any
//!    refused row ends the append here. The first batch
//!    fixes the contract version written (`version`: the requested one, a typed input's
//!    own, or the newest for text), so a version the input cannot be written as is
//!    refused here too.
//! 2. With a commit key, **claim** it for that digest (an older format-1 claim is checked
//!    by encoding every flush once without publishing, see [`crate::write::commit_key`]).
//! 3. **Commit**: read the input again (unless all of its validated batches fit in the
//!    memory budget and were kept) into a [`Sink`] without `max_delay`, which cuts
//!    exactly the flushes of grouping the whole input by (run_id, target_crs) and cutting
//!    each group into `batch_rows` chunks.
//!
//! Memory: one input batch being read, the sink's buffered rows (at most its memory
//! budget, the rest spilled), and `max_in_flight` flushes being encoded or published.
//! Pointers are handed to `on_commit` as they land and kept only when asked.

use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::pointer::Pointer;
use crate::schema::events::{Origin, SourcedBatch};
use crate::write::flush::WriteConfig;
use crate::write::input::source::BatchSource;
use crate::write::stream::first_pass::{reader, spawn_first_pass};
use crate::write::stream::keyed::claim;
use crate::write::stream::sink::{Sink, SinkOptions};
use crate::write::stream::version::VersionPin;

/// Batches already in memory and validated (what [`Writer::append`](crate::Writer::append) takes).
#[derive(Debug, Clone)]
pub(crate) struct Validated(pub Vec<RecordBatch>);

impl BatchSource for Validated {
    fn read_all(&self, f: &mut dyn FnMut(SourcedBatch) -> Result<()>) -> Result<()> {
        let mut first = 1u64;
        for b in &self.0 {
            let n = b.num_rows() as u64;
            f(SourcedBatch::new(b.clone(), Origin::Rows { first }))?;
            first += n;
        }
        Ok(())
    }
    fn validated(&self) -> bool {
        true
    }
    fn held_in_memory(&self) -> bool {
        true
    }
}

/// Refuse, before anything is published, batches in memory that cannot all be written as
/// one version: `requested`, or the first batch's (see `version`).
pub(crate) fn check_versions(batches: &[RecordBatch], requested: Option<&str>) -> Result<()> {
    let mut pin = VersionPin::new(requested)?;
    for b in batches {
        // A batch without rows says its version just as well and costs nothing to widen.
        let (_, v) = pin.conform(b.slice(0, 0), true)?;
        pin.accept(v);
    }
    Ok(())
}

/// What an append did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppendSummary {
    /// Commits made.
    pub commits: u64,
    /// Rows committed.
    pub rows: u64,
    /// The pointers, in the order the flushes were cut, when asked to keep them.
    pub pointers: Vec<Pointer>,
    /// Flushes a resumed append kept (committed by an earlier attempt), by commit id;
    /// counted in `commits` and `rows` too ([`crate::write::resume`]).
    pub kept: Vec<crate::write::resume::Kept>,
}

/// Append `source` through `writer` (its batch size, concurrency, commit key and schema
/// version): validate all, claim the key, then commit. `on_commit` sees each commit as it lands;
/// `keep` keeps the pointers in the summary.
pub(crate) async fn append(
    writer: &WriteConfig,
    source: Arc<dyn BatchSource>,
    keep: bool,
    mut on_commit: impl FnMut(&Pointer),
) -> Result<AppendSummary> {
    let key = writer.commit_key.clone();
    check_options(writer)?;
    let mut version = VersionPin::new(writer.schema_version.as_deref())?;
    let typed = source.typed();
    // Pass 1: validate everything (and digest a keyed payload) before any commit.
    let validated = source.validated();
    let mut kept = None;
    // The writer the commits go through: its encoder settings are the key's claim's.
    let mut encoder = writer.clone();
    if !validated || key.is_some() {
        let mut pass = spawn_first_pass(writer, &source, version.clone()).await?;
        if let (Some(k), Some(payload)) = (&key, &pass.summary) {
            let older = (!typed)
                .then(|| pass.version.older_input().cloned())
                .flatten();
            let (how, as_older) =
                claim(writer, source.clone(), &pass.version, k, payload, older).await?;
            encoder = writer.clone().with_part_encoding(how);
            if let Some(p) = as_older {
                pass = p;
            }
        }
        version = pass.version;
        kept = pass.kept.map(Vec::into_iter);
        if kept.is_none() {
            source.check_unchanged()?;
        }
    }
    // Pass 2: commit through a sink.
    let opts = SinkOptions {
        batch_rows: writer.batch_rows,
        max_delay: None,
        max_in_flight: writer.concurrency,
        max_buffered_bytes: writer.max_buffered_bytes,
        // Known from the first pass, else (unkeyed batches in memory) from the first batch.
        schema_version: version.fixed().map(|v| v.version.clone()),
    };
    let sink = Sink::open(encoder, &opts, key)?;
    let mut out = AppendSummary::default();
    let mut land = |ps: Vec<Pointer>| {
        for p in ps {
            on_commit(&p);
            out.commits += 1;
            out.rows += p.row_count;
            out.kept.extend(writer.kept.get(&p.commit_id));
            if keep {
                out.pointers.push(p);
            }
        }
    };
    commit_pass(sink, kept, source, typed, &mut land).await?;
    Ok(out)
}

/// Refuse a commit key that is empty, over 256 characters or holds a control character,
/// `resume` without a key, and a `batch_rows` of 0.
fn check_options(writer: &WriteConfig) -> Result<()> {
    crate::write::resume::check_key(writer.commit_key.as_deref())?;
    if writer.resume && writer.commit_key.is_none() {
        return Err(Error::usage(text![
            Param::Resume,
            " needs ",
            Param::CommitKey
        ]));
    }
    if writer.batch_rows == 0 {
        return Err(Error::invalid(
            Param::BatchRows,
            text!["must be at least 1"],
        ));
    }
    Ok(())
}

/// Write every batch into `sink` and finish it, handing what lands to `land`. Batches
/// kept from pass 1 are committed as they are (held until the append ends: they were
/// counted against the memory budget when kept); otherwise the input is read again. On
/// an error the commits already started end complete and are landed before it is
/// returned.
async fn commit_pass(
    mut sink: Sink,
    mut kept: Option<std::vec::IntoIter<RecordBatch>>,
    source: Arc<dyn BatchSource>,
    typed: bool,
    land: &mut impl FnMut(Vec<Pointer>),
) -> Result<()> {
    let validated = source.validated();
    let held = kept.is_some() || source.held_in_memory();
    let mut rx = kept.is_none().then(|| reader(source));
    loop {
        let r = match (&mut kept, &mut rx) {
            (Some(it), _) => match it.next() {
                Some(b) => sink.write_validated(b, typed, held).await,
                None => break,
            },
            (None, Some(rx)) => match rx.recv().await {
                Some(Ok(b)) if validated => sink.write_validated(b.batch, typed, held).await,
                Some(Ok(b)) => sink.write_sourced(b, typed).await,
                Some(Err(e)) => Err(e),
                None => break,
            },
            (None, None) => break,
        };
        if let Err(e) = r {
            drop(rx);
            // Commits already started end complete; show them, then report.
            let landed = sink.abort().await.unwrap_or_default();
            land(landed);
            return Err(e);
        }
        land(sink.take_landed());
    }
    land(sink.finish().await?);
    Ok(())
}

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
use futures::stream::FuturesOrdered;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::rejection::Collector;
use crate::base::time::rfc3339;
use crate::format::claim::derived_commit_id;
use crate::format::claim::payload_sha256;
use crate::format::claim::ClaimedCommit;
use crate::format::pointer::Pointer;
use crate::parts::encode::{self, EncodedPart, PartEncoding};
use crate::schema::events::{Origin, SourcedBatch};
use crate::write::commit_key::{self, Claimed};
use crate::write::flush::WriteConfig;
use crate::write::input::source::BatchSource;
use crate::write::stream::group::Grouper;
use crate::write::stream::payload_summary::PayloadDigest;
use crate::write::stream::payload_summary::PayloadSummary;
use crate::write::stream::sink::{Sink, SinkOptions};
use crate::write::stream::version::VersionPin;
use crate::write::validate::Validator;

/// Validated rows pass 1 may keep, per row of `--batch-rows` (about ten flushes' worth).
const KEEP_BYTES_PER_FLUSH_ROW: usize = 2560;

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

/// Read `source` with a thread of the blocking pool, handing batches over a short queue.
fn reader(source: Arc<dyn BatchSource>) -> mpsc::Receiver<Result<SourcedBatch>> {
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

/// [`first_pass`] on a thread of the blocking pool, keeping the validated batches when
/// they fit the memory budget (scaled down for small flushes, whose appends are expected
/// to run in less memory; none when the input says it is larger).
async fn spawn_first_pass(
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

/// What the validation pass found.
struct FirstPass {
    /// A keyed payload's digest.
    summary: Option<PayloadSummary>,
    /// The validated batches, when all of them fit in the memory budget: the commit pass
    /// then needs no second read (small inputs cost what they did before streaming).
    kept: Option<Vec<RecordBatch>>,
    /// The contract version written, fixed by the first batch.
    version: VersionPin,
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
fn conform_valid(
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

/// Claim `key` for the payload; the encoder settings to write with, and, when the claim
/// stands for this payload written as `older` (the version text input came as, which a
/// binary from before the version written now wrote it as), the first pass of the payload
/// as that version: the retry is the same commit, written as it was.
async fn claim(
    writer: &WriteConfig,
    source: Arc<dyn BatchSource>,
    version: &VersionPin,
    key: &str,
    payload: &PayloadSummary,
    older: Option<Arc<crate::schema::contract::ContractVersion>>,
) -> Result<(PartEncoding, Option<FirstPass>)> {
    // The store's identity is created with the first part (`publish_flush`), not here:
    // a claim refused as a conflict publishes nothing at all.
    let store = writer.store.as_ref();
    let now = rfc3339(writer.clock.now());
    let resume = writer.resume;
    let may_differ = older.is_some();
    match commit_key::claim(
        store,
        key,
        payload,
        PartEncoding::default(),
        now,
        resume,
        may_differ,
    )
    .await?
    {
        Claimed::Ours(how, encoding) => {
            tracing::info!(commit_key = key, ?how, ?encoding, payload = %payload.payload_sha256, "commit key claimed");
            Ok((encoding, None))
        }
        Claimed::Other(other) => {
            let encoding = PartEncoding::from_tag(other.part_encoding)?;
            if let Some(older) = older {
                let pin = VersionPin::new(Some(&older.version))?;
                let pass = spawn_first_pass(writer, &source, pin).await?;
                if pass.summary.as_ref().map(|s| &s.payload_sha256) == Some(&other.payload_sha256) {
                    tracing::info!(commit_key = key, version = %older.version, "the key's claim stands for this payload written as {}: writing it as that", older.version);
                    return Ok((encoding, Some(pass)));
                }
            }
            if !resume {
                return Err(Error::Conflict {
                    key: crate::format::keys::commit_key_claim_key(key),
                    message: commit_key::conflict_message(
                        key,
                        &other.payload_sha256,
                        &payload.payload_sha256,
                    ),
                });
            }
            tracing::warn!(commit_key = key, claimed = %other.payload_sha256, ours = %payload.payload_sha256, "resuming a commit key claimed for another payload: committed flushes are kept");
            Ok((encoding, None))
        }
        Claimed::Format1(old) => {
            tracing::info!(
                commit_key = key,
                "format-1 claim found: comparing part digests before publishing"
            );
            let ours = format1_digest(writer, source, version.clone(), key).await?;
            if ours == old.payload_sha256 || resume {
                Ok((PartEncoding::V1, None))
            } else {
                Err(Error::Conflict {
                    key: crate::format::keys::commit_key_claim_key(key),
                    message: commit_key::conflict_message(key, &old.payload_sha256, &ours),
                })
            }
        }
    }
}

/// The format-1 payload digest of `source`: encode every flush with the settings format-1
/// claims were written with ([`PartEncoding::V1`]; never more than one per encoder at
/// once, nothing kept but its sha256), publish nothing.
async fn format1_digest(
    writer: &WriteConfig,
    source: Arc<dyn BatchSource>,
    version: VersionPin,
    key: &str,
) -> Result<String> {
    let mut grouper = Grouper::new(writer.batch_rows, writer.max_buffered_bytes);
    let mut v = Validator::new();
    let (validated, typed) = (source.validated(), source.typed());
    let mut pending = FuturesOrdered::new();
    let mut done: Vec<(String, String, u64, EncodedPart)> = Vec::new();
    let encoders = writer.encoders();
    let mut rx = reader(source);
    let mut last = false;
    while !last {
        let flushes = match rx.recv().await {
            Some(b) => {
                let (batch, _) = conform_valid(&version, &mut v, b?, validated, typed)?;
                grouper.push(&batch, chrono::DateTime::UNIX_EPOCH, false)?
            }
            None => {
                last = true;
                grouper.finish()?
            }
        };
        for f in flushes {
            let id = derived_commit_id(&f.run_id, &f.target_crs, key, f.index_in_group).to_string();
            pending.push_back(async move {
                let enc = crate::base::pool::run(move || {
                    encode::encode_with(&f.rows.into_batch()?, &id, PartEncoding::V1)
                })
                .await??;
                Ok::<_, Error>((f.run_id, f.target_crs, f.index_in_group, enc))
            });
            while pending.len() >= encoders {
                if let Some(r) = pending.next().await {
                    done.push(r?);
                }
            }
        }
    }
    while let Some(r) = pending.next().await {
        done.push(r?);
    }
    Ok(payload_sha256(&format1_order(grouper.partitions(), done)))
}

/// The encoded flushes as the commits a format-1 claim lists: partition by partition (in
/// the order of `partitions`, their first appearance), then by index in the partition.
fn format1_order(
    partitions: Vec<(String, String)>,
    mut done: Vec<(String, String, u64, EncodedPart)>,
) -> Vec<ClaimedCommit> {
    let rank: std::collections::HashMap<(String, String), usize> = partitions
        .into_iter()
        .enumerate()
        .map(|(i, p)| (p, i))
        .collect();
    done.sort_by_key(|(r, c, i, _)| (rank.get(&(r.clone(), c.clone())).copied(), *i));
    done.into_iter()
        .map(|(run_id, target_crs, _, e)| ClaimedCommit {
            run_id,
            target_crs,
            commit_id: e.commit_id,
            sha256: e.sha256,
            rows: e.rows,
        })
        .collect()
}

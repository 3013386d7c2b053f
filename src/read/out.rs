//! A scan written out: Parquet, Arrow IPC (file or stream), NDJSON or CSV.
//!
//! A file is written to a temp beside it and renamed into place only when the whole scan
//! succeeded, so a failed scan leaves no output (and an earlier file of that name as it
//! was). A stream (standard output) cannot be taken back: on failure it is cut inside a
//! message, so an Arrow reader fails on it instead of taking a short stream for a whole one.

use std::io::Write;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::StreamExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::read::scan::Scan;

/// What a scan is written as.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutFormat {
    /// `.parquet`: zstd.
    Parquet,
    /// `.arrow` (also `.feather`, `.ipc`): the Arrow IPC file format.
    ArrowFile,
    /// The Arrow IPC stream format (`--out -`).
    ArrowStream,
    /// `.ndjson` (also `.jsonl`): one JSON object per row.
    Ndjson,
    /// `.csv`: with a header line.
    Csv,
}

impl OutFormat {
    /// The format a file name's extension names.
    pub fn of_path(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("parquet") => Ok(OutFormat::Parquet),
            Some("arrow" | "feather" | "ipc") => Ok(OutFormat::ArrowFile),
            Some("arrows") => Ok(OutFormat::ArrowStream),
            Some("ndjson" | "jsonl") => Ok(OutFormat::Ndjson),
            Some("csv") => Ok(OutFormat::Csv),
            _ => Err(Error::invalid(
                Param::Out,
                text![format!(
                    "{}: the extension names the format: .parquet, .arrow, .ndjson or .csv \
                 (`-`: an Arrow IPC stream on standard output)",
                    path.display()
                )],
            )),
        }
    }
}

/// One open writer of any format.
enum Writer<W: Write + Send> {
    Parquet(Box<ArrowWriter<W>>),
    File(arrow_ipc::writer::FileWriter<W>),
    Stream(arrow_ipc::writer::StreamWriter<W>),
    Json(arrow_json::LineDelimitedWriter<W>),
    Csv(arrow_csv::Writer<W>),
}

impl<W: Write + Send> Writer<W> {
    fn new(format: OutFormat, w: W, schema: &SchemaRef) -> Result<Self> {
        Ok(match format {
            OutFormat::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .build();
                Writer::Parquet(Box::new(ArrowWriter::try_new(
                    w,
                    schema.clone(),
                    Some(props),
                )?))
            }
            OutFormat::ArrowFile => {
                Writer::File(arrow_ipc::writer::FileWriter::try_new(w, schema)?)
            }
            OutFormat::ArrowStream => {
                Writer::Stream(arrow_ipc::writer::StreamWriter::try_new(w, schema)?)
            }
            // Null keys written out (`"rejection_reason":null`), so the output is valid
            // `append`/`check` input, which wants every field present.
            OutFormat::Ndjson => Writer::Json(
                arrow_json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow_json::writer::LineDelimited>(w),
            ),
            OutFormat::Csv => Writer::Csv(arrow_csv::Writer::new(w)),
        })
    }

    fn write(&mut self, b: &RecordBatch) -> Result<()> {
        match self {
            Writer::Parquet(w) => w.write(b)?,
            Writer::File(w) => w.write(b)?,
            Writer::Stream(w) => w.write(b)?,
            Writer::Json(w) => w.write(&utc_as_offset(b)?)?,
            Writer::Csv(w) => w.write(&utc_as_offset(b)?)?,
        }
        Ok(())
    }

    fn finish(self) -> Result<W> {
        Ok(match self {
            Writer::Parquet(w) => w.into_inner()?,
            Writer::File(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Writer::Stream(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Writer::Json(mut w) => {
                w.finish()?;
                w.into_inner()
            }
            Writer::Csv(w) => w.into_inner(),
        })
    }
}

/// `b` with its `UTC` timestamps labelled `+00:00` (the same instants): the text writers
/// format a named zone only with a time-zone database, an offset without one.
pub(crate) fn utc_as_offset(b: &RecordBatch) -> Result<RecordBatch> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::TimestampMicrosecondType;
    use arrow_schema::{DataType, Field, Schema, TimeUnit};
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        match f.data_type() {
            DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => {
                let a = c
                    .as_primitive::<TimestampMicrosecondType>()
                    .clone()
                    .with_timezone("+00:00");
                fields.push(Field::new(
                    f.name(),
                    arrow_array::Array::data_type(&a).clone(),
                    f.is_nullable(),
                ));
                columns.push(std::sync::Arc::new(a) as arrow_array::ArrayRef);
            }
            _ => {
                fields.push(f.as_ref().clone());
                columns.push(c.clone());
            }
        }
    }
    Ok(RecordBatch::try_new(
        std::sync::Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// Rows written.
type Rows = u64;

/// Write every batch of `scan` to `w` as `format`; the first error stops it.
async fn drain<W: Write + Send>(
    scan: Scan,
    format: OutFormat,
    w: W,
    on_fail: impl FnOnce(&mut W),
) -> Result<(Rows, W)> {
    let schema = scan.schema();
    let mut writer = Writer::new(format, w, &schema)?;
    let mut batches = scan.into_stream();
    let mut rows = 0;
    let mut failed = None;
    while let Some(b) = batches.next().await {
        match b.and_then(|b| writer.write(&b).map(|()| b.num_rows())) {
            Ok(n) => rows += n as u64,
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    match failed {
        None => Ok((rows, writer.finish()?)),
        Some(e) => {
            if let Writer::Stream(mut s) = writer {
                {
                    let inner = s.get_mut();
                    on_fail(inner);
                }
            }
            Err(e)
        }
    }
}

/// Write `scan` to the file `path` (format from its extension), through a temp renamed
/// into place only after every row was written: on error nothing is at `path` that was
/// not there before.
pub async fn write_file(scan: Scan, path: &Path) -> Result<Rows> {
    let format = OutFormat::of_path(path)?;
    to_file(path, |w| drain(scan, format, w, |_| {})).await
}

/// Scan `snap` with `opts` into the file `path` (format from its extension) by the rule of
/// [`write_file`]: rows written, and what the scan did. A `.parquet` file of every column
/// and row is written by copying the checked parts' column chunks ([`crate::read::copy`]),
/// anything else by decoding ([`mod@crate::read::scan`]); either way every part is checked
/// against its pointer before anything of it is written.
pub async fn scan_to_file(
    store: std::sync::Arc<dyn crate::publish::AtomicPublisher>,
    snap: &crate::read::snapshot::Snapshot,
    opts: &crate::read::scan::ScanOptions,
    path: &Path,
) -> Result<(Rows, std::sync::Arc<crate::read::scan::ScanStats>)> {
    if OutFormat::of_path(path)? == OutFormat::Parquet && crate::read::copy::copyable(opts) {
        let stats = std::sync::Arc::new(crate::read::scan::ScanStats::default());
        let rows = copy_file(store, snap, opts, &stats, path).await?;
        return Ok((rows, stats));
    }
    let s = crate::read::scan::scan(store, snap, opts)?;
    let stats = s.stats();
    Ok((write_file(s, path).await?, stats))
}

/// Write the parts of `snap` to the Parquet file `path` by copying their checked column
/// chunks ([`crate::read::copy`]; the scan must be [`crate::read::copy::copyable`]), by
/// the same temp-and-rename rule as [`write_file`].
async fn copy_file(
    store: std::sync::Arc<dyn crate::publish::AtomicPublisher>,
    snap: &crate::read::snapshot::Snapshot,
    opts: &crate::read::scan::ScanOptions,
    stats: &crate::read::scan::ScanStats,
    path: &Path,
) -> Result<Rows> {
    if OutFormat::of_path(path)? != OutFormat::Parquet {
        return Err(Error::internal(format!(
            "copy_file to {}: only Parquet is copied",
            path.display()
        )));
    }
    to_file(path, |w| {
        crate::read::copy::copy_parquet(store, snap, opts, stats, w)
    })
    .await
}

/// Run `body` on a buffered temp file beside `path`, then sync it and rename it to `path`;
/// on error the temp is removed and `path` left as it was.
async fn to_file<F, Fut>(path: &Path, body: F) -> Result<Rows>
where
    F: FnOnce(std::io::BufWriter<std::fs::File>) -> Fut,
    Fut: std::future::Future<Output = Result<(Rows, std::io::BufWriter<std::fs::File>)>>,
{
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".lineage-scan-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| Error::io(&dir, e))?;
    let (file, tmp_path) = tmp.into_parts();
    let w = std::io::BufWriter::with_capacity(1 << 20, file);
    let (rows, w) = body(w).await?;
    let file = w
        .into_inner()
        .map_err(|e| Error::io(path, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(path, e))?;
    tmp_path
        .persist(path)
        .map_err(|e| Error::io(path, e.error))?;
    Ok(rows)
}

/// Write `scan` to `w` as an Arrow IPC stream. On failure the stream is left cut inside a
/// message (a continuation marker and a length with nothing after it).
pub async fn write_stream<W: Write + Send>(scan: Scan, w: W) -> Result<Rows> {
    let (rows, mut w) = drain(scan, OutFormat::ArrowStream, w, |w| {
        let mut cut = vec![0xff, 0xff, 0xff, 0xff];
        cut.extend(0x7fff_fff0_i32.to_le_bytes());
        let _ = w.write_all(&cut);
        let _ = w.flush();
    })
    .await?;
    w.flush().map_err(|e| Error::io("<stdout>", e))?;
    Ok(rows)
}

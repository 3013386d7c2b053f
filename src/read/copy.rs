//! A scan written to Parquet by copying column chunks: each part, checked against its
//! pointer exactly as [`mod@crate::read::scan`] checks it (fetched whole, size and digest), has
//! its row groups spliced into the output as they are encoded, with their statistics,
//! page indexes and bloom filters, without decoding a value or encoding one again.
//!
//! Parts already hold the contract's columns in the contract's Parquet types, compressed
//! with zstd; a scan of every column and every row of them to Parquet would only decode
//! and re-encode the same values. Copying makes the check (the digest) the cost, not the
//! codec. A part whose Parquet schema is not the output's (a part of an older contract
//! version, which lacks the columns later versions append) is decoded, widened with null
//! columns and encoded into the same file instead, so the output always has one schema.
//!
//! Used for `.parquet` output of a scan that keeps every column and every row (no
//! `--columns`, no `--feature-id`); other scans decode ([`crate::read::out`]).

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::StreamExt;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::{Compression, ZstdLevel};
use parquet::bloom_filter::Sbbf;
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};

use crate::base::digest::Check;
use crate::base::error::{Error, Origin, Result};
use crate::publish::AtomicPublisher;
use crate::read::scan::{check_rows, decode, fetch_checked, scan_schema, ScanOptions, ScanStats};
use crate::read::snapshot::types::SnapshotPart;
use crate::read::snapshot::Snapshot;

/// Whether a scan with `opts` can be written to Parquet by copying: it keeps every column
/// and every row of every part.
pub(crate) fn copyable(opts: &ScanOptions) -> bool {
    opts.columns.is_none() && opts.feature_id.is_none() && !opts.provenance
}

/// A checked part and its footer.
struct Fetched {
    key: String,
    bytes: Bytes,
    meta: ParquetMetaData,
    /// The store's read limits, for a part that must be decoded.
    limits: crate::base::limits::ReadLimits,
}

fn corrupt(key: &str, m: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        what: "part",
        key: key.to_string(),
        message: m.to_string().into(),
    }
}

/// Write every part of `snap` to `w` as one Parquet file (see the module docs), parts in
/// snapshot order, `opts.concurrency` fetched and checked at once; the rows written. The
/// first failing part stops it (nothing of that part is written), as a scan stops.
///
/// The writing runs on a thread of its own, fed checked parts through a bounded queue, so
/// that fetching and checking the next parts go on while one is written: on two cores the
/// check (hashing) and the copy overlap instead of taking turns.
pub(crate) async fn copy_parquet<W: Write + Send + 'static>(
    store: Arc<dyn AtomicPublisher>,
    snap: &Snapshot,
    opts: &ScanOptions,
    stats: &ScanStats,
    w: W,
) -> Result<(u64, W)> {
    let (writer, schema) = file_writer(snap, w)?;
    let depth = opts.concurrency.max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Fetched>(depth);
    let thread = std::thread::Builder::new()
        .name("lineage-scan-write".into())
        .spawn(move || write_parts(writer, &schema, rx))
        .map_err(|e| Error::internal(format!("could not start the scan's writer: {e}")))?;
    let check = opts.digest;
    let mut parts = futures::stream::iter(snap.parts.clone())
        .map(|part| {
            let store = store.clone();
            async move { fetch(store.as_ref(), part, check).await }
        })
        .buffered(depth);
    let mut failed = None;
    while let Some(part) = parts.next().await {
        let part = match part {
            Ok(p) => p,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        let (len, n) = (
            part.bytes.len() as u64,
            part.meta.file_metadata().num_rows(),
        );
        // A full queue blocks this task until the writer takes one: hand it over on the
        // blocking pool so the runtime's thread is never held.
        let tx2 = tx.clone();
        let sent = tokio::task::spawn_blocking(move || tx2.send(part).is_ok())
            .await
            .unwrap_or(false);
        if !sent {
            break; // the writer stopped: its error is returned below
        }
        stats.parts_read.fetch_add(1, Ordering::Relaxed);
        stats.bytes_read.fetch_add(len, Ordering::Relaxed);
        stats
            .rows
            .fetch_add(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
    }
    drop(tx);
    let written = tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|e| Error::internal(format!("the scan's writer: {e}")))?
        .map_err(|_| Error::internal("the scan's writer panicked"))?;
    match failed {
        Some(e) => Err(e),
        None => written,
    }
}

/// The Parquet writer of the scan's file (its schema: that of the snapshot's parts) over
/// `w`.
fn file_writer<W: Write + Send>(
    snap: &Snapshot,
    w: W,
) -> Result<(SerializedFileWriter<W>, SchemaRef)> {
    let schema: SchemaRef = scan_schema(snap, None)?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_created_by(format!("lineage-store {}", env!("CARGO_PKG_VERSION")))
        .build();
    add_encoded_arrow_schema_to_metadata(&schema, &mut props);
    let descr = ArrowSchemaConverter::new().convert(&schema)?;
    let writer = SerializedFileWriter::new(w, descr.root_schema_ptr(), Arc::new(props))?;
    Ok((writer, schema))
}

/// Part `part`, fetched and checked (with `check`), and its footer parsed.
async fn fetch(store: &dyn AtomicPublisher, part: SnapshotPart, check: Check) -> Result<Fetched> {
    let bytes = fetch_checked(store, &part, check).await?;
    let key = part.pointer.part_path.clone();
    let limits = store.read_limits();
    crate::base::pool::run(move || {
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&bytes)
            .map_err(|e| corrupt(&key, format!("unreadable footer: {e}")))?;
        // The rows copied are the footer's: they must be what the pointer (or record) counts.
        check_rows(
            &part,
            u64::try_from(meta.file_metadata().num_rows()).unwrap_or(0),
        )?;
        Ok::<_, Error>(Fetched {
            key,
            bytes,
            meta,
            limits,
        })
    })
    .await?
}

/// The writer thread: every part received, in order, into the file; the rows written.
fn write_parts<W: Write + Send>(
    mut writer: SerializedFileWriter<W>,
    schema: &SchemaRef,
    parts: std::sync::mpsc::Receiver<Fetched>,
) -> Result<(u64, W)> {
    let factory = ArrowRowGroupWriterFactory::new(&writer, schema.clone());
    let (mut rows, mut row_groups) = (0u64, 0usize);
    for part in parts {
        let n = if same_columns(
            part.meta.file_metadata().schema_descr(),
            writer.schema_descr(),
        ) {
            splice(&mut writer, &part, &mut row_groups)?
        } else {
            let (batches, decoded) =
                decode(&part.key, part.bytes.clone(), schema, None, part.limits)?;
            let footer = part.meta.file_metadata().num_rows();
            if i64::try_from(decoded).ok() != Some(footer) {
                return Err(corrupt(
                    &part.key,
                    format!("the footer claims {footer} rows, but its pages hold {decoded}"),
                ));
            }
            let mut n = 0;
            for b in batches {
                let mut writers = factory.create_column_writers(row_groups)?;
                let mut leaf = 0;
                for (field, column) in schema.fields().iter().zip(b.columns()) {
                    for l in compute_leaves(field, column)? {
                        let w = writers
                            .get_mut(leaf)
                            .ok_or_else(|| Error::internal("more leaves than writers"))?;
                        w.write(&l)?;
                        leaf += 1;
                    }
                }
                let mut rg = writer.next_row_group()?;
                for w in writers {
                    w.close()?.append_to_row_group(&mut rg)?;
                }
                rg.close()?;
                row_groups += 1;
                n += b.num_rows() as u64;
            }
            n
        };
        rows += n;
    }
    Ok((rows, writer.into_inner()?))
}

/// Whether a part's leaf columns are the output file's (path, types, levels): its row groups
/// can then be spliced in. Field ids are not compared: parts of encoding 4 carry them, the
/// output schema does not, and a row group's column chunks do not name them.
fn same_columns(part: &SchemaDescriptor, out: &SchemaDescriptor) -> bool {
    part.num_columns() == out.num_columns()
        && part.columns().iter().zip(out.columns()).all(|(a, b)| {
            a.path() == b.path()
                && a.physical_type() == b.physical_type()
                && a.logical_type_ref() == b.logical_type_ref()
                && a.get_basic_info().repetition() == b.get_basic_info().repetition()
                && a.converted_type() == b.converted_type()
                && a.type_length() == b.type_length()
                && a.type_precision() == b.type_precision()
                && a.type_scale() == b.type_scale()
                && a.max_def_level() == b.max_def_level()
                && a.max_rep_level() == b.max_rep_level()
        })
}

/// Splice the row groups of a checked part whose schema is the output's; its rows.
fn splice<W: Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    part: &Fetched,
    row_groups: &mut usize,
) -> Result<u64> {
    let mut rows = 0u64;
    let descrs: Vec<ColumnDescPtr> = writer.schema_descr().columns().to_vec();
    for (i, rg) in part.meta.row_groups().iter().enumerate() {
        let index = part.meta.page_index_for_row_group(i);
        let mut out = writer.next_row_group()?;
        for (j, column) in rg.columns().iter().enumerate() {
            let bloom_filter = Sbbf::read_from_column_chunk(column, &part.bytes)
                .map_err(|e| corrupt(&part.key, format!("unreadable bloom filter: {e}")))?;
            let close = ColumnCloseResult {
                bytes_written: u64::try_from(column.compressed_size())
                    .map_err(|_| corrupt(&part.key, "a column chunk of negative size"))?,
                rows_written: u64::try_from(rg.num_rows())
                    .map_err(|_| corrupt(&part.key, "a row group of negative rows"))?,
                metadata: match descrs.get(j) {
                    Some(d) if d.as_ref() != column.column_descr() => described(column, d)
                        .map_err(|e| corrupt(&part.key, format!("unreadable column chunk: {e}")))?,
                    _ => column.clone(),
                },
                bloom_filter,
                column_index: index.column_index(j).cloned(),
                offset_index: index.offset_index(j).cloned(),
            };
            // The part's own column chunks, copied: a failure is in its bytes.
            out.append_column(&part.bytes, close)
                .map_err(|e| Error::parquet(Origin::Stored, e))?;
        }
        out.close()?;
        *row_groups += 1;
        rows += u64::try_from(rg.num_rows()).unwrap_or(0);
    }
    Ok(rows)
}

/// `column`'s metadata under the output's descriptor `descr` (the same column without the
/// part's field id, [`same_columns`]): the writer splices only chunks of its own descriptor.
/// Every field is copied; the offsets are rewritten by the writer as for any spliced chunk.
fn described(
    column: &ColumnChunkMetaData,
    descr: &ColumnDescPtr,
) -> parquet::errors::Result<ColumnChunkMetaData> {
    let c = column;
    let mut b = ColumnChunkMetaData::builder(descr.clone())
        .set_encodings_mask(*c.encodings_mask())
        .set_num_values(c.num_values())
        .set_compression_codec(c.compression_codec())
        .set_total_compressed_size(c.compressed_size())
        .set_total_uncompressed_size(c.uncompressed_size())
        .set_data_page_offset(c.data_page_offset())
        .set_dictionary_page_offset(c.dictionary_page_offset())
        .set_index_page_offset(c.index_page_offset())
        .set_bloom_filter_offset(c.bloom_filter_offset())
        .set_bloom_filter_length(c.bloom_filter_length())
        .set_offset_index_offset(c.offset_index_offset())
        .set_offset_index_length(c.offset_index_length())
        .set_column_index_offset(c.column_index_offset())
        .set_column_index_length(c.column_index_length())
        .set_unencoded_byte_array_data_bytes(c.unencoded_byte_array_data_bytes())
        .set_repetition_level_histogram(c.repetition_level_histogram().cloned())
        .set_definition_level_histogram(c.definition_level_histogram().cloned());
    if let Some(s) = c.statistics() {
        b = b.set_statistics(s.clone());
    }
    if let Some(g) = c.geo_statistics() {
        b = b.set_geo_statistics(Box::new(g.clone()));
    }
    if let Some(v) = c.page_encoding_stats() {
        b = b.set_page_encoding_stats(v.clone());
    } else if let Some(m) = c.page_encoding_stats_mask() {
        b = b.set_page_encoding_stats_mask(*m);
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`described`] under a part's own descriptor gives back the part's metadata: no field
    /// is lost in the copy.
    #[test]
    fn described_copies_every_field() {
        let batches = crate::write::demo::generate(300, 1, 7).unwrap_or_else(|e| panic!("{e}"));
        let batch = &batches[0];
        let enc = crate::parts::encode::encode(batch, "c-1").unwrap_or_else(|e| panic!("{e}"));
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&enc.bytes)
            .unwrap_or_else(|e| panic!("{e}"));
        for c in meta.row_group(0).columns() {
            let again = described(c, &c.column_descr_ptr()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&again, c, "{}", c.column_path());
        }
    }
}

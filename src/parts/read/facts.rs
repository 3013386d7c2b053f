//! The facts of a part ([`PartFacts`]) from its footer and, where statistics do not settle
//! them, from decoding a few column chunks fetched into a sparse view of the file.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use bytes::Bytes;
use futures::FutureExt;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use super::sparse::Sparse;
use super::{
    corrupt, fetch_footer, row_count_problem, stream_digests_chunked, Footer, PartFacts, Source,
    HASH_CHUNK_BYTES, LOCAL_HASH_MIN_BYTES, MAX_FETCH_BYTES,
};
use crate::base::digest::{Digests, Hasher, Want};
use crate::base::error::{Error, Result};
use crate::publish::AtomicPublisher;
use crate::schema::contract::{self, col};

/// The digests `want` asks for and the [`PartFacts`] of a part of `size` bytes. A part
/// that fits in one hash chunk is fetched in one read and both come from those bytes; a
/// larger one is streamed, then its footer and the needed column chunks are fetched
/// (never whole).
pub async fn hash_and_facts(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    want: Want,
    with_ranges: bool,
    on_bytes: &(dyn Fn(u64) + Send + Sync),
) -> (Result<Digests>, Result<PartFacts>) {
    // A backend that hashes where the bytes are (local disk) does large parts itself;
    // the footer is then read on its own, a few KiB.
    if size >= LOCAL_HASH_MIN_BYTES {
        match store.digest_range(key, 0..size, want).await {
            Ok(Some((digests, n))) => {
                on_bytes(n);
                return (Ok(digests), read_facts(store, key, size, with_ranges).await);
            }
            Ok(None) => {}
            Err(e) => return (Err(e), read_facts(store, key, size, with_ranges).await),
        }
    }
    if size > HASH_CHUNK_BYTES {
        let digests =
            stream_digests_chunked(store, key, size, HASH_CHUNK_BYTES, want, on_bytes).await;
        return (digests, read_facts(store, key, size, with_ranges).await);
    }
    match store.get_range(key, 0..size).await {
        Ok(bytes) => {
            on_bytes(bytes.len() as u64);
            // Hash and decode on the encoder pool (one thread per core), not inline: a
            // verify's parts are futures of one task, which would use one core.
            let k = key.to_string();
            let limits = store.read_limits();
            let done = crate::base::pool::run(move || {
                let digests = Hasher::of(want, &bytes);
                // Shorter than listed means the object changed under us: judge what is there.
                let facts = facts_from(
                    &Source::Memory(&bytes, limits),
                    &k,
                    bytes.len() as u64,
                    with_ranges,
                )
                .now_or_never()
                .unwrap_or_else(|| Err(Error::internal("reading a part from memory waited")));
                (digests, facts)
            })
            .await;
            match done {
                Ok((digests, facts)) => (Ok(digests), facts),
                Err(e) => {
                    let again = Error::internal(e.to_string());
                    (Err(e), Err(again))
                }
            }
        }
        Err(e) => (Err(e), read_facts(store, key, size, with_ranges).await),
    }
}

/// Read the footer of a part of `size` bytes and the columns the checks need.
/// `with_ranges` also reads `sequence` and `event_time_utc` (for `repair`).
/// An error means the object is not a readable Parquet file (the message says why).
pub async fn read_facts(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    with_ranges: bool,
) -> Result<PartFacts> {
    facts_from(&Source::Store(store), key, size, with_ranges).await
}

/// The facts of a part of `size` bytes from its footer, decoding only the column chunks
/// whose statistics do not settle them.
pub(super) async fn facts_from(
    src: &Source<'_>,
    key: &str,
    size: u64,
    with_ranges: bool,
) -> Result<PartFacts> {
    let bad = |m: String| corrupt(key, m);
    let Footer {
        start: footer_start,
        bytes: footer,
        meta,
    } = fetch_footer(src, key, size).await?;
    if let Some(why) = row_count_problem(&meta, size) {
        return Err(bad(why));
    }
    let meta = Arc::new(meta);
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Skip);
    let arrow_meta = ArrowReaderMetadata::try_new(meta.clone(), options.clone())
        .map_err(|e| bad(format!("no Arrow schema in the footer: {e}")))?;
    // A part read whole already (for its digests), or large enough that its bytes were
    // read for them anyway; a small part whose footer alone is read (an orphan `repair`
    // looks at) is bounded by its readers only.
    if matches!(src, Source::Memory(..)) || size >= LOCAL_HASH_MIN_BYTES {
        decoded_bound(src, key, size, &meta).await?;
    }
    let mut facts = footer_facts(&meta, &arrow_meta);
    if let Some(problem) = schema_problem(&facts, &arrow_meta) {
        facts.schema_problem = Some(problem);
        return Ok(facts); // columns are not where the contract puts them
    }
    let (decode_partitions, decode_ranges) = facts_from_statistics(&meta, with_ranges, &mut facts);
    let cols = columns_to_decode(decode_partitions, decode_ranges);
    let mut pieces = vec![(footer_start, footer)];
    pieces.extend(fetch_chunks(src, key, size, &meta, &cols).await?);
    // Read the partition columns as dictionaries: our writer dictionary-encodes them (one
    // value per part), so the reader hands back the dictionary and small integer keys
    // instead of one string per row (most of the decode time of a verify).
    let arrow_meta = ArrowReaderMetadata::try_new(
        meta.clone(),
        options.with_schema(dictionary_partitions(arrow_meta.schema())),
    )
    .map_err(|e| bad(format!("partition columns unreadable as dictionaries: {e}")))?;
    let sparse = Sparse::new(size, pieces);
    let mask = ProjectionMask::roots(arrow_meta.parquet_schema(), cols.iter().copied());
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(sparse, arrow_meta)
        .with_projection(mask)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let rows = decode_facts(key, reader, (decode_partitions, decode_ranges), &mut facts)?;
    if rows != facts.rows {
        let claims = facts.rows;
        return Err(bad(format!(
            "footer: the file claims {claims} rows, but its pages hold {rows} (decoded)"
        )));
    }
    Ok(facts)
}

/// The columns a footer check decodes: the partition columns when statistics did not
/// settle them, `sequence` always (the rows its pages hold are the part's real row count,
/// which a footer can overstate while holding together: readers that trust it, e.g.
/// DuckDB's count(*), would count rows that are not there), and `event_time_utc` when
/// the ranges must be decoded.
fn columns_to_decode(decode_partitions: bool, decode_ranges: bool) -> Vec<usize> {
    let mut cols = Vec::new();
    if decode_partitions {
        cols.extend([col::RUN_ID, col::TARGET_CRS]);
    }
    cols.push(col::SEQUENCE);
    if decode_ranges {
        cols.push(col::EVENT_TIME_UTC);
    }
    cols
}

/// Why the file's schema is not the one of the contract version its footer declares
/// (1.2.0 when it declares none or an unknown one: that is reported elsewhere), or `None`.
fn schema_problem(facts: &PartFacts, arrow_meta: &ArrowReaderMetadata) -> Option<String> {
    let declared = facts
        .schema_version
        .as_deref()
        .and_then(|v| contract::version(v).ok())
        .unwrap_or_else(|| {
            contract::version(contract::SCHEMA_VERSION).unwrap_or_else(|_| contract::newest())
        });
    contract::check_schema_against(&declared.schema(), arrow_meta.schema())
        .err()
        .map(|e| e.to_string())
}

/// Decode the partition values and (or) the ranges that statistics did not settle from
/// the batches of `reader` into `facts`; the rows decoded.
fn decode_facts(
    key: &str,
    reader: ParquetRecordBatchReader,
    (decode_partitions, decode_ranges): (bool, bool),
    facts: &mut PartFacts,
) -> Result<u64> {
    let mut seq: Option<(i64, i64)> = None;
    let mut time: Option<(i64, i64)> = None;
    let mut rows = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(key, format!("unreadable column data: {e}")))?;
        rows += batch.num_rows() as u64;
        if decode_partitions {
            add_partition_values(key, &batch, facts)?;
        }
        if decode_ranges {
            widen_ranges(key, &batch, &mut seq, &mut time)?;
        }
    }
    if decode_ranges {
        facts.sequence = seq;
        facts.event_time_us = time;
    }
    Ok(rows)
}

/// Fill what the column chunks' statistics settle into `facts`. The ranges (when
/// `with_ranges`) come from exact min/max statistics when every row group has them (our
/// writer always writes them; the bytes they are in are the bytes the sha256 covers);
/// likewise the partition values, when every row group's statistics say it holds one
/// exact value and no null (ours always do: building a reader and decoding two columns
/// was most of the check of a small part). Returns what is left to decode: (partitions,
/// ranges).
fn facts_from_statistics(
    meta: &ParquetMetaData,
    with_ranges: bool,
    facts: &mut PartFacts,
) -> (bool, bool) {
    let stat_ranges = if with_ranges {
        chunk_range(meta, col::SEQUENCE).zip(chunk_range(meta, col::EVENT_TIME_UTC))
    } else {
        None
    };
    let decode_ranges = with_ranges && stat_ranges.is_none();
    let stat_partitions = chunk_values(meta, col::RUN_ID).zip(chunk_values(meta, col::TARGET_CRS));
    let decode_partitions = stat_partitions.is_none();
    if let Some((runs, crs)) = stat_partitions {
        facts.run_ids = runs;
        facts.target_crs = crs;
    }
    if let Some((s, t)) = stat_ranges {
        facts.sequence = Some(s);
        facts.event_time_us = Some(t);
    }
    (decode_partitions, decode_ranges)
}

/// The facts the footer states: its metadata keys (from the Arrow schema's metadata or the
/// Parquet key-value metadata) and row count; the rest left empty.
fn footer_facts(meta: &ParquetMetaData, arrow_meta: &ArrowReaderMetadata) -> PartFacts {
    let kv = |name: &str| {
        meta.file_metadata()
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|k| k.key == name))
            .and_then(|k| k.value.clone())
    };
    // The writer stamps both keys into the Parquet key-value metadata and into the Arrow
    // schema's metadata (stored as ARROW:schema); either is accepted.
    let either = |name: &str| {
        arrow_meta
            .schema()
            .metadata()
            .get(name)
            .cloned()
            .or_else(|| kv(name))
    };
    PartFacts {
        commit_id: either(contract::META_COMMIT_ID),
        schema_version: either(contract::META_SCHEMA_VERSION),
        store_id: either(contract::META_STORE_ID),
        schema_problem: None,
        rows: u64::try_from(meta.file_metadata().num_rows()).unwrap_or(0),
        run_ids: Vec::new(),
        target_crs: Vec::new(),
        null_partition_values: 0,
        sequence: None,
        event_time_us: None,
        writer_sig: crate::parts::writer_sig::SignatureFields::of(meta),
    }
}

/// Refuse a part that decodes to more than the store's
/// [`max_decoded_bytes`](crate::base::limits::ReadLimits::max_decoded_bytes) (what every
/// reader of it would refuse, see [`crate::parts::decoded`]): every column chunk fetched,
/// one at a time, and bounded from its page headers and dictionary.
async fn decoded_bound(
    src: &Source<'_>,
    key: &str,
    size: u64,
    meta: &ParquetMetaData,
) -> Result<()> {
    let (max, mut total) = (src.limits().max_decoded_bytes, 0u64);
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            let (start, len) = col.byte_range();
            let path = col.column_path().string();
            if start.checked_add(len).is_none_or(|end| end > size) || len > MAX_FETCH_BYTES {
                return Err(corrupt(
                    key,
                    format!("row group {g}, column {path}: {len} bytes at {start}, outside the file or over the {MAX_FETCH_BYTES}-byte limit"),
                ));
            }
            let chunk = src.range(key, start..start + len).await?;
            crate::parts::pages::check_pages(&chunk, src.max_page()).map_err(|why| {
                corrupt(key, why.prefixed(format!("row group {g}, column {path}: ")))
            })?;
            let bound = crate::parts::decoded::chunk_bound(&chunk, start, col, rg.num_rows())
                .map_err(|why| corrupt(key, format!("row group {g}, column {path}: {why}")))?;
            total = total.saturating_add(bound);
            if total > max {
                return Err(corrupt(
                    key,
                    crate::parts::decoded::too_much(max, total, g, &path),
                ));
            }
        }
    }
    Ok(())
}

/// Fetch the chunks of columns `cols` in every row group, each checked to lie inside the
/// file and to be under [`MAX_FETCH_BYTES`], and no page of them decoding to more than
/// the cap (a few fetched bytes can claim gigabytes): (offset, bytes).
async fn fetch_chunks(
    src: &Source<'_>,
    key: &str,
    size: u64,
    meta: &ParquetMetaData,
    cols: &[usize],
) -> Result<Vec<(u64, Bytes)>> {
    let mut pieces = Vec::new();
    for rg in meta.row_groups() {
        for &c in cols {
            let (start, len) = rg.column(c).byte_range();
            if start.checked_add(len).is_none_or(|end| end > size) {
                return Err(corrupt(
                    key,
                    format!("column chunk {c} lies outside the file"),
                ));
            }
            if len > MAX_FETCH_BYTES {
                return Err(corrupt(
                    key,
                    format!(
                        "column chunk {c} of {len} bytes is over the {MAX_FETCH_BYTES}-byte limit"
                    ),
                ));
            }
            pieces.push((start, src.range(key, start..start + len).await?));
        }
    }
    crate::parts::pages::check_chunks(meta, src.max_page(), |start, len| {
        pieces
            .iter()
            .find(|(s, b)| *s == start && b.len() as u64 == len)
            .map(|(_, b)| &b[..])
    })
    .map_err(|m| corrupt(key, m))?;
    Ok(pieces)
}

/// A decoded column of `batch` by its contract index (the reader returns projected
/// columns in file order, so they are looked up by name).
fn batch_column<'b>(
    key: &str,
    batch: &'b arrow_array::RecordBatch,
    c: usize,
) -> Result<&'b arrow_array::ArrayRef> {
    batch
        .column_by_name(contract::COLUMNS[c].name)
        .ok_or_else(|| {
            corrupt(
                key,
                format!("column {} is missing", contract::COLUMNS[c].name),
            )
        })
}

/// Add the run ids and target CRSs some row of `batch` holds (at most 4 each) and its
/// null partition values to `facts`.
fn add_partition_values(
    key: &str,
    batch: &arrow_array::RecordBatch,
    facts: &mut PartFacts,
) -> Result<()> {
    let bad = |m: &str| corrupt(key, m.to_string());
    let partitions = [
        (col::RUN_ID, &mut facts.run_ids),
        (col::TARGET_CRS, &mut facts.target_crs),
    ];
    for (c, out) in partitions {
        let a = batch_column(key, batch, c)?;
        facts.null_partition_values += a.null_count() as u64;
        let d = a
            .as_any_dictionary_opt()
            .ok_or_else(|| bad("partition column is not a dictionary"))?;
        let values = d
            .values()
            .as_string_opt::<i32>()
            .ok_or_else(|| bad("partition column is not a string"))?;
        // The dictionary entries some row refers to.
        let mut used = vec![false; values.len()];
        for (i, k) in d.normalized_keys().into_iter().enumerate() {
            if a.is_valid(i) {
                if let Some(u) = used.get_mut(k) {
                    *u = true;
                }
            }
        }
        for (k, u) in used.into_iter().enumerate() {
            let v = values.value(k);
            if u && !out.iter().any(|x| x == v) && out.len() < 4 {
                out.push(v.to_string());
            }
        }
    }
    Ok(())
}

/// Widen `seq` and `time` by the sequence and event times of `batch`.
fn widen_ranges(
    key: &str,
    batch: &arrow_array::RecordBatch,
    seq: &mut Option<(i64, i64)>,
    time: &mut Option<(i64, i64)>,
) -> Result<()> {
    let s = batch_column(key, batch, col::SEQUENCE)?;
    let s = s
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| corrupt(key, "sequence is not int64"))?;
    let t = batch_column(key, batch, col::EVENT_TIME_UTC)?;
    let t = t
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| corrupt(key, "event_time_utc is not a timestamp"))?;
    widen(seq, s.iter().flatten());
    widen(time, t.iter().flatten());
    Ok(())
}

/// The exact (min, max) of an INT64 column over every row group, from statistics; `None`
/// when any row group lacks exact ones (or the column has only nulls).
fn chunk_range(meta: &parquet::file::metadata::ParquetMetaData, c: usize) -> Option<(i64, i64)> {
    use parquet::file::statistics::Statistics;
    let mut acc: Option<(i64, i64)> = None;
    for rg in meta.row_groups() {
        if rg.num_rows() == 0 {
            continue;
        }
        let Some(Statistics::Int64(s)) = rg.column(c).statistics() else {
            return None;
        };
        if !(s.min_is_exact() && s.max_is_exact()) {
            return None;
        }
        let (lo, hi) = (*s.min_opt()?, *s.max_opt()?);
        widen(&mut acc, [lo, hi].into_iter());
    }
    acc
}

/// The distinct values (at most 4, as [`PartFacts`] keeps) of a string column, from the
/// column chunks' statistics when every non-empty row group has exact ones saying it holds
/// a single value and no null; `None` when any does not (then the column is decoded).
fn chunk_values(meta: &parquet::file::metadata::ParquetMetaData, c: usize) -> Option<Vec<String>> {
    use parquet::file::statistics::Statistics;
    let mut out: Vec<String> = Vec::new();
    for rg in meta.row_groups() {
        if rg.num_rows() == 0 {
            continue;
        }
        let Some(Statistics::ByteArray(s)) = rg.column(c).statistics() else {
            return None;
        };
        if !(s.min_is_exact() && s.max_is_exact()) || s.null_count_opt() != Some(0) {
            return None;
        }
        let (lo, hi) = (s.min_opt()?, s.max_opt()?);
        if lo != hi {
            return None;
        }
        let v = std::str::from_utf8(lo.data()).ok()?;
        if !out.iter().any(|x| x == v) && out.len() < 4 {
            out.push(v.to_string());
        }
    }
    Some(out)
}

/// The contract schema with `run_id` and `target_crs` read as `Dictionary(Int32, Utf8)`.
fn dictionary_partitions(schema: &arrow_schema::SchemaRef) -> arrow_schema::SchemaRef {
    use arrow_schema::{DataType, Field, Schema};
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if i == col::RUN_ID || i == col::TARGET_CRS {
                Field::new(
                    f.name(),
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                    f.is_nullable(),
                )
                // A part's field ids (encoding 4) stay: the reader refuses other metadata.
                .with_metadata(f.metadata().clone())
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn widen(acc: &mut Option<(i64, i64)>, values: impl Iterator<Item = i64>) {
    for v in values {
        *acc = Some(match *acc {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    }
}

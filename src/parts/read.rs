//! Reading a part without holding it whole in memory: streaming digests over ranged
//! reads, and the footer plus a few column chunks for the contract checks.
//!
//! Everything goes through [`AtomicPublisher::get_range`], so it works on every backend.
//! The footer is fetched first; then only the column chunks a check needs are fetched and
//! decoded from a sparse in-memory view of the file ([`Sparse`]). A part no larger than one
//! hash chunk is fetched once ([`hash_and_facts`]): its hash and its facts come from the
//! same bytes, so nothing is read twice.

use std::io::Cursor;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use bytes::Bytes;
use futures::FutureExt;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use crate::schema::rules::quote;
use parquet::file::reader::{ChunkReader, Length};

use crate::base::digest::{Digests, Hasher, Want};
use crate::base::error::{Error, Result};
use crate::publish::AtomicPublisher;
use crate::schema::contract::{self, col};

/// Bytes fetched per ranged read while hashing: large enough for few round trips to an
/// object store, small enough that many parts hash in parallel in bounded memory.
pub const HASH_CHUNK_BYTES: u64 = 4 * 1024 * 1024;
/// Parts at least this large are hashed by [`AtomicPublisher::digest_range`] where the
/// backend offers it; smaller ones are read once for both hash and footer.
pub const LOCAL_HASH_MIN_BYTES: u64 = 512 * 1024;
/// Largest footer or column chunk fetched for the contract checks. Ours are far smaller
/// (a 100k-row part's partition columns are a few KiB, dictionary-encoded); the cap keeps
/// a hostile file under a part's name from making `verify` load it whole.
pub const MAX_FETCH_BYTES: u64 = 256 * 1024 * 1024;

/// Lower-case hex sha256 of an object of `size` bytes, read in chunks (replicate's
/// comparisons). `on_bytes` sees every chunk length (for progress).
pub async fn stream_sha256(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    on_bytes: &(dyn Fn(u64) + Send + Sync),
) -> Result<String> {
    let d = stream_digests_chunked(store, key, size, HASH_CHUNK_BYTES, Want::SHA256, on_bytes);
    Ok(d.await?.sha256.unwrap_or_default())
}

/// The digests `want` asks for of an object of `size` bytes, read in chunks of `chunk`
/// bytes (at least 1). Each chunk is hashed on the encoder pool (one thread per core)
/// while the next one is read: a verify runs its reads as many futures of one task, so
/// hashing inline would use one core.
pub async fn stream_digests_chunked(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    chunk: u64,
    want: Want,
    on_bytes: &(dyn Fn(u64) + Send + Sync),
) -> Result<Digests> {
    let chunk = chunk.max(1);
    let read = |pos: u64| async move {
        if pos < size {
            store.get_range(key, pos..(pos + chunk).min(size)).await
        } else {
            Ok(Bytes::new())
        }
    };
    let mut h = Hasher::new(want);
    let mut pos = 0;
    let mut data = read(0).await?;
    // Empty: done, or shorter than listed (the object changed under us: hash what there is).
    while !data.is_empty() {
        pos += data.len() as u64;
        on_bytes(data.len() as u64);
        let hashing = crate::base::pool::run(move || {
            h.update(&data);
            h
        });
        let (hashed, next) = tokio::join!(hashing, read(pos));
        h = hashed?;
        data = next?;
    }
    Ok(h.finish())
}

/// Where the byte ranges of a part come from.
pub(crate) enum Source<'a> {
    /// Ranged reads of the store.
    Store(&'a dyn AtomicPublisher),
    /// The whole part, already fetched.
    Memory(&'a Bytes),
}

impl Source<'_> {
    pub(crate) async fn range(&self, key: &str, r: Range<u64>) -> Result<Bytes> {
        match self {
            Source::Store(store) => store.get_range(key, r).await,
            Source::Memory(b) => {
                let end = usize::try_from(r.end).unwrap_or(usize::MAX).min(b.len());
                let start = usize::try_from(r.start).unwrap_or(usize::MAX).min(end);
                Ok(b.slice(start..end))
            }
        }
    }
}

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
            let done = crate::base::pool::run(move || {
                let digests = Hasher::of(want, &bytes);
                // Shorter than listed means the object changed under us: judge what is there.
                let facts =
                    facts_from(&Source::Memory(&bytes), &k, bytes.len() as u64, with_ranges)
                        .now_or_never()
                        .unwrap_or_else(|| {
                            Err(Error::Internal("reading a part from memory waited".into()))
                        });
                (digests, facts)
            })
            .await;
            match done {
                Ok((digests, facts)) => (Ok(digests), facts),
                Err(e) => {
                    let again = Error::Internal(e.to_string());
                    (Err(e), Err(again))
                }
            }
        }
        Err(e) => (Err(e), read_facts(store, key, size, with_ranges).await),
    }
}

/// What a part's footer and partition columns say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartFacts {
    /// `lineage_commit_id` from the footer, if present.
    pub commit_id: Option<String>,
    /// `lineage_schema_version` from the footer, if present.
    pub schema_version: Option<String>,
    /// `lineage_store_id` from the footer: the store the part was written to (parts of
    /// encoding 3 and later; `None` before).
    pub store_id: Option<String>,
    /// Why the Arrow schema is not the contract, if it is not.
    pub schema_problem: Option<String>,
    /// Rows, from the footer.
    pub rows: u64,
    /// Distinct `run_id` values (at most a few, for messages), and whether any was null.
    pub run_ids: Vec<String>,
    /// Distinct `target_crs` values.
    pub target_crs: Vec<String>,
    /// Null partition values seen.
    pub null_partition_values: u64,
    /// Smallest and largest `sequence` (only with `with_ranges`).
    pub sequence: Option<(i64, i64)>,
    /// Earliest and latest `event_time_utc` in microseconds (only with `with_ranges`).
    pub event_time_us: Option<(i64, i64)>,
}

/// Values read from a part, as a message shows them: at most [`VALUES_SHOWN`], each
/// quoted at most 64 characters ([`quote`]), and how many more.
fn quote_all(values: &[String]) -> String {
    let mut shown: Vec<String> = values.iter().take(VALUES_SHOWN).map(|v| quote(v)).collect();
    if values.len() > VALUES_SHOWN {
        shown.push(format!("… {} more", values.len() - VALUES_SHOWN));
    }
    format!("[{}]", shown.join(", "))
}

/// Most values of one column a message lists.
const VALUES_SHOWN: usize = 5;

impl PartFacts {
    /// Why this part does not belong at `run_id`/`target_crs` as commit `commit_id` of a
    /// registered contract version, or `None` when it does.
    pub fn mismatch(&self, run_id: &str, target_crs: &str, commit_id: &str) -> Option<String> {
        let mut why = Vec::new();
        match &self.commit_id {
            None => why.push("footer carries no lineage_commit_id".to_string()),
            Some(c) if c != commit_id => why.push(format!(
                "footer commit id {}, expected {commit_id}",
                quote(c)
            )),
            Some(_) => {}
        }
        match &self.schema_version {
            None => why.push("footer carries no lineage_schema_version".to_string()),
            Some(v) => {
                if contract::version(v).is_err() {
                    let registered: Vec<String> = contract::versions()
                        .iter()
                        .map(|c| c.version.clone())
                        .collect();
                    why.push(format!(
                        "footer schema version {} is not registered (registered: {})",
                        quote(v),
                        registered.join(", ")
                    ));
                }
            }
        }
        if let Some(s) = &self.schema_problem {
            why.push(s.clone());
        }
        if self.null_partition_values > 0 {
            why.push(format!(
                "{} null run_id/target_crs values",
                self.null_partition_values
            ));
        }
        if self.run_ids.iter().any(|r| r != run_id) {
            why.push(format!(
                "run_id values {} differ from the path's {run_id:?}",
                quote_all(&self.run_ids)
            ));
        }
        if self.target_crs.iter().any(|t| t != target_crs) {
            why.push(format!(
                "target_crs values {} differ from the path's {target_crs:?}",
                quote_all(&self.target_crs)
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Why this part is not one written to the store whose identity is `store_id`, or
    /// `None` when its footer names that store. A part that names no store (written before
    /// parts named their store, or not by lineage-store) is `Some` too: nothing in it ties
    /// it to this store.
    pub fn store_mismatch(&self, store_id: Option<&str>) -> Option<String> {
        match (&self.store_id, store_id) {
            (Some(p), Some(s)) if p == s => None,
            (Some(p), Some(s)) => Some(format!(
                "its footer names store {}, but this store is {s}: it was written to another store and copied in",
                quote(p)
            )),
            (Some(p), None) => Some(format!(
                "its footer names store {}, but this store has no identity (_lineage/store.json)",
                quote(p)
            )),
            (None, _) => Some(
                "its footer names no store (written before parts named their store, or not by lineage-store), so nothing ties it to this store".into(),
            ),
        }
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

/// A part's footer: where it starts, its bytes and its decoded metadata.
pub(crate) struct Footer {
    /// Offset of the footer's first byte.
    pub start: u64,
    /// The footer's bytes (without the 8-byte length and magic).
    pub bytes: Bytes,
    /// The decoded metadata.
    pub meta: parquet::file::metadata::ParquetMetaData,
}

/// A corrupt-part error for `key`.
pub(crate) fn corrupt(key: &str, message: String) -> Error {
    Error::Corrupt {
        what: "part",
        key: key.to_string(),
        message,
    }
}

/// Fetch and decode the footer of a part of `size` bytes (two ranged reads), refusing a
/// file without the Parquet magic or with a footer over [`MAX_FETCH_BYTES`].
pub(crate) async fn fetch_footer(src: &Source<'_>, key: &str, size: u64) -> Result<Footer> {
    let bad = |m: String| corrupt(key, m);
    if size < 12 {
        return Err(bad(format!("{size} bytes is too short for Parquet")));
    }
    let tail = src.range(key, size - 8..size).await?;
    if tail.len() != 8 || &tail[4..] != b"PAR1" {
        return Err(bad("does not end in the Parquet magic PAR1".into()));
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if footer_len + 12 > size {
        return Err(bad(format!(
            "footer length {footer_len} does not fit in {size} bytes"
        )));
    }
    if footer_len > MAX_FETCH_BYTES {
        return Err(bad(format!(
            "footer of {footer_len} bytes is over the {MAX_FETCH_BYTES}-byte limit"
        )));
    }
    let start = size - 8 - footer_len;
    let bytes = src.range(key, start..size - 8).await?;
    let meta = ParquetMetaDataReader::decode_metadata(&bytes)
        .map_err(|e| bad(format!("unreadable footer: {e}")))?;
    Ok(Footer { start, bytes, meta })
}

/// Most rows a part of a given size can hold: one bit a row. Every row holds a unique
/// `event_id` and `sequence`, so no real part comes near it (lineage-store's own parts
/// hold a few bytes a row at least); a footer claiming more lies.
pub const MAX_ROWS_PER_BYTE: u64 = 8;

/// Why a footer's row counts cannot be the part's, or `None`: the file's `num_rows` is the
/// sum of its row groups', every column chunk holds as many values as its row group has
/// rows (the contract's columns are flat: a null is a value), no count is negative, and
/// the total is at most [`MAX_ROWS_PER_BYTE`] times the part's size. A footer patched to
/// claim 2^62 rows would otherwise be believed by `verify`, adopted by `repair` and
/// exported, while readers fail to allocate or hang.
pub fn row_count_problem(meta: &ParquetMetaData, size: u64) -> Option<String> {
    let file_rows = meta.file_metadata().num_rows();
    let mut sum: i128 = 0;
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let rows = rg.num_rows();
        if rows < 0 {
            return Some(format!("footer: row group {g} claims {rows} rows"));
        }
        sum += i128::from(rows);
        for col in rg.columns() {
            if col.num_values() != rows {
                return Some(format!(
                    "footer: row group {g} has {rows} rows but its column {} holds {} values",
                    col.column_path(),
                    col.num_values()
                ));
            }
        }
    }
    if i128::from(file_rows) != sum {
        return Some(format!(
            "footer: the file claims {file_rows} rows but its row groups hold {sum}"
        ));
    }
    let most = u128::from(size) * u128::from(MAX_ROWS_PER_BYTE);
    if u128::try_from(sum).unwrap_or(u128::MAX) > most {
        return Some(format!(
            "footer: {sum} rows cannot fit in {size} bytes (at most {MAX_ROWS_PER_BYTE} rows a byte)"
        ));
    }
    None
}

/// The facts of a part of `size` bytes from its footer, decoding only the column chunks
/// whose statistics do not settle them.
async fn facts_from(
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
    let mut facts = footer_facts(&meta, &arrow_meta);
    // The schema must be the one of the version the footer declares (1.2.0 when it
    // declares none or an unknown one: that is reported above).
    let declared = facts
        .schema_version
        .as_deref()
        .and_then(|v| contract::version(v).ok())
        .unwrap_or_else(|| {
            contract::version(contract::SCHEMA_VERSION).unwrap_or_else(|_| contract::newest())
        });
    if let Err(e) = contract::check_schema_against(&declared.schema(), arrow_meta.schema()) {
        facts.schema_problem = Some(e.to_string());
        return Ok(facts); // columns are not where the contract puts them
    }
    // The ranges come from the column chunks' exact min/max statistics when every row
    // group has them (our writer always writes them; the bytes they are in are the bytes
    // the sha256 covers), else from decoding the columns.
    let stat_ranges = if with_ranges {
        chunk_range(&meta, col::SEQUENCE).zip(chunk_range(&meta, col::EVENT_TIME_UTC))
    } else {
        None
    };
    let decode_ranges = with_ranges && stat_ranges.is_none();
    // Likewise the partition values: when every row group's statistics say it holds one
    // exact value and no null (ours always do), nothing needs decoding; building a reader
    // and decoding two columns was most of the check of a small part.
    let stat_partitions =
        chunk_values(&meta, col::RUN_ID).zip(chunk_values(&meta, col::TARGET_CRS));
    let decode_partitions = stat_partitions.is_none();
    if let Some((runs, crs)) = stat_partitions {
        facts.run_ids = runs;
        facts.target_crs = crs;
    }
    if let Some((s, t)) = stat_ranges {
        facts.sequence = Some(s);
        facts.event_time_us = Some(t);
    }
    if !decode_partitions && !decode_ranges {
        return Ok(facts);
    }
    let mut cols = Vec::new();
    if decode_partitions {
        cols.extend([col::RUN_ID, col::TARGET_CRS]);
    }
    if decode_ranges {
        cols.extend([col::SEQUENCE, col::EVENT_TIME_UTC]);
    }
    let mut pieces = vec![(footer_start, footer)];
    pieces.extend(fetch_chunks(src, key, size, &meta, &cols).await?);
    // No page of them decodes to more than the cap (a few fetched bytes can claim gigabytes).
    crate::parts::pages::check_chunks(&meta, |start, len| {
        pieces[1..]
            .iter()
            .find(|(s, b)| *s == start && b.len() as u64 == len)
            .map(|(_, b)| &b[..])
    })
    .map_err(bad)?;
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
    let (mut seq, mut time): (Option<(i64, i64)>, Option<(i64, i64)>) = (None, None);
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("unreadable column data: {e}")))?;
        if decode_partitions {
            add_partition_values(key, &batch, &mut facts)?;
        }
        if decode_ranges {
            widen_ranges(key, &batch, &mut seq, &mut time)?;
        }
    }
    if decode_ranges {
        facts.sequence = seq;
        facts.event_time_us = time;
    }
    Ok(facts)
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
    }
}

/// Fetch the chunks of columns `cols` in every row group, each checked to lie inside the
/// file and to be under [`MAX_FETCH_BYTES`]: (offset, bytes).
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
        .ok_or_else(|| corrupt(key, "sequence is not int64".into()))?;
    let t = batch_column(key, batch, col::EVENT_TIME_UTC)?;
    let t = t
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| corrupt(key, "event_time_utc is not a timestamp".into()))?;
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

/// Some byte ranges of a file, enough for the reader to decode the projected columns.
/// A read outside them is an error (it would mean the footer lied about its offsets).
pub(crate) struct Sparse {
    size: u64,
    pieces: Vec<(u64, Bytes)>,
}

impl Sparse {
    /// A file of `size` bytes of which only `pieces` (offset, bytes) are known.
    pub(crate) fn new(size: u64, pieces: Vec<(u64, Bytes)>) -> Self {
        Sparse { size, pieces }
    }

    fn find(&self, start: u64, len: u64) -> parquet::errors::Result<Bytes> {
        let Some(stop) = start.checked_add(len) else {
            return Err(parquet::errors::ParquetError::General(format!(
                "range {start}+{len} overflows"
            )));
        };
        for (s, b) in &self.pieces {
            let end = s + b.len() as u64;
            if start >= *s && stop <= end {
                let off = (start - s) as usize;
                return Ok(b.slice(off..off + len as usize));
            }
        }
        Err(parquet::errors::ParquetError::General(format!(
            "bytes {start}..{} were not fetched",
            start + len
        )))
    }
}

impl Length for Sparse {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for Sparse {
    type T = Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        for (s, b) in &self.pieces {
            let end = s + b.len() as u64;
            if start >= *s && start < end {
                return Ok(Cursor::new(b.slice((start - s) as usize..)));
            }
        }
        Err(parquet::errors::ParquetError::General(format!(
            "offset {start} was not fetched"
        )))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.find(start, length as u64)
    }
}

//! Reading a part without holding it whole in memory: streaming digests over ranged
//! reads, and the footer plus a few column chunks for the contract checks.
//!
//! Everything goes through [`AtomicPublisher::get_range`], so it works on every backend.
//! The footer is fetched first; then only the column chunks a check needs are fetched and
//! decoded from a sparse in-memory view of the file ([`Sparse`](sparse::Sparse)). A part no larger than one
//! hash chunk is fetched once ([`hash_and_facts`]): its hash and its facts come from the
//! same bytes, so nothing is read twice.

use std::ops::Range;

use bytes::Bytes;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use crate::schema::rules::quote;

use crate::base::digest::{Digests, Hasher, Want};
use crate::base::error::{Error, Result};
use crate::publish::AtomicPublisher;
use crate::schema::contract;

pub(crate) mod facts;
pub(crate) mod sparse;

pub use self::facts::{hash_and_facts, read_facts};

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
    /// The whole part, already fetched from a store with these read limits.
    Memory(&'a Bytes, crate::base::limits::ReadLimits),
}

impl Source<'_> {
    /// The largest page decoded: the store's
    /// [`max_page_bytes`](crate::base::limits::ReadLimits::max_page_bytes).
    pub(crate) fn max_page(&self) -> u64 {
        self.limits().max_page_bytes
    }

    /// The store's read limits.
    pub(crate) fn limits(&self) -> crate::base::limits::ReadLimits {
        match self {
            Source::Store(store) => store.read_limits(),
            Source::Memory(_, limits) => *limits,
        }
    }

    pub(crate) async fn range(&self, key: &str, r: Range<u64>) -> Result<Bytes> {
        match self {
            Source::Store(store) => store.get_range(key, r).await,
            Source::Memory(b, _) => {
                let end = usize::try_from(r.end).unwrap_or(usize::MAX).min(b.len());
                let start = usize::try_from(r.start).unwrap_or(usize::MAX).min(end);
                Ok(b.slice(start..end))
            }
        }
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
    /// The footer's writer-signature entries ([`crate::parts::writer_sig`]; all `None`
    /// for an unsigned part).
    pub writer_sig: crate::parts::writer_sig::SignatureFields,
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
    /// What the footer says, as its writer signature covers it: store id, commit id,
    /// row count and the signature entries.
    pub fn signed_footer(&self) -> crate::parts::writer_sig::SignedFooter<'_> {
        crate::parts::writer_sig::SignedFooter {
            store_id: self.store_id.as_deref(),
            commit_id: self.commit_id.as_deref(),
            rows: self.rows,
            fields: &self.writer_sig,
        }
    }

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
pub(crate) fn corrupt(key: &str, message: impl Into<crate::base::param::Text>) -> Error {
    Error::Corrupt {
        what: "part",
        key: key.to_string(),
        message: message.into(),
    }
}

/// Bytes read from a part's end when its footer is wanted: the length, the magic and, for
/// every part the writer makes at its default flush sizes, the whole footer, in one ranged
/// read (an object store bills a request, not its bytes within the region).
pub(crate) const FOOTER_PREFETCH: u64 = 64 * 1024;

/// Fetch and decode the footer of a part of `size` bytes: one ranged read of its last
/// [`FOOTER_PREFETCH`] bytes, and a second only for a footer longer than that; refusing a
/// file without the Parquet magic or with a footer over [`MAX_FETCH_BYTES`].
pub(crate) async fn fetch_footer(src: &Source<'_>, key: &str, size: u64) -> Result<Footer> {
    let bad = |m: String| corrupt(key, m);
    if size < 12 {
        return Err(bad(format!("{size} bytes is too short for Parquet")));
    }
    let from = size - FOOTER_PREFETCH.min(size);
    let end = src.range(key, from..size).await?;
    let got = end.len();
    if u64::try_from(got).ok() != Some(size - from) || &end[got - 4..] != b"PAR1" {
        return Err(bad("does not end in the Parquet magic PAR1".into()));
    }
    let footer_len = u64::from(u32::from_le_bytes([
        end[got - 8],
        end[got - 7],
        end[got - 6],
        end[got - 5],
    ]));
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
    let bytes = if start >= from {
        let at = usize::try_from(start - from).map_err(Error::internal_from)?;
        end.slice(at..got - 8)
    } else {
        src.range(key, start..size - 8).await?
    };
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;

    use super::*;
    use crate::publish::memory::MemoryPublisher;
    use crate::publish::metered::MeteredPublisher;

    /// A Parquet file whose footer carries `extra` bytes of key-value metadata.
    fn part(extra: usize) -> Bytes {
        let batch = RecordBatch::try_from_iter([(
            "x",
            Arc::new(Int64Array::from(vec![1, 2, 3])) as arrow_array::ArrayRef,
        )])
        .unwrap();
        let props = WriterProperties::builder()
            .set_key_value_metadata(Some(vec![KeyValue::new("pad".into(), "p".repeat(extra))]))
            .build();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(buf)
    }

    /// One ranged read when the footer is within the prefetch, two when it is longer; the
    /// same footer either way.
    #[tokio::test]
    async fn a_footer_costs_one_ranged_read_unless_it_is_longer_than_the_prefetch() {
        for (extra, reads) in [(100, 1), (3 * FOOTER_PREFETCH as usize, 2)] {
            let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
            let bytes = part(extra);
            mem.put_create("p.parquet", bytes.clone()).await.unwrap();
            let m = MeteredPublisher::new(mem, None);
            let f = fetch_footer(&Source::Store(&m), "p.parquet", bytes.len() as u64)
                .await
                .unwrap();
            assert_eq!(m.snapshot().range_gets, reads, "footer with {extra} bytes");
            let size = bytes.len();
            let len = u32::from_le_bytes(bytes[size - 8..size - 4].try_into().unwrap()) as usize;
            assert_eq!(f.start as usize, size - 8 - len);
            assert_eq!(f.bytes, bytes.slice(size - 8 - len..size - 8));
            let kv = f.meta.file_metadata().key_value_metadata().unwrap();
            assert!(kv
                .iter()
                .any(|k| k.key == "pad" && k.value.as_ref().map(String::len) == Some(extra)));
        }
    }
}

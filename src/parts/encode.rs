//! One flush → one Parquet file in memory (zstd, statistics on), its digests and the
//! summary the pointer records. Encoded once; the hash is over exactly the bytes that
//! will be published, so nothing is written twice or read back.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::RecordBatch;
use bytes::Bytes;
use ed25519_dalek::SigningKey;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::schema::contract::{self, col};

/// A flush ready to publish.
#[derive(Debug, Clone)]
pub struct EncodedPart {
    /// The commit id written into the footer.
    pub commit_id: String,
    /// The Parquet file.
    pub bytes: Bytes,
    /// Lower-case hex sha256 of `bytes`.
    pub sha256: String,
    /// Lower-case hex BLAKE3 of `bytes`.
    pub blake3: String,
    /// Rows in the part.
    pub rows: u64,
    /// Smallest and largest `sequence`.
    pub sequence: (i64, i64),
    /// Earliest and latest `event_time_utc`, microseconds.
    pub event_time_us: (i64, i64),
    /// The contract version written into the footer (the batch's columns say which).
    pub schema_version: String,
    /// Where its tail begins and the tail's sha256 ([`crate::parts::tail`]).
    pub tail: (u64, String),
}

/// Which encoder settings a part is written with. The settings decide the part's bytes and
/// so its sha256: a retried keyed append must encode exactly as its first attempt did (see
/// [`crate::write::commit_key`]), so the settings of every earlier writer stay selectable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartEncoding {
    /// Part encoding 1: every column dictionary-encoded (falling back to plain once a
    /// dictionary page is full), page-level statistics and page index on every column.
    /// Kept byte-for-byte for retries of keyed appends whose claim predates [`Self::V2`].
    V1,
    /// Part encoding 2: no dictionary for the columns whose values are (nearly) unique per row
    /// ([`UNIQUE_COLUMNS`]: hashing every value into a dictionary that is abandoned
    /// anyway was ~20 % of the encoding instructions), and statistics per column chunk
    /// instead of per page (min/max of every column in the footer, what `verify` and
    /// readers' row-group pruning use) except for `event_id` and `feature_id`, random
    /// strings whose min/max prune nothing (their string comparisons were ~8 %).
    /// Kept byte-for-byte for retries of keyed appends claimed under it.
    V2,
    /// Part encoding 3: [`Self::V2`] plus a Parquet split-block bloom filter on
    /// each of [`BLOOM_COLUMNS`] (`feature_id`, `event_id`: the lookups auditors make),
    /// sized for the part's rows at [`BLOOM_FPP`] false positives, so DuckDB, pyarrow,
    /// Spark and `lineage scan --feature-id` skip parts that cannot hold a value
    /// (docs/performance.md: the size cost per part and what it saves); and the footer
    /// also names the store the part is written to ([`contract::META_STORE_ID`], the id of
    /// its `_lineage/store.json`), so `repair` never adopts a part copied in from another
    /// store. Kept byte-for-byte for retries of keyed appends claimed under it, and for
    /// compacted parts (a compaction redone must publish the bytes of the first attempt).
    V3,
    /// Part encoding 4, the default: [`Self::V3`] plus a Parquet field id on every column
    /// (`PARQUET:field_id` = the contract's column id, [`contract::field_id`]), what
    /// Iceberg readers resolve columns by (without ids and without a name mapping, DuckDB's
    /// `iceberg_scan` reads every non-partition column as NULL).
    #[default]
    V4,
}

/// Columns given a bloom filter by [`PartEncoding::V3`] and [`PartEncoding::V4`].
pub const BLOOM_COLUMNS: [&str; 2] = ["feature_id", "event_id"];
/// The false-positive rate the filters are sized for: a lookup reads about one part in
/// a hundred that does not hold the value.
pub const BLOOM_FPP: f64 = 0.01;

impl PartEncoding {
    /// The tag a commit-key claim records (`part_encoding`); `None` for [`Self::V1`],
    /// which claims written before it existed mean.
    pub fn tag(self) -> Option<u32> {
        match self {
            PartEncoding::V1 => None,
            PartEncoding::V2 => Some(2),
            PartEncoding::V3 => Some(3),
            PartEncoding::V4 => Some(4),
        }
    }

    /// Whether parts of this encoding name their store in the footer.
    pub fn names_store(self) -> bool {
        matches!(self, PartEncoding::V3 | PartEncoding::V4)
    }

    /// Whether parts of this encoding carry Parquet field ids.
    pub fn has_field_ids(self) -> bool {
        matches!(self, PartEncoding::V4)
    }

    /// The encoding a claim's `part_encoding` tag names (absent: [`Self::V1`]).
    pub fn from_tag(tag: Option<u32>) -> Result<Self> {
        match tag {
            None | Some(1) => Ok(PartEncoding::V1),
            Some(2) => Ok(PartEncoding::V2),
            Some(3) => Ok(PartEncoding::V3),
            Some(4) => Ok(PartEncoding::V4),
            Some(t) => Err(Error::usage(format!(
                "part encoding {t} is newer than this lineage-store ({}): upgrade to retry this commit key",
                env!("CARGO_PKG_VERSION")
            ))),
        }
    }
}

/// Columns written without a dictionary by [`PartEncoding::V2`]: one value per event.
pub const UNIQUE_COLUMNS: [&str; 5] = [
    "event_id",
    "sequence",
    "event_time_utc",
    "feature_id",
    "accuracy_m",
];

/// Writer settings. The schema version and commit id go into the footer's key-value
/// metadata here (what `pq.read_metadata` shows) and, through the Arrow schema, into the
/// embedded `ARROW:schema` (what `pq.read_schema` shows); arrow-rs does not copy one into
/// the other, so both are set. zstd level 1 in every encoding. `rows`: the part's rows
/// (what [`PartEncoding::V3`] sizes its bloom filters for).
fn props(
    commit_id: &str,
    version: &str,
    encoding: PartEncoding,
    rows: usize,
    store_id: Option<&str>,
    compaction: bool,
) -> WriterProperties {
    let mut kv = vec![
        KeyValue::new(
            contract::META_SCHEMA_VERSION.to_string(),
            version.to_string(),
        ),
        KeyValue::new(contract::META_COMMIT_ID.to_string(), commit_id.to_string()),
    ];
    if compaction {
        kv.push(KeyValue::new(
            crate::format::compaction::META_COMPACTION_ID.to_string(),
            commit_id.to_string(),
        ));
    }
    if let Some(id) = store_id {
        kv.push(KeyValue::new(
            contract::META_STORE_ID.to_string(),
            id.to_string(),
        ));
    }
    let mut b = WriterProperties::builder()
        .set_key_value_metadata(Some(kv))
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_created_by(format!("lineage-store {}", env!("CARGO_PKG_VERSION")));
    match encoding {
        PartEncoding::V1 => b = b.set_statistics_enabled(EnabledStatistics::Page),
        PartEncoding::V2 | PartEncoding::V3 | PartEncoding::V4 => {
            b = b.set_statistics_enabled(EnabledStatistics::Chunk);
            for c in UNIQUE_COLUMNS {
                b = b.set_column_dictionary_enabled(ColumnPath::from(c), false);
            }
            for c in ["event_id", "feature_id"] {
                b = b.set_column_statistics_enabled(ColumnPath::from(c), EnabledStatistics::None);
            }
        }
    }
    if matches!(encoding, PartEncoding::V3 | PartEncoding::V4) {
        for c in BLOOM_COLUMNS {
            b = b
                .set_column_bloom_filter_enabled(ColumnPath::from(c), true)
                .set_column_bloom_filter_fpp(ColumnPath::from(c), BLOOM_FPP)
                .set_column_bloom_filter_max_ndv(ColumnPath::from(c), rows.max(1) as u64);
        }
    }
    b.build()
}

pub use crate::base::digest::sha256_hex;

/// Encode `batch` (already validated) as the part of `commit_id`, as the contract version
/// its columns are (see [`contract::version_of_schema`]), with the current settings.
pub fn encode(batch: &RecordBatch, commit_id: &str) -> Result<EncodedPart> {
    encode_with(batch, commit_id, PartEncoding::default())
}

/// [`encode`] with the given settings (a part of an encoding that names its store then names none:
/// the writer uses [`encode_for_store`]).
pub fn encode_with(
    batch: &RecordBatch,
    commit_id: &str,
    encoding: PartEncoding,
) -> Result<EncodedPart> {
    encode_for_store(batch, commit_id, encoding, None)
}

/// [`encode_with`], naming the store `store_id` in the footer when the encoding does
/// ([`PartEncoding::names_store`]; ignored by the encodings before it, so a retry under an
/// older claim stays byte-identical).
pub fn encode_for_store(
    batch: &RecordBatch,
    commit_id: &str,
    encoding: PartEncoding,
    store_id: Option<&str>,
) -> Result<EncodedPart> {
    encode_inner(batch, commit_id, encoding, store_id, false, None)
}

/// [`encode_for_store`], signed by the writer key `signer` when one is given
/// ([`crate::parts::writer_sig`]: the footer then carries the signature of the part's
/// bytes before it, its store id, commit id and rows). Without a key the bytes are
/// [`encode_for_store`]'s. A part that names no store cannot be signed (the signature
/// binds the store): refused.
pub fn encode_signed(
    batch: &RecordBatch,
    commit_id: &str,
    encoding: PartEncoding,
    store_id: Option<&str>,
    signer: Option<&SigningKey>,
) -> Result<EncodedPart> {
    if signer.is_some() && (store_id.is_none() || !encoding.names_store()) {
        return Err(Error::usage(text![
            "a part that names no store cannot be signed (this commit key's claim was made by a writer whose parts name none): retry it without ",
            Param::SigningKey
        ]));
    }
    encode_inner(batch, commit_id, encoding, store_id, false, signer)
}

/// A compacted part ([`crate::format::compaction`]): the current settings, with the
/// compaction id as the footer's commit id and as `lineage_compaction_id`.
pub fn encode_compacted(
    batch: &RecordBatch,
    compaction_id: &str,
    store_id: Option<&str>,
) -> Result<EncodedPart> {
    encode_inner(batch, compaction_id, PartEncoding::V3, store_id, true, None)
}

fn encode_inner(
    batch: &RecordBatch,
    commit_id: &str,
    encoding: PartEncoding,
    store_id: Option<&str>,
    compaction: bool,
    signer: Option<&SigningKey>,
) -> Result<EncodedPart> {
    let how = How {
        encoding,
        store_id: store_id.filter(|_| encoding.names_store()),
        compaction,
        signer,
        compression: None,
    };
    let (buf, version, batch) = write_part(batch, commit_id, &how)?;
    let rows = batch.num_rows();
    let seq = batch.column(col::SEQUENCE).as_primitive::<Int64Type>();
    let time = batch
        .column(col::EVENT_TIME_UTC)
        .as_primitive::<TimestampMicrosecondType>();
    Ok(EncodedPart {
        commit_id: commit_id.to_string(),
        sha256: sha256_hex(&buf),
        blake3: crate::base::digest::blake3_hex(&buf),
        rows: rows as u64,
        sequence: min_max(seq.values()),
        event_time_us: min_max(time.values()),
        schema_version: version,
        tail: crate::parts::tail::tail_of(&buf)?,
        bytes: Bytes::from(buf),
    })
}

/// How a part is written: its settings, the footer's names, the writer key.
struct How<'a> {
    encoding: PartEncoding,
    store_id: Option<&'a str>,
    compaction: bool,
    signer: Option<&'a SigningKey>,
    /// Replaces zstd level 1 (the floor bench's uncompressed figure); `None`: the encoding's.
    compression: Option<Compression>,
}

/// The Parquet bytes of `batch` as the part of `commit_id` written `how`, no digests: what
/// the floor bench (benches/floor.rs) times as "Parquet encoding" alone, with `compression`
/// in place of zstd level 1 when given (not a part any store holds).
pub fn parquet_bytes(
    batch: &RecordBatch,
    commit_id: &str,
    encoding: PartEncoding,
    store_id: Option<&str>,
    compression: Option<Compression>,
) -> Result<Vec<u8>> {
    let how = How {
        encoding,
        store_id: store_id.filter(|_| encoding.names_store()),
        compaction: false,
        signer: None,
        compression,
    };
    Ok(write_part(batch, commit_id, &how)?.0)
}

/// The part's bytes, the contract version written, and the batch as written.
fn write_part(
    batch: &RecordBatch,
    commit_id: &str,
    how: &How<'_>,
) -> Result<(Vec<u8>, String, RecordBatch)> {
    let (encoding, store_id) = (how.encoding, how.store_id);
    let rows = batch.num_rows();
    if rows == 0 {
        return Err(Error::internal("refusing to encode an empty flush"));
    }
    let version = contract::version_of_schema(batch.schema().as_ref())?;
    let schema = version.schema_for_part(commit_id, store_id);
    let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
    let mut props = props(
        commit_id,
        &version.version,
        encoding,
        rows,
        store_id,
        how.compaction,
    );
    if let Some(c) = how.compression {
        props = props.into_builder().set_compression(c).build();
    }
    let mut options = ArrowWriterOptions::new();
    if encoding.has_field_ids() {
        // The ids go into the Parquet schema, where readers (Iceberg's among them) take
        // them from; the embedded Arrow schema stays encoding 3's (ids in it would add
        // ~1.1 kB of base64 per part, docs/performance.md).
        let ids = ArrowSchemaConverter::new().convert(&version.with_field_ids(&schema))?;
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        options = options
            .with_skip_arrow_metadata(true)
            .with_parquet_schema(ids);
    }
    // Parquet with zstd comes to ~45 bytes per event; start near that to avoid regrowth.
    let mut writer = ArrowWriter::try_new_with_options(
        Vec::with_capacity(rows * 48 + 4096),
        schema,
        options.with_properties(props),
    )?;
    writer.write(&batch)?;
    if let (Some(key), Some(sid)) = (how.signer, store_id) {
        // Every row group written and the buffer flushed: what is in the writer now is
        // all the part's bytes before its page indexes and footer, what the signature
        // covers; the signature joins the footer's key-value metadata.
        writer.flush()?;
        writer.sync().map_err(Error::internal_from)?;
        let signed =
            crate::parts::writer_sig::sign(key, sid, commit_id, rows as u64, writer.inner());
        for kv in signed {
            writer.append_key_value_metadata(kv);
        }
    }
    let buf = writer.into_inner()?;
    Ok((buf, version.version.clone(), batch))
}

fn min_max(v: &[i64]) -> (i64, i64) {
    v.iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

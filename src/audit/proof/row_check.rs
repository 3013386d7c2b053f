//! Row proofs' row, and checking it offline: the part the proof carries against the
//! pointer's size and digests, then the row at the proof's index against the values shown
//! ([`crate::audit::proof::row`] builds them).

use arrow_array::{Array, RecordBatch, StringArray};
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::base::digest::{Check, Hasher, Want};
use crate::base::error::{Error, Result};
use crate::format::pointer::Pointer;
use crate::schema::contract;

pub(crate) const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
/// The largest part a row proof carries (a part is one flush; the writer caps parts well
/// below this).
const MAX_PROOF_PART_BYTES: u64 = 512 * 1024 * 1024;

/// A row proof's row: which event, where in the part, its values, and the part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowEvidence {
    /// The event proven.
    pub event_id: String,
    /// Its row's position in the part (from 0).
    pub row_index: u64,
    /// Its values, column by column (JSON as `scan --out F.ndjson` writes a row, nulls
    /// included).
    pub values: serde_json::Value,
    /// The part's bytes (base64): what the pointer's size and digests are checked against.
    pub part_base64: String,
}

/// What a valid row proof establishes about its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowSummary {
    /// The event.
    pub event_id: String,
    /// Its row's position in the part.
    pub row_index: u64,
    /// Its values, as decoded from the checked part.
    pub values: serde_json::Value,
}

/// One row as a JSON object, nulls included, timestamps as `scan`'s text formats write them.
pub(crate) fn row_json(one: &RecordBatch) -> Result<serde_json::Value> {
    let one = crate::read::out::utc_as_offset(one)?;
    let mut w = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow_json::writer::JsonArray>(Vec::new());
    w.write(&one)?;
    w.finish()?;
    let rows: Vec<serde_json::Value> =
        serde_json::from_slice(&w.into_inner()).map_err(Error::internal_from)?;
    rows.into_iter()
        .next()
        .ok_or_else(|| Error::internal("a one-row batch wrote no row"))
}

/// Check a row proof's row offline against its (already proven) pointer: the part it
/// carries has the pointer's size and digests, and its row at `row_index` has the
/// `event_id` and exactly the values shown. `Ok(Err(why))` when it does not hold.
pub(crate) fn check_row(
    row: &RowEvidence,
    pointer: &Pointer,
) -> Result<std::result::Result<RowSummary, String>> {
    let Ok(bytes) = B64.decode(row.part_base64.as_bytes()) else {
        return Ok(Err("the proof's part is not base64".into()));
    };
    if bytes.len() as u64 != pointer.size_bytes || pointer.size_bytes > MAX_PROOF_PART_BYTES {
        return Ok(Err(format!(
            "the proof's part has {} bytes; the commit records {}",
            bytes.len(),
            pointer.size_bytes
        )));
    }
    let got = Hasher::of(
        Want::for_check(Check::All, pointer.blake3.is_some()),
        &bytes,
    );
    let bad = got.mismatches(&pointer.sha256, pointer.blake3.as_deref(), "the commit");
    if !bad.is_empty() {
        return Ok(Err(format!("the proof's part: {}", bad.join("; "))));
    }
    let found = match locate_at(pointer, Bytes::from(bytes), row.row_index) {
        Ok(f) => f,
        Err(e) => return Ok(Err(format!("the proof's part: {e}"))),
    };
    let Some((id, values)) = found else {
        return Ok(Err(format!(
            "the part has {} rows; no row {}",
            pointer.row_count, row.row_index
        )));
    };
    if id.as_deref() != Some(row.event_id.as_str()) {
        return Ok(Err(format!(
            "row {} of the part is event {id:?}, not {:?}",
            row.row_index, row.event_id
        )));
    }
    if values != row.values {
        return Ok(Err(format!(
            "row {} of the part has values {values}, not the {} the proof shows",
            row.row_index, row.values
        )));
    }
    Ok(Ok(RowSummary {
        event_id: row.event_id.clone(),
        row_index: row.row_index,
        values,
    }))
}

/// The `event_id` and values of row `index` of the part `bytes`, if it has that row.
fn locate_at(
    p: &Pointer,
    bytes: Bytes,
    index: u64,
) -> Result<Option<(Option<String>, serde_json::Value)>> {
    let schema = contract::version(&p.schema_version)?.schema();
    let (batches, _rows) = crate::read::scan::decode(
        &p.part_path,
        bytes,
        &schema,
        None,
        crate::base::limits::ReadLimits::default(),
    )?;
    let mut offset = 0u64;
    for b in &batches {
        let n = b.num_rows() as u64;
        if index < offset + n {
            let i = (index - offset) as usize;
            let id = b
                .column_by_name("event_id")
                .and_then(|a| a.as_any().downcast_ref::<StringArray>())
                .filter(|a| a.is_valid(i))
                .map(|a| a.value(i).to_string());
            return Ok(Some((id, row_json(&b.slice(i, 1))?)));
        }
        offset += n;
    }
    Ok(None)
}

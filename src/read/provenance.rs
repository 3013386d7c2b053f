//! Each row's provenance beside its columns: the commit it was appended in, the seal that
//! sealed that commit, the part that holds it, and whether `repair` adopted that commit
//! (its pointer written from an orphan part's own footer: nothing its writer wrote vouches
//! for it) ([`PROVENANCE_COLUMNS`]).
//!
//! Read from the original parts only: a compacted part re-sorts the rows of many commits,
//! so its rows are read from their originals (which stay), and a compacted row keeps the
//! commit and seal it was sealed with.

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::keys::{self, kind::KeyKind};
use crate::read::snapshot::{Snapshot, SnapshotPart};

/// The columns added after the scan's own: the commit id, the sequence number of the
/// seal that sealed it (null for an unsealed commit), the part's key, and whether the
/// commit was adopted by `repair`.
pub const PROVENANCE_COLUMNS: [&str; 4] = ["commit_id", "sealed_by_seal", "part_path", "adopted"];

/// `schema` with the provenance columns after its own.
pub(crate) fn schema(schema: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(PROVENANCE_COLUMNS[0], DataType::Utf8, false));
    fields.push(Field::new(PROVENANCE_COLUMNS[1], DataType::UInt64, true));
    fields.push(Field::new(PROVENANCE_COLUMNS[2], DataType::Utf8, false));
    fields.push(Field::new(PROVENANCE_COLUMNS[3], DataType::Boolean, false));
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Refuse a snapshot that reads compacted parts: their rows' commits are not one.
pub(crate) fn require_originals(snap: &Snapshot) -> Result<()> {
    let compacted = snap
        .parts
        .iter()
        .filter(|p| {
            matches!(
                keys::classify(&p.pointer_key),
                KeyKind::CompactionRecord { .. }
            )
        })
        .count();
    if compacted == 0 {
        return Ok(());
    }
    Err(Error::usage(text![
        format!(
            "{compacted} compacted parts in the snapshot: provenance is read from the original parts (pass "
        ),
        Param::Originals,
        ")"
    ]))
}

/// `batches` of `part` with its provenance columns added.
pub(crate) fn add(part: &SnapshotPart, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
    batches
        .into_iter()
        .map(|b| {
            let n = b.num_rows();
            let mut columns = b.columns().to_vec();
            let commit = StringArray::from(vec![part.pointer.commit_id.as_str(); n]);
            let seal = UInt64Array::from(vec![part.sealed_by.as_ref().map(|s| s.seq); n]);
            let path = StringArray::from(vec![part.pointer.part_path.as_str(); n]);
            let adopted = BooleanArray::from(vec![part.pointer.adopted; n]);
            columns.push(Arc::new(commit) as ArrayRef);
            columns.push(Arc::new(seal) as ArrayRef);
            columns.push(Arc::new(path) as ArrayRef);
            columns.push(Arc::new(adopted) as ArrayRef);
            RecordBatch::try_new(schema(&b.schema()), columns).map_err(Error::from)
        })
        .collect()
}

//! Gathering a flush's rows out of the input batches they arrived in, on the encoder
//! thread that encodes the flush (see `group`: a partition's rows are interleaved with
//! other partitions' rows in the input, so each flush is a gather, never a slice).
//!
//! Like `arrow_select::interleave`, with one difference where the time went: a string
//! value was copied with a `memcpy` call each (~30 % of a 100,000-row flush's gather,
//! ~10 % of its encoding, perf in docs/performance.md). Here a value of at most
//! [`WIDE`] bytes is copied as one fixed-width block (a few vector moves, no call); the
//! bytes past its end are overwritten by the next value, and the buffer has [`WIDE`]
//! bytes of slack for the last one. The result is the same array, value for value.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::error::{Error, Result};

/// Values up to this long are copied as one fixed-width block.
const WIDE: usize = 32;

/// The rows `rows` ((source, row), in order) of `sources`, which share a schema, as one
/// batch.
pub(crate) fn gather(sources: &[RecordBatch], rows: &[(usize, usize)]) -> Result<RecordBatch> {
    let schema = match sources.first() {
        Some(b) => b.schema(),
        None => return Err(Error::Internal("gathering rows of no batch".into())),
    };
    let mut columns = Vec::with_capacity(schema.fields().len());
    for c in 0..schema.fields().len() {
        let arrays: Vec<&dyn Array> = sources.iter().map(|b| b.column(c).as_ref()).collect();
        let column = match arrays[0].data_type() {
            DataType::Utf8 => gather_utf8(&arrays, rows)?,
            _ => arrow_select::interleave::interleave(&arrays, rows)?,
        };
        columns.push(column);
    }
    Ok(RecordBatch::try_new(schema, columns)?)
}

fn gather_utf8(arrays: &[&dyn Array], rows: &[(usize, usize)]) -> Result<ArrayRef> {
    let arrays: Vec<&StringArray> = arrays.iter().map(|a| a.as_string::<i32>()).collect();
    let mut offsets: Vec<i32> = Vec::with_capacity(rows.len() + 1);
    offsets.push(0);
    let mut total = 0usize;
    for &(a, r) in rows {
        let o = arrays[a].value_offsets();
        total += (o[r + 1] - o[r]) as usize;
        offsets.push(i32::try_from(total).map_err(|_| {
            Error::Usage(format!(
                "a flush's strings in one column come to over {} bytes; lower --batch-rows",
                i32::MAX
            ))
        })?);
    }
    let mut values = vec![0u8; total + WIDE];
    let mut at = 0usize;
    for &(a, r) in rows {
        let array = arrays[a];
        let o = array.value_offsets();
        let (start, end) = (o[r] as usize, o[r + 1] as usize);
        let data = array.value_data();
        let len = end - start;
        if len <= WIDE && start + WIDE <= data.len() {
            values[at..at + WIDE].copy_from_slice(&data[start..start + WIDE]);
        } else {
            values[at..at + len].copy_from_slice(&data[start..end]);
        }
        at += len;
    }
    values.truncate(total);
    let nulls = if arrays.iter().any(|a| a.null_count() > 0) {
        let mut valid = BooleanBufferBuilder::new(rows.len());
        for &(a, r) in rows {
            valid.append(arrays[a].is_valid(r));
        }
        Some(NullBuffer::new(valid.finish()))
    } else {
        None
    };
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    Ok(Arc::new(StringArray::try_new(
        offsets,
        Buffer::from_vec(values),
        nulls,
    )?))
}

//! The order-independent digest of a multiset of rows
//! ([`crate::format::compaction::ROWS_DIGEST`]): what a compaction record says of its rows,
//! recomputed by `verify` from the compacted part and from its sources, batch by batch
//! (nothing held but four lanes and a count).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::RecordBatch;
use arrow_schema::{DataType, TimeUnit};

use crate::base::error::{Error, Result};

/// The running digest of a multiset of rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowMultiset {
    lanes: [u64; 4],
    /// Rows added.
    pub rows: u64,
}

impl RowMultiset {
    /// Add every row of `batch` (its columns in order, as the contract version has them).
    pub fn add_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut bufs: Vec<Vec<u8>> = vec![Vec::with_capacity(256); batch.num_rows()];
        for (f, col) in batch.schema().fields().iter().zip(batch.columns()) {
            let col = col.as_ref();
            for (i, buf) in bufs.iter_mut().enumerate() {
                if col.is_null(i) {
                    buf.push(0);
                    continue;
                }
                buf.push(1);
                match col.data_type() {
                    DataType::Utf8 => {
                        let v = col.as_string::<i32>().value(i).as_bytes();
                        buf.extend_from_slice(&(v.len() as u64).to_le_bytes());
                        buf.extend_from_slice(v);
                    }
                    DataType::Int64 => buf
                        .extend_from_slice(&col.as_primitive::<Int64Type>().value(i).to_le_bytes()),
                    DataType::Int32 => buf
                        .extend_from_slice(&col.as_primitive::<Int32Type>().value(i).to_le_bytes()),
                    DataType::Float64 => buf.extend_from_slice(
                        &col.as_primitive::<Float64Type>()
                            .value(i)
                            .to_bits()
                            .to_le_bytes(),
                    ),
                    DataType::Boolean => buf.push(u8::from(col.as_boolean().value(i))),
                    DataType::Timestamp(TimeUnit::Microsecond, _) => buf.extend_from_slice(
                        &col.as_primitive::<TimestampMicrosecondType>()
                            .value(i)
                            .to_le_bytes(),
                    ),
                    other => {
                        return Err(Error::internal(format!(
                            "column {} has type {other}, which no contract version has",
                            f.name()
                        )))
                    }
                }
            }
        }
        for buf in &bufs {
            let h = blake3::hash(buf);
            let b = h.as_bytes();
            for (lane, chunk) in self.lanes.iter_mut().zip(b.chunks_exact(8)) {
                let mut w = [0u8; 8];
                w.copy_from_slice(chunk);
                *lane = lane.wrapping_add(u64::from_le_bytes(w));
            }
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Add another multiset.
    pub fn merge(&mut self, other: &RowMultiset) {
        for (a, b) in self.lanes.iter_mut().zip(other.lanes) {
            *a = a.wrapping_add(b);
        }
        self.rows += other.rows;
    }

    /// The digest, lower-case hex (64 digits).
    pub fn hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for l in self.lanes {
            out.push_str(&hex::encode(l.to_le_bytes()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};

    fn batch(ids: &[Option<&str>], n: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Utf8, true),
            Field::new("b", DataType::Int64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(ids.to_vec())),
                Arc::new(Int64Array::from(n.to_vec())),
            ],
        )
        .unwrap()
    }

    #[test]
    fn order_does_not_matter_but_every_row_does() {
        let mut a = RowMultiset::default();
        a.add_batch(&batch(&[Some("x"), None, Some("x")], &[1, 2, 1]))
            .unwrap();
        let mut b = RowMultiset::default();
        b.add_batch(&batch(&[Some("x")], &[1])).unwrap();
        b.add_batch(&batch(&[Some("x"), None], &[1, 2])).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.rows, 3);
        let mut c = RowMultiset::default();
        c.add_batch(&batch(&[Some("x"), None], &[1, 2])).unwrap();
        assert_ne!(a.hex(), c.hex(), "a missing duplicate changes the digest");
        let mut d = RowMultiset::default();
        d.add_batch(&batch(&[Some("x"), Some(""), Some("x")], &[1, 2, 1]))
            .unwrap();
        assert_ne!(a.hex(), d.hex(), "null differs from the empty string");
    }
}

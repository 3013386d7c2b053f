//! Which (run_id, target_crs) partition each row of a validated batch belongs to, with
//! partitions numbered in order of first appearance over the whole stream.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;

use crate::schema::contract::col;

/// Partition numbers by (run_id, target_crs), in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct PartitionIndex {
    // run_id → its target CRSs (a handful per run: a linear scan beats hashing a pair).
    by_run: HashMap<String, Vec<(String, usize)>>,
    names: Vec<(String, String)>,
}

impl PartitionIndex {
    /// The partition's (run_id, target_crs).
    pub(crate) fn name(&self, p: usize) -> (&str, &str) {
        let (r, c) = &self.names[p];
        (r, c)
    }

    /// Partitions seen so far.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    fn lookup(&mut self, run: &str, crs: &str) -> usize {
        if let Some(v) = self.by_run.get(run) {
            if let Some((_, p)) = v.iter().find(|(c, _)| c == crs) {
                return *p;
            }
        }
        let p = self.names.len();
        self.names.push((run.to_string(), crs.to_string()));
        self.by_run
            .entry(run.to_string())
            .or_default()
            .push((crs.to_string(), p));
        p
    }

    /// The rows of `batch` per partition: (partition, row indices in input order), the
    /// partitions in order of their first row in this batch.
    pub(crate) fn split(&mut self, batch: &RecordBatch) -> Vec<(usize, Vec<u32>)> {
        let run = batch.column(col::RUN_ID).as_string::<i32>();
        let crs = batch.column(col::TARGET_CRS).as_string::<i32>();
        let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
        // (run_id, target_crs) → slot in `out`, for the partitions met in this batch. A
        // batch holds a handful: a linear scan comparing the strings is cheaper than
        // hashing every row's pair (that hashing was ~4 % of a write's instructions); past
        // `SCAN` partitions, a hash map.
        const SCAN: usize = 16;
        let mut seen: Vec<(&str, &str, usize)> = Vec::new();
        let mut many: HashMap<(&str, &str), usize> = HashMap::new();
        let mut last: Option<(&str, &str, usize)> = None;
        for i in 0..batch.num_rows() {
            let (r, c) = (run.value(i), crs.value(i));
            let s = match last {
                Some((lr, lc, s)) if lr == r && lc == c => s,
                _ => {
                    let known = if seen.len() < SCAN {
                        seen.iter()
                            .find(|(sr, sc, _)| *sr == r && *sc == c)
                            .map(|e| e.2)
                    } else {
                        many.get(&(r, c)).copied()
                    };
                    let s = match known {
                        Some(s) => s,
                        None => {
                            out.push((self.lookup(r, c), Vec::new()));
                            let s = out.len() - 1;
                            if seen.len() < SCAN {
                                seen.push((r, c, s));
                                if seen.len() == SCAN {
                                    many.extend(seen.iter().map(|&(r, c, s)| ((r, c), s)));
                                }
                            } else {
                                many.insert((r, c), s);
                            }
                            s
                        }
                    };
                    last = Some((r, c, s));
                    s
                }
            };
            // Batches are far below 4 billion rows (readers cut them at 64 Ki rows).
            out[s].1.push(i as u32);
        }
        out
    }
}

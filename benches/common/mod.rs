//! What the history benches share: argument lookup, a simulated clock, validated demo
//! events.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, TimeZone, Utc};
use lineage_store::internal::events::{Origin, SourcedBatch};
use lineage_store::internal::validate::Validator;
use lineage_store::Clock;

/// The value after `name` on the command line.
pub(crate) fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Simulated time: every reading advances it by `step_us`.
#[derive(Debug)]
pub(crate) struct SimClock {
    /// Now, in microseconds since the epoch.
    pub us: AtomicI64,
    /// Microseconds each reading advances it by.
    pub step_us: i64,
}

impl Clock for SimClock {
    fn now(&self) -> DateTime<Utc> {
        let us = self.us.fetch_add(self.step_us, Ordering::SeqCst);
        Utc.timestamp_micros(us).single().unwrap()
    }
}

/// `rows` demo events of one run, validated (as `append` would commit them).
pub(crate) fn validated(rows: usize, seed: u64) -> Vec<arrow_array::RecordBatch> {
    let mut v = Validator::new();
    lineage_store::generate_demo_events(rows, 1, seed)
        .unwrap()
        .into_iter()
        .map(|b| {
            v.validate(&SourcedBatch::new(b, Origin::Rows { first: 1 }))
                .unwrap()
        })
        .collect()
}

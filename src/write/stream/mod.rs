//! Streaming writes: memory bounded by the flush size and the flushes in flight, never by
//! the input's size.
//!
//! - [`Sink`] (from [`Writer::sink`](crate::Writer::sink)): a job feeds `RecordBatch`es or
//!   single events as it produces them; partitions are committed when full or after
//!   `max_delay`; back-pressure bounds the flushes in flight.
//! - [`append`]: `lineage append` and [`Writer::append`](crate::Writer::append): the input
//!   is read twice, first to validate all of it (and, with a commit key, to digest the
//!   payload and claim the key), then to commit it through a sink, so refused input still
//!   publishes nothing.
//!
//! Inside: `partition` numbers partitions, `group` buffers rows until a flush is full
//! (spilling to `spill` over the memory budget), `commit` runs bounded encode+publish
//! tasks, `first_pass` validates the whole input before anything is published,
//! `payload_summary` computes a keyed payload's digest in it, `keyed` claims the commit key,
//! `version` fixes the contract version written (`--schema-version` rules) and widens older
//! batches.

pub(crate) mod append;
mod commit;
pub(crate) mod first_pass;
pub(crate) mod group;
mod keyed;
mod partition;
pub(crate) mod payload_summary;
pub(crate) mod sink;
mod spill;
mod version;

pub use crate::write::flush::DEFAULT_MAX_BUFFERED_BYTES;
pub use sink::{Sink, SinkOptions};

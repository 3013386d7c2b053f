//! What replication takes and reports.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::replicate::stop::Stop;

/// Default number of objects copied at once.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Called after each object this run created at the destination, with how many it has
/// created so far (from 1) and the key. The CLI's test hook uses it to hold the process
/// at a chosen point; it may await.
pub type PublishHook = Arc<dyn Fn(u64, String) -> BoxFuture<'static, ()> + Send + Sync>;

/// How to replicate.
#[derive(Clone)]
pub struct ReplicateOptions {
    /// Objects copied at once (at least 1).
    pub concurrency: usize,
    /// Live counters for a progress display.
    pub progress: Option<Arc<Progress>>,
    /// Once requested: start nothing new, finish what is in flight.
    pub stop: Stop,
    /// See [`PublishHook`].
    pub on_published: Option<PublishHook>,
}

impl std::fmt::Debug for ReplicateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicateOptions")
            .field("concurrency", &self.concurrency)
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl Default for ReplicateOptions {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            progress: None,
            stop: Stop::new(),
            on_published: None,
        }
    }
}

/// Live counters of one pass (reset at its start).
#[derive(Debug, Default)]
pub struct Progress {
    /// Objects the pass looks at.
    pub objects_total: AtomicU64,
    /// Objects done (copied, present, refused or skipped).
    pub objects_done: AtomicU64,
    /// Bytes of the parts the destination lacks.
    pub bytes_total: AtomicU64,
    /// Bytes copied.
    pub bytes_done: AtomicU64,
}

/// Objects copied, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// Objects created at the destination.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Data parts.
    pub parts: u64,
    /// Commit pointers.
    pub pointers: u64,
    /// Commit-key claims.
    pub claims: u64,
    /// Seals.
    pub seals: u64,
    /// `_lineage/` objects of kinds this version does not know.
    pub other: u64,
    /// The store's identity (once, on the first pass to a new replica).
    pub identity: u64,
}

/// An object not copied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotCopied {
    /// The object's key.
    pub key: String,
    /// Why.
    pub reason: String,
}

/// A key the destination holds with other bytes than the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The object's key.
    pub key: String,
    /// sha256 of the source's object (`None`: the source has no such object).
    pub source_sha256: Option<String>,
    /// sha256 of the destination's object.
    pub destination_sha256: String,
}

/// A seal named by sequence number and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    /// Sequence number.
    pub seq: u64,
    /// sha256 of its bytes.
    pub sha256: String,
}

/// What replication did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// The source.
    pub from: String,
    /// The destination.
    pub to: String,
    /// What was created at the destination (all passes).
    pub copied: Copied,
    /// Objects already at the destination with the same bytes (last pass).
    pub already_present: u64,
    /// Not copied and not a problem: objects in flight at the source, foreign objects (last
    /// pass).
    pub skipped: Vec<NotCopied>,
    /// Not copied because the source object, or one it names, failed its check (last
    /// pass). Nothing that names a refused object is copied either.
    pub refused: Vec<NotCopied>,
    /// Keys the destination holds with other bytes (nothing was overwritten).
    pub conflicts: Vec<Conflict>,
    /// The source's newest seal.
    pub source_head: Option<Head>,
    /// The newest seal the destination holds in agreement with the source.
    pub destination_head: Option<Head>,
    /// Passes run (1 without `--follow`).
    pub passes: u64,
    /// A stop was requested before the last pass finished.
    pub stopped: bool,
    /// The destination's own Iceberg metadata, when the source has some (the source's is
    /// never copied: its paths are absolute, at the source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iceberg: Option<IcebergWritten>,
}

/// The Iceberg metadata a pass made sure the destination has: the table at the
/// destination's own location as of the newest seal it holds that the source has
/// metadata for, every object built from the seals as `seal --iceberg` builds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IcebergWritten {
    /// That seal.
    pub seq: u64,
    /// Its metadata file's absolute location at the destination (what a reader or a
    /// catalog is given).
    pub metadata_location: String,
    /// Seals whose Iceberg objects were written at the destination (all passes).
    pub seals_written: u64,
}

impl Summary {
    /// True when the destination holds everything the source had to give: nothing
    /// refused, no conflict, not stopped early.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty() && self.conflicts.is_empty() && !self.stopped
    }

    /// Fold the next pass into a running total.
    pub(crate) fn absorb(&mut self, next: Summary) {
        let c = &mut self.copied;
        let n = &next.copied;
        c.objects += n.objects;
        c.bytes += n.bytes;
        c.parts += n.parts;
        c.pointers += n.pointers;
        c.claims += n.claims;
        c.seals += n.seals;
        c.other += n.other;
        c.identity += n.identity;
        self.from = next.from;
        self.to = next.to;
        self.already_present = next.already_present;
        self.skipped = next.skipped;
        self.refused = next.refused;
        self.conflicts.extend(next.conflicts);
        self.source_head = next.source_head;
        self.destination_head = next.destination_head;
        self.passes += next.passes;
        self.stopped = next.stopped;
        let written = self.iceberg.as_ref().map_or(0, |i| i.seals_written);
        if let Some(mut i) = next.iceberg {
            i.seals_written += written;
            self.iceberg = Some(i);
        }
    }
}

//! [`AtomicPublisher`]: the one storage abstraction every backend implements.
//!
//! The write path needs exactly one strong primitive, create-only publish; the audit
//! path needs reads and listings. Each backend lives in its own module:
//! [`posix`] (local disk), [`memory`] (tests), and [`object`] (S3, Azure Blob, GCS).
//! [`faulty`] wraps any of them to inject failures in tests.

use std::fmt::Debug;
use std::ops::Range;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::error::Result;

pub mod faulty;
pub mod memory;
pub mod object;
pub mod posix;

/// The result of a create-only publish. A lost race is a value, not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The object did not exist and now holds exactly the given bytes.
    Created,
    /// An object already existed under the key; it was left as it was and the given bytes
    /// were not written. The caller decides (by reading it back) whether it is its own.
    AlreadyExists,
}

/// One listed object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Key relative to the store root, `/`-separated.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, when the backend knows it.
    pub modified: Option<DateTime<Utc>>,
}

/// A store that can publish objects atomically and never over anything.
///
/// Guarantees every implementation makes (and the conformance suite in
/// `tests/conformance.rs` checks):
/// - **All or nothing**: after [`put_create`](Self::put_create) returns `Created`, a reader
///   of `key` sees all of `bytes`; before it, or after an error, it sees either nothing or
///   (for an ambiguous error, e.g. a lost response) all of `bytes`, never a prefix.
/// - **Never overwrites**: if `key` exists, its content is left unchanged and the call
///   returns [`Outcome::AlreadyExists`]; it is not an error.
/// - **One winner**: of any number of concurrent creators of one key, exactly one gets
///   `Created`.
/// - **Nothing left behind**: a failed publish leaves no visible object under `key`, and
///   no temporary object except one a crash interrupted (reported by `verify`, removed by
///   `sweep`).
///
/// Keys are relative, `/`-separated and built by [`crate::keys`]; implementations refuse
/// keys that could escape the store root.
#[async_trait]
pub trait AtomicPublisher: Send + Sync + Debug {
    /// Where this store is, for messages; never holds a credential.
    fn describe(&self) -> String;

    /// Publish `bytes` under `key` if and only if nothing is there yet.
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome>;

    /// The whole object, or `None` when it does not exist.
    async fn get(&self, key: &str) -> Result<Option<Bytes>>;

    /// A byte range of an object (for streaming hashes and Parquet footers).
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes>;

    /// Every object whose key starts with `prefix` (`""` for all), including temporaries
    /// that a crashed publish left, in no particular order.
    ///
    /// A listing is not a snapshot: an object created or removed while it runs (a temp
    /// renamed into place, a temp swept) may or may not appear, and never makes the
    /// listing fail. Keys are UTF-8; a local file name that is not is listed with its
    /// invalid bytes as `%XX`, which [`crate::keys::classify`] always calls foreign.
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>>;

    /// Remove a stale temporary object. Implementations refuse any key that is not a temp
    /// ([`crate::keys::KeyKind::Temp`]): nothing else is ever deleted by lineage-store.
    async fn delete_temp(&self, key: &str) -> Result<()>;
}

/// Refuse keys that are absolute, empty, or walk out of the root.
pub(crate) fn check_key(key: &str) -> Result<()> {
    let bad = key.is_empty()
        || key.starts_with('/')
        || key.contains('\\')
        || key.contains('\0')
        || key
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        return Err(crate::error::Error::Internal(format!(
            "refusing unsafe object key {key:?}"
        )));
    }
    Ok(())
}

/// Refuse to delete anything but a temp.
pub(crate) fn check_temp_key(key: &str) -> Result<()> {
    check_key(key)?;
    if crate::keys::classify(key) != crate::keys::KeyKind::Temp {
        return Err(crate::error::Error::Usage(format!(
            "refusing to delete {key}: only stale temporaries are ever deleted"
        )));
    }
    Ok(())
}

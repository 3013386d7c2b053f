//! [`AtomicPublisher`]: the one storage abstraction every backend implements.
//!
//! The write path needs exactly one strong primitive, create-only publish; the audit
//! path needs reads and listings. Each backend lives in its own module:
//! [`posix`] (local disk), [`memory`] (tests), and [`object`] (S3, Azure Blob, GCS).
//! Test doubles, compiled only for the project's own tests and benches (feature
//! `internal-api`): `faulty` wraps any of them to inject failures, `disorderly` to list out
//! of order the way some S3-compatible servers do; `metered` counts requests and models an
//! object store's latency.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::ops::Range;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::base::error::Result;

use self::dirs::DirStamp;

mod beneath;
pub mod checked;
pub(crate) mod dirs;
#[cfg(any(test, feature = "internal-api"))]
pub mod disorderly;
#[cfg(any(test, feature = "internal-api"))]
pub mod faulty;
pub(crate) mod memo;
pub(crate) mod memory;
#[cfg(any(test, feature = "internal-api"))]
pub mod metered;
pub mod object;
pub mod posix;
mod recycle;
pub mod store;

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
    /// On a local disk, when the entry is a symlink: its target (never followed; no
    /// command reads, writes or deletes through it, and `verify` reports it as
    /// `symlink`). `None` on object stores, which have no links.
    pub link: Option<String>,
}

/// What [`AtomicPublisher::list_names_changed`] found: the objects of the directories it
/// read, and the directories it did not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedListing {
    /// As [`AtomicPublisher::list_names`] lists them, from the directories read.
    pub objects: Vec<ObjectInfo>,
    /// The directories (keys ending in `/`) not read: unchanged since the time asked.
    pub unchanged_dirs: Vec<String>,
}

/// A store that can publish objects atomically and never over anything.
///
/// Guarantees every implementation makes (and the conformance suite in
/// `tests/it/publish/conformance.rs` checks):
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
/// Keys are relative, `/`-separated and built by [`crate::format::keys`]; implementations refuse
/// keys that could escape the store root.
#[async_trait]
pub trait AtomicPublisher: Send + Sync + Debug {
    /// Where this store is, for messages; never holds a credential.
    fn describe(&self) -> String;

    /// What this store's readers read at most of one seal and decode of one page. A bare
    /// backend has the defaults; a store opened through [`store::open`] has the limits it
    /// was opened with, and every wrapper forwards its inner store's.
    fn read_limits(&self) -> crate::base::limits::ReadLimits {
        crate::base::limits::ReadLimits::default()
    }

    /// Publish `bytes` under `key` if and only if nothing is there yet.
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome>;

    /// The whole object, or `None` when it does not exist.
    async fn get(&self, key: &str) -> Result<Option<Bytes>>;

    /// The whole object when it is at most `max` bytes; `None` when it does not exist;
    /// [`Error::TooLarge`](crate::Error::TooLarge) when it is larger. The backends learn
    /// the size before reading the content (`fstat` of the opened file, an object store's
    /// response headers), so an oversized object costs no memory. The default (the memory
    /// store, test wrappers) reads it whole, then checks.
    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        let got = self.get(key).await?;
        too_large(key, got.as_ref().map_or(0, |b| b.len() as u64), max)?;
        Ok(got)
    }

    /// A byte range of an object (for streaming hashes and Parquet footers).
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes>;

    /// The digests `want` asks for of a byte range and how many bytes they covered (fewer
    /// than asked when the object is shorter), computed where the bytes are, or `None`
    /// when this backend has no cheaper way than [`get_range`](Self::get_range) (the
    /// default: the caller then hashes ranged reads). Same errors as `get_range`.
    async fn digest_range(
        &self,
        key: &str,
        range: Range<u64>,
        want: crate::base::digest::Want,
    ) -> Result<Option<(crate::base::digest::Digests, u64)>> {
        let _ = (key, range, want);
        Ok(None)
    }

    /// Every object whose key starts with `prefix` (`""` for all), including temporaries
    /// that a crashed publish left, in no particular order.
    ///
    /// A listing is not a snapshot: an object created or removed while it runs (a temp
    /// renamed into place, a temp swept) may or may not appear, and never makes the
    /// listing fail. Keys are UTF-8; a local file name that is not is listed with its
    /// invalid bytes as `%XX`, which [`crate::format::keys::classify`] always calls foreign.
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>>;

    /// [`list`](Self::list) for a caller that needs the keys and symlinks only: a backend
    /// may leave a regular file's `size` 0 and `modified` `None` (the local disk then reads
    /// no file's metadata, only the directories' names and types). The default is
    /// [`list`](Self::list): an object store's listing carries sizes anyway.
    async fn list_names(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.list(prefix).await
    }

    /// One page of a listing that resumes where an earlier one stopped: the first `limit`
    /// objects (in ascending byte order of their keys) whose key starts with `prefix` and
    /// sorts strictly after `after` (`""` for the start). Temps included, like [`list`](Self::list).
    ///
    /// This is what keeps the audit path's cost independent of the store's age: S3's
    /// `start-after`, Azure's `startFrom` and GCS's `startOffset` (object_store's
    /// `list_with_offset`) skip everything up to `after` on the server, so a page costs
    /// one request however many keys sort before it. Backends without such a listing
    /// (the local disk) must still return exactly the same page. Callers page with
    /// [`list_pages`] rather than by hand: some S3-compatible servers return pages in
    /// another order, or skip keys after certain offsets, and [`list_pages`] checks every
    /// page and falls back to a plain listing rather than trust one.
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>>;

    /// The page [`list_after`](Self::list_after) returns, where a backend may leave the
    /// size (0) and time (`None`) of the keys before `sized_from` unread: for a caller that
    /// needs only the names of those (counting the index entries of a directory) and the
    /// metadata of the rest. An object store's listing page carries both, so the default
    /// asks for the page; the local disk reads the names and types (`d_type`) of the
    /// directories and the metadata of the keys at or after `sized_from` only.
    async fn list_after_sized_from(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
    ) -> Result<Vec<ObjectInfo>> {
        let _ = sized_from;
        self.list_after(prefix, after, limit).await
    }

    /// [`list_after_sized_from`](Self::list_after_sized_from) without the keys of the
    /// directories in `skip` (keys ending in `/`): a backend with directories does not read
    /// them. The default lists and drops their keys.
    async fn list_after_sized_skipping(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
        skip: &BTreeSet<String>,
    ) -> Result<Vec<ObjectInfo>> {
        let mut v = self
            .list_after_sized_from(prefix, after, usize::MAX, sized_from)
            .await?;
        v.retain(|o| !skip.contains(dir_of(&o.key)));
        v.truncate(limit);
        Ok(v)
    }

    /// The change stamp of each directory in `dirs` (keys ending in `/`), `None` for one
    /// that is not there; `None` as a whole when this backend has no directories (the
    /// default: object stores).
    ///
    /// Guarantee: creating, removing or renaming an entry of a directory, and setting its
    /// times, give it another stamp, unless the file system's clock has been set back to
    /// the very nanosecond it recorded before. A directory's stamp says nothing of the
    /// directories below it.
    async fn dir_stamps(&self, dirs: &[String]) -> Result<Option<Vec<Option<DirStamp>>>> {
        let _ = dirs;
        Ok(None)
    }

    /// The clock the stamps of `dir`'s directories read, now (nanoseconds since the epoch):
    /// a change made in one of them after this call returns gets a change time at or after
    /// it (while that clock is not set back). Taken from a file made and dropped unnamed
    /// (nothing appears in the store). `None` when this backend has no directories, or
    /// the file system cannot make an unnamed file: a caller then trusts no stamp.
    async fn stamp_clock(&self, dir: &str) -> Result<Option<i128>> {
        let _ = dir;
        Ok(None)
    }

    /// [`list_names`](Self::list_names) of `prefix` without reading the directories that
    /// have not changed since `since_ns` on the clock of [`stamp_clock`](Self::stamp_clock);
    /// `None` when this backend has no directories (the default: object stores), and the
    /// caller lists everything.
    ///
    /// Guarantee: a directory is left unread only when its change time is before
    /// `since_ns`, so is its parent's, and it has no subdirectory (its link count is 2): no
    /// entry was created, removed or renamed in it since (nor in the parent, so it was not
    /// moved there since), and nothing lies below it, unless the file system's clock has
    /// been set back. Every object that appeared under `prefix` at or after `since_ns`, in
    /// any directory, is listed. Nothing is said of a file's bytes: a file written in place
    /// changes no directory.
    async fn list_names_changed(
        &self,
        prefix: &str,
        since_ns: i128,
    ) -> Result<Option<ChangedListing>> {
        let _ = (prefix, since_ns);
        Ok(None)
    }

    /// Remove a stale temporary object. Implementations refuse any key that is not a temp
    /// ([`crate::format::keys::KeyKind::Temp`]): nothing else is ever deleted by lineage-store.
    async fn delete_temp(&self, key: &str) -> Result<()>;
}

/// The directory (`…/`) of a key: `""` at the root.
pub(crate) fn dir_of(key: &str) -> &str {
    key.rfind('/').map_or("", |i| &key[..=i])
}

/// Keys per page of [`list_pages`]: what one S3 `ListObjectsV2` request returns.
pub(crate) const LIST_PAGE: usize = 1000;

/// Whether an object exists under `key`, reading none of it (an object of any size is
/// there: [`AtomicPublisher::get_at_most`] of nothing).
pub(crate) async fn exists(store: &dyn AtomicPublisher, key: &str) -> Result<bool> {
    match store.get_at_most(key, 0).await {
        Ok(got) => Ok(got.is_some()),
        Err(crate::base::error::Error::TooLarge { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

/// [`crate::Error::TooLarge`] when `size` exceeds `max`.
pub(crate) fn too_large(key: &str, size: u64, max: u64) -> Result<()> {
    if size > max {
        return Err(crate::base::error::Error::TooLarge {
            key: key.to_string(),
            size,
            max,
        });
    }
    Ok(())
}

/// Refuse a store that holds no objects: every command but `append` (and `demo` into a new
/// store) works on an existing store, and an empty one is most likely a mistyped URL.
/// One lookup of the store's identity (`_lineage/store.json`, [`exists`]: none of it is
/// read), which every store written since it exists holds; without it (an older store, or
/// one whose identity cannot be looked up, which `verify` then names), one listing
/// request of one key.
/// Not the listing first: on local disk the first key of a store is in `_delta_log/`, and
/// a directory is read whole to find its first name, so the listing would cost O(seals).
pub async fn require_objects(store: &dyn AtomicPublisher) -> Result<()> {
    if let Ok(true) = exists(store, crate::format::keys::IDENTITY_KEY).await {
        return Ok(());
    }
    if store.list_after("", "", 1).await?.is_empty() {
        return Err(crate::base::error::Error::NotFound(format!(
            "{}: the store holds no objects (empty, or not where the URL points)",
            store.describe()
        )));
    }
    Ok(())
}

/// Every object under `prefix` after `after` and before `before` (exclusive, `None` for no
/// bound), in key order, fetched one [`LIST_PAGE`] at a time with
/// [`AtomicPublisher::list_after`]; stops at the first page that reaches `before`, so a
/// bounded range costs requests in proportion to what is in it.
///
/// **No server's listing order is trusted.** S3 returns pages in byte order, but not every
/// S3-compatible server does (docs/object-stores.md): SeaweedFS lists an unversioned
/// bucket directory by directory (`a/x` before `a-b`), and its `start-after` skips a
/// whole directory when the offset is that directory's name or just past it. So every
/// page is checked: its keys must be under `prefix`, strictly ascending and after the
/// offset. A page that is not is never used: the range is then read from a plain prefix
/// listing (continuation tokens, whatever its order), filtered and sorted here, which
/// costs the whole prefix but gives the same answer.
///
/// What such a server leaves out cannot be seen in a page: the keys after `after` in
/// bytes but before it directory by directory. Those are exactly the keys under
/// `after[..i]/` for each position `i` where `after` holds a byte below `/` (`run_id=a/…`
/// sorts after `run_id=a-b/` in bytes, before it by directory), and under `after/`
/// itself. Each such directory that can hold a key of the range is listed by prefix as
/// well (concurrently, one request each when empty), except in the history's areas, whose
/// names have fixed widths so that the two orders agree there
/// ([`crate::format::keys::orders_agree_under`]).
pub async fn list_pages(
    store: &dyn AtomicPublisher,
    prefix: &str,
    after: &str,
    before: Option<&str>,
) -> Result<Vec<ObjectInfo>> {
    let hidden = futures::future::try_join_all(
        hidden_dirs(prefix, after, before)
            .into_iter()
            .map(|d| async move { list_whole(store, &d, after, before).await }),
    );
    let (paged, hidden) =
        futures::future::try_join(paged(store, prefix, after, before), hidden).await?;
    let mut out = match paged {
        Some(v) => v,
        None => return list_whole(store, prefix, after, before).await,
    };
    let extra: Vec<ObjectInfo> = hidden
        .into_iter()
        .flatten()
        .filter(|o| o.key.starts_with(prefix))
        .collect();
    if !extra.is_empty() {
        out.extend(extra);
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out.dedup_by(|a, b| a.key == b.key);
    }
    Ok(out)
}

/// The directories whose keys sort after `after` in bytes but before it directory by
/// directory (see [`list_pages`]), that can hold a key under `prefix` before `before`.
fn hidden_dirs(prefix: &str, after: &str, before: Option<&str>) -> Vec<String> {
    if after.is_empty() || crate::format::keys::orders_agree_under(after) {
        return Vec::new();
    }
    let mut dirs: Vec<String> = after
        .char_indices()
        .filter(|&(_, c)| c < '/')
        .map(|(i, _)| format!("{}/", &after[..i]))
        .collect();
    if !after.ends_with('/') {
        dirs.push(format!("{after}/"));
    }
    dirs.retain(|d| {
        !d.ends_with("//")
            && (d.starts_with(prefix) || prefix.starts_with(d.as_str()))
            && before.is_none_or(|b| d.as_str() < b)
    });
    // Where the prefix is inside such a directory, list the prefix.
    for d in &mut dirs {
        if prefix.starts_with(d.as_str()) {
            *d = prefix.to_string();
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The paged listing itself; `None` when a page broke its contract.
async fn paged(
    store: &dyn AtomicPublisher,
    prefix: &str,
    after: &str,
    before: Option<&str>,
) -> Result<Option<Vec<ObjectInfo>>> {
    let mut out: Vec<ObjectInfo> = Vec::new();
    let mut from = after.to_string();
    loop {
        let page = store.list_after(prefix, &from, LIST_PAGE).await?;
        if let Some(why) = out_of_order(&page, prefix, &from) {
            warn_once(store, prefix, &why);
            return Ok(None);
        }
        let full = page.len() >= LIST_PAGE;
        let Some(last) = page.last() else { break };
        from = last.key.clone();
        let mut reached_end = false;
        for o in page {
            if before.is_some_and(|b| o.key.as_str() >= b) {
                reached_end = true;
                break;
            }
            out.push(o);
        }
        if reached_end || !full {
            break;
        }
    }
    Ok(Some(out))
}

/// Why a `list_after` page breaks its contract (under `prefix`, strictly ascending, after
/// `after`), or `None`.
fn out_of_order(page: &[ObjectInfo], prefix: &str, after: &str) -> Option<String> {
    let mut prev = after;
    for o in page {
        if !o.key.starts_with(prefix) {
            return Some(format!("{} is outside the prefix", o.key));
        }
        if o.key.as_str() <= prev {
            return Some(format!("{} came after {prev}", o.key));
        }
        prev = o.key.as_str();
    }
    None
}

/// The range [`list_pages`] asks for, from a plain prefix listing.
async fn list_whole(
    store: &dyn AtomicPublisher,
    prefix: &str,
    after: &str,
    before: Option<&str>,
) -> Result<Vec<ObjectInfo>> {
    let mut v = store.list(prefix).await?;
    v.retain(|o| o.key.as_str() > after && before.is_none_or(|b| o.key.as_str() < b));
    v.sort_by(|a, b| a.key.cmp(&b.key));
    v.dedup_by(|a, b| a.key == b.key);
    Ok(v)
}

/// Say once per process (at `warn`; then at `debug`) that a store lists out of order.
fn warn_once(store: &dyn AtomicPublisher, prefix: &str, why: &str) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::debug!(store = %store.describe(), prefix, why, "listing out of S3's byte order; listing the prefix whole");
    } else {
        tracing::warn!(store = %store.describe(), prefix, why, "this store lists out of S3's byte order (see docs/object-stores.md); listing the prefix whole instead, which gives the same answer at a higher cost");
    }
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
        // Such a key only ever comes from what a store holds (a hostile pointer or seal):
        // every key lineage-store builds is safe. A conflict naming it, not an internal error.
        return Err(crate::base::error::Error::Corrupt {
            what: "object key",
            key: crate::schema::rules::quote(key),
            message: "refusing an unsafe key (absolute, `.` or `..`, an empty segment, a backslash or NUL): it could name something outside the store".into(),
        });
    }
    Ok(())
}

/// Refuse to delete anything but a temp.
pub(crate) fn check_temp_key(key: &str) -> Result<()> {
    check_key(key)?;
    if crate::format::keys::kind::classify(key) != crate::format::keys::kind::KeyKind::Temp {
        return Err(crate::base::error::Error::usage(format!(
            "refusing to delete {key}: only stale temporaries are ever deleted"
        )));
    }
    Ok(())
}

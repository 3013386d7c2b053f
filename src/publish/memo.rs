//! Pointers read once per operation: a wrapper that keeps the bytes of each pointer it
//! reads until the same operation reads it a second time, then hands them over and forgets
//! them. `seal` reads every new pointer twice (to draft the seal, then for the `add` of its
//! Delta version, which checks the bytes against the digest the seal now records); on an
//! object store the second read was a GET per commit that could only return the same
//! bytes of a create-only object or a tampered one, which the digest check refuses either
//! way ([`crate::history::sealer`]). Only pointers (`_lineage/commits/`) are kept, at
//! most [`MAX_KEPT_BYTES`] of them; every other request goes to the wrapped store as it is.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;

use crate::base::error::Result;
use crate::format::keys::COMMITS_PREFIX;
use crate::publish::{too_large, AtomicPublisher, ObjectInfo, Outcome};

/// Most bytes of pointers kept at once (a seal of 10^5 commits keeps about 150 MB of
/// pointers otherwise): past it, a pointer is read again as before.
pub(crate) const MAX_KEPT_BYTES: usize = 64 * 1024 * 1024;

/// The wrapper (see the module docs).
#[derive(Debug)]
pub(crate) struct PointerMemo<'a> {
    inner: &'a dyn AtomicPublisher,
    kept: Mutex<(HashMap<String, Bytes>, usize)>,
}

impl<'a> PointerMemo<'a> {
    /// Wrap `inner` for one operation.
    pub(crate) fn new(inner: &'a dyn AtomicPublisher) -> Self {
        Self {
            inner,
            kept: Mutex::new((HashMap::new(), 0)),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, (HashMap<String, Bytes>, usize)> {
        match self.kept.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The bytes read before under `key`, forgotten now.
    fn take(&self, key: &str) -> Option<Bytes> {
        let mut g = self.kept();
        let b = g.0.remove(key)?;
        g.1 -= b.len();
        Some(b)
    }

    fn keep(&self, key: &str, got: &Option<Bytes>) {
        let Some(b) = got else { return };
        if !key.starts_with(COMMITS_PREFIX) {
            return;
        }
        let mut g = self.kept();
        if g.1 + b.len() <= MAX_KEPT_BYTES && !g.0.contains_key(key) {
            g.1 += b.len();
            g.0.insert(key.to_string(), b.clone());
        }
    }
}

#[async_trait]
impl AtomicPublisher for PointerMemo<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn read_limits(&self) -> crate::base::limits::ReadLimits {
        self.inner.read_limits()
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.inner.put_create(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        if let Some(b) = self.take(key) {
            return Ok(Some(b));
        }
        let got = self.inner.get(key).await?;
        self.keep(key, &got);
        Ok(got)
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        if let Some(b) = self.take(key) {
            too_large(key, b.len() as u64, max)?;
            return Ok(Some(b));
        }
        let got = self.inner.get_at_most(key, max).await?;
        self.keep(key, &got);
        Ok(got)
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }

    async fn digest_range(
        &self,
        key: &str,
        range: Range<u64>,
        want: crate::base::digest::Want,
    ) -> Result<Option<(crate::base::digest::Digests, u64)>> {
        self.inner.digest_range(key, range, want).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.inner.list(prefix).await
    }

    async fn list_names(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.inner.list_names(prefix).await
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        self.inner.list_after(prefix, after, limit).await
    }

    async fn list_after_sized_from(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
    ) -> Result<Vec<ObjectInfo>> {
        self.inner
            .list_after_sized_from(prefix, after, limit, sized_from)
            .await
    }

    async fn list_after_sized_skipping(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
        skip: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<ObjectInfo>> {
        self.inner
            .list_after_sized_skipping(prefix, after, limit, sized_from, skip)
            .await
    }

    async fn dir_stamps(
        &self,
        dirs: &[String],
    ) -> Result<Option<Vec<Option<crate::publish::dirs::DirStamp>>>> {
        self.inner.dir_stamps(dirs).await
    }

    async fn stamp_clock(&self, dir: &str) -> Result<Option<i128>> {
        self.inner.stamp_clock(dir).await
    }

    async fn list_names_changed(
        &self,
        prefix: &str,
        since_ns: i128,
    ) -> Result<Option<crate::publish::ChangedListing>> {
        self.inner.list_names_changed(prefix, since_ns).await
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

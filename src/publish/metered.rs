//! A metering [`AtomicPublisher`] wrapper: counts every request and the bytes it moved,
//! and can add a modelled per-request latency (an object store seen from a local store):
//! how the history benchmark reports requests and time of `log`, `seal`, `prove` and
//! `verify` at any size (`benches/history.rs`). Every call goes to the wrapped store.
//!
//! A request is what an object store would bill: a GET (whole or ranged), a PUT, or a
//! LIST page of up to 1,000 keys (`list` costs one page per thousand keys it returns,
//! at least one; `list_after` one page per call).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::base::error::Result;
use crate::publish::{AtomicPublisher, ObjectInfo, Outcome, LIST_PAGE};

/// Latency added per request (slept on tokio's clock, so a paused test clock makes it
/// virtual). Defaults model S3 from within its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// Per GET (whole or ranged) and per DELETE.
    pub get: Duration,
    /// Per PUT.
    pub put: Duration,
    /// Per LIST page of up to 1,000 keys.
    pub list_page: Duration,
}

impl Latency {
    /// ~15 ms per GET/PUT, ~50 ms per 1,000-key LIST page.
    pub fn s3() -> Self {
        Self {
            get: Duration::from_millis(15),
            put: Duration::from_millis(15),
            list_page: Duration::from_millis(50),
        }
    }
}

/// Request and byte counts.
#[derive(Debug, Default)]
pub struct Counts {
    /// Whole-object GETs (including those that found nothing).
    pub gets: AtomicU64,
    /// Ranged GETs.
    pub range_gets: AtomicU64,
    /// PUTs.
    pub puts: AtomicU64,
    /// LIST pages.
    pub list_pages: AtomicU64,
    /// Keys returned by listings.
    pub listed_keys: AtomicU64,
    /// Bytes read by GETs.
    pub bytes_read: AtomicU64,
    /// Bytes written by PUTs.
    pub bytes_written: AtomicU64,
    /// DELETEs.
    pub deletes: AtomicU64,
}

/// A snapshot of [`Counts`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Whole-object GETs.
    pub gets: u64,
    /// Ranged GETs.
    pub range_gets: u64,
    /// PUTs.
    pub puts: u64,
    /// LIST pages.
    pub list_pages: u64,
    /// Keys listed.
    pub listed_keys: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// DELETEs.
    pub deletes: u64,
}

impl Snapshot {
    /// Every request.
    pub fn requests(&self) -> u64 {
        self.gets + self.range_gets + self.puts + self.list_pages + self.deletes
    }
}

/// What kind of request a logged one was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Request {
    /// A PUT (create-only).
    Put,
    /// A whole-object GET (including one that found nothing, or read none of a larger one).
    Get,
    /// A ranged GET.
    RangeGet,
    /// A LIST page (one logged per page).
    List,
    /// A DELETE.
    Delete,
}

/// Counts (and optionally delays) every request to the wrapped store.
#[derive(Debug)]
pub struct MeteredPublisher {
    inner: Arc<dyn AtomicPublisher>,
    latency: Option<Latency>,
    counts: Counts,
    logging: AtomicBool,
    log: Mutex<Vec<(Request, String)>>,
}

impl MeteredPublisher {
    /// Wrap `inner`; `latency` is added to every request when given.
    pub fn new(inner: Arc<dyn AtomicPublisher>, latency: Option<Latency>) -> Self {
        Self {
            inner,
            latency,
            counts: Counts::default(),
            logging: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Also log each request from now on (its kind and key, a LIST page by its prefix):
    /// what [`Self::take_log`] returns.
    pub fn with_log(self) -> Self {
        self.logging.store(true, Ordering::Relaxed);
        self
    }

    /// The requests logged since the last call, in the order they were made.
    pub fn take_log(&self) -> Vec<(Request, String)> {
        match self.log.lock() {
            Ok(mut l) => std::mem::take(&mut *l),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }

    fn note(&self, kind: Request, key: &str, times: u64) {
        if self.logging.load(Ordering::Relaxed) {
            let mut l = match self.log.lock() {
                Ok(l) => l,
                Err(p) => p.into_inner(),
            };
            for _ in 0..times {
                l.push((kind, key.to_string()));
            }
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> Snapshot {
        let c = &self.counts;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Snapshot {
            gets: l(&c.gets),
            range_gets: l(&c.range_gets),
            puts: l(&c.puts),
            list_pages: l(&c.list_pages),
            listed_keys: l(&c.listed_keys),
            bytes_read: l(&c.bytes_read),
            bytes_written: l(&c.bytes_written),
            deletes: l(&c.deletes),
        }
    }

    /// Start counting (and logging) from zero.
    pub fn reset(&self) {
        self.take_log();
        let c = &self.counts;
        for a in [
            &c.gets,
            &c.range_gets,
            &c.puts,
            &c.list_pages,
            &c.listed_keys,
            &c.bytes_read,
            &c.bytes_written,
            &c.deletes,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }

    async fn wait(&self, pick: fn(&Latency) -> Duration, times: u64) {
        if let Some(l) = &self.latency {
            let d = pick(l) * u32::try_from(times).unwrap_or(u32::MAX);
            if !d.is_zero() {
                tokio::time::sleep(d).await;
            }
        }
    }

    fn listed(&self, prefix: &str, n: usize) -> u64 {
        let pages = (n.div_ceil(LIST_PAGE)).max(1) as u64;
        self.note(Request::List, prefix, pages);
        self.counts.list_pages.fetch_add(pages, Ordering::Relaxed);
        self.counts
            .listed_keys
            .fetch_add(n as u64, Ordering::Relaxed);
        pages
    }
}

#[async_trait]
impl AtomicPublisher for MeteredPublisher {
    fn describe(&self) -> String {
        format!("metered({})", self.inner.describe())
    }

    fn read_limits(&self) -> crate::base::limits::ReadLimits {
        self.inner.read_limits()
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.counts.puts.fetch_add(1, Ordering::Relaxed);
        self.note(Request::Put, key, 1);
        self.counts
            .bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.wait(|l| l.put, 1).await;
        self.inner.put_create(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.counts.gets.fetch_add(1, Ordering::Relaxed);
        self.note(Request::Get, key, 1);
        self.wait(|l| l.get, 1).await;
        let got = self.inner.get(key).await?;
        if let Some(b) = &got {
            self.counts
                .bytes_read
                .fetch_add(b.len() as u64, Ordering::Relaxed);
        }
        Ok(got)
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        self.counts.gets.fetch_add(1, Ordering::Relaxed);
        self.note(Request::Get, key, 1);
        self.wait(|l| l.get, 1).await;
        let got = self.inner.get_at_most(key, max).await?;
        if let Some(b) = &got {
            self.counts
                .bytes_read
                .fetch_add(b.len() as u64, Ordering::Relaxed);
        }
        Ok(got)
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.counts.range_gets.fetch_add(1, Ordering::Relaxed);
        self.note(Request::RangeGet, key, 1);
        self.wait(|l| l.get, 1).await;
        let b = self.inner.get_range(key, range).await?;
        self.counts
            .bytes_read
            .fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let v = self.inner.list(prefix).await?;
        let pages = self.listed(prefix, v.len());
        // Pages of one listing follow each other (each needs the last one's token).
        self.wait(|l| l.list_page, pages).await;
        Ok(v)
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        let v = self.inner.list_after(prefix, after, limit).await?;
        let pages = self.listed(prefix, v.len());
        self.wait(|l| l.list_page, pages).await;
        Ok(v)
    }

    async fn list_names(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let v = self.inner.list_names(prefix).await?;
        let pages = self.listed(prefix, v.len());
        self.wait(|l| l.list_page, pages).await;
        Ok(v)
    }

    async fn list_after_sized_from(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
    ) -> Result<Vec<ObjectInfo>> {
        let v = self
            .inner
            .list_after_sized_from(prefix, after, limit, sized_from)
            .await?;
        let pages = self.listed(prefix, v.len());
        self.wait(|l| l.list_page, pages).await;
        Ok(v)
    }

    async fn list_after_sized_skipping(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
        skip: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<ObjectInfo>> {
        let v = self
            .inner
            .list_after_sized_skipping(prefix, after, limit, sized_from, skip)
            .await?;
        let pages = self.listed(prefix, v.len());
        self.wait(|l| l.list_page, pages).await;
        Ok(v)
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
        let v = self.inner.list_names_changed(prefix, since_ns).await?;
        if let Some(c) = &v {
            let pages = self.listed(prefix, c.objects.len());
            self.wait(|l| l.list_page, pages).await;
        }
        Ok(v)
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.counts.deletes.fetch_add(1, Ordering::Relaxed);
        self.note(Request::Delete, key, 1);
        self.wait(|l| l.get, 1).await;
        self.inner.delete_temp(key).await
    }
}

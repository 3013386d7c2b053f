//! A publisher wrapper that records every listing request (`list_after` with its offset
//! and how many keys came back, `list` with its prefix), so a test can assert how a range
//! was paged: from which offsets, and whether it fell back to a whole-prefix listing.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use lineage_store::{AtomicPublisher, ObjectInfo, Outcome, Result};

/// One listing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// `list_after(prefix, after, _)` and the number of keys it returned.
    After {
        /// The prefix asked for.
        prefix: String,
        /// The offset asked from.
        after: String,
        /// Keys returned.
        got: usize,
    },
    /// `list(prefix)`.
    Whole(String),
}

/// Passes everything through to `inner` and records the listings.
#[derive(Debug)]
pub struct Recorder {
    inner: Arc<dyn AtomicPublisher>,
    log: Mutex<Vec<Listed>>,
}

impl Recorder {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn AtomicPublisher>) -> Self {
        Self {
            inner,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The listings so far, and start again.
    pub fn take(&self) -> Vec<Listed> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}

#[async_trait]
impl AtomicPublisher for Recorder {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.inner.put_create(key, bytes).await
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.log
            .lock()
            .unwrap()
            .push(Listed::Whole(prefix.to_string()));
        self.inner.list(prefix).await
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        let page = self.inner.list_after(prefix, after, limit).await?;
        self.log.lock().unwrap().push(Listed::After {
            prefix: prefix.to_string(),
            after: after.to_string(),
            got: page.len(),
        });
        Ok(page)
    }
    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

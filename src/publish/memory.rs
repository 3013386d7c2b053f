//! An in-memory [`AtomicPublisher`] for tests and `memory://` stores (process-local).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::Utc;

use crate::base::clock::{Clock, SystemClock};
use crate::base::error::{Error, Result};
use crate::publish::{check_key, check_temp_key, AtomicPublisher, ObjectInfo, Outcome};

/// Objects in a map behind a mutex: create-only by holding the lock over check and insert.
#[derive(Debug, Default)]
pub struct MemoryPublisher {
    objects: Mutex<BTreeMap<String, (Bytes, chrono::DateTime<Utc>)>>,
}

impl MemoryPublisher {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Test helper: put an object regardless of what is there (simulates tampering or a
    /// foreign writer; the store's own write path never calls it).
    pub fn tamper_put(&self, key: &str, bytes: Bytes) {
        self.lock()
            .insert(key.to_string(), (bytes, SystemClock.now()));
    }

    /// Test helper: remove an object (simulates tampering).
    pub fn tamper_remove(&self, key: &str) -> bool {
        self.lock().remove(key).is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Bytes, chrono::DateTime<Utc>)>> {
        // A poisoned lock only means another test thread panicked; the map is still valid.
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl AtomicPublisher for MemoryPublisher {
    fn describe(&self) -> String {
        "memory://".to_string()
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        check_key(key)?;
        let mut map = self.lock();
        if map.contains_key(key) {
            return Ok(Outcome::AlreadyExists);
        }
        map.insert(key.to_string(), (bytes, SystemClock.now()));
        Ok(Outcome::Created)
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        Ok(self.lock().get(key).map(|(b, _)| b.clone()))
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let map = self.lock();
        let (b, _) = map
            .get(key)
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        let (start, end) = (range.start as usize, (range.end as usize).min(b.len()));
        if start > end {
            return Err(Error::internal(format!("range {range:?} outside {key}")));
        }
        Ok(b.slice(start..end))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        Ok(self
            .lock()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, (b, t))| ObjectInfo {
                key: k.clone(),
                size: b.len() as u64,
                modified: Some(*t),
                link: None,
            })
            .collect())
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        use std::ops::Bound;
        // Start at whichever comes later: the prefix (inclusive) or `after` (exclusive).
        let start = if after < prefix {
            Bound::Included(prefix.to_string())
        } else {
            Bound::Excluded(after.to_string())
        };
        Ok(self
            .lock()
            .range((start, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, (b, t))| ObjectInfo {
                key: k.clone(),
                size: b.len() as u64,
                modified: Some(*t),
                link: None,
            })
            .collect())
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        check_temp_key(key)?;
        self.lock().remove(key);
        Ok(())
    }
}

//! A fault-injecting [`AtomicPublisher`] wrapper for tests: it implements the same trait
//! and fails chosen `put_create` calls before or after the inner write lands, which is
//! how lost responses, timeouts and crashes between two publishes are simulated.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;

use crate::base::error::{Error, Result};
use crate::publish::{AtomicPublisher, ObjectInfo, Outcome};

/// When to fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Fail without writing (the request never reached the store).
    Before,
    /// Write, then report an error (the response was lost).
    After,
    /// Write, then report `AlreadyExists` (a retried create that had landed).
    AfterAsExisting,
}

#[derive(Debug, Default)]
struct Plan {
    /// (substring of the key, fault, remaining count, matching creates to let through first)
    rules: Vec<(String, Fault, usize, usize)>,
    fired: Vec<String>,
}

/// Hooks run once, each before the first create whose key contains its pattern.
#[derive(Default)]
struct Hooks(Vec<(String, BoxFuture<'static, ()>)>);

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(p, _)| p))
            .finish()
    }
}

/// Wraps a publisher and injects [`Fault`]s into `put_create` calls whose key contains a
/// pattern, or runs a hook before one ([`FaultyPublisher::before_create`]). Reads,
/// listings and deletes pass through.
#[derive(Debug)]
pub struct FaultyPublisher {
    inner: Arc<dyn AtomicPublisher>,
    plan: Mutex<Plan>,
    hooks: Mutex<Hooks>,
}

impl FaultyPublisher {
    /// Wrap `inner` with no faults planned.
    pub fn new(inner: Arc<dyn AtomicPublisher>) -> Self {
        Self {
            inner,
            plan: Mutex::new(Plan::default()),
            hooks: Mutex::new(Hooks::default()),
        }
    }

    /// Run `hook` (once, to completion) before the first create whose key contains
    /// `pattern`: how another writer is made to land at an exact point of this one's
    /// sequence of publishes (a race made reproducible without timing).
    pub fn before_create(&self, pattern: &str, hook: BoxFuture<'static, ()>) {
        self.hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .push((pattern.to_string(), hook));
    }

    /// Fail the next `times` creates whose key contains `pattern`.
    pub fn fail(&self, pattern: &str, fault: Fault, times: usize) {
        self.lock()
            .rules
            .push((pattern.to_string(), fault, times, 0));
    }

    /// Let the first `skip` creates whose key contains `pattern` through, then fail the
    /// next one: a crash at a seeded point of a sequence of publishes.
    pub fn fail_after(&self, pattern: &str, skip: usize, fault: Fault) {
        self.lock()
            .rules
            .push((pattern.to_string(), fault, 1, skip));
    }

    /// The keys a fault fired on, in order.
    pub fn fired(&self) -> Vec<String> {
        self.lock().fired.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take_fault(&self, key: &str) -> Option<Fault> {
        let mut plan = self.lock();
        let hit = plan
            .rules
            .iter_mut()
            .find(|(p, _, n, _)| *n > 0 && key.contains(p.as_str()))
            .and_then(|(_, f, n, skip)| {
                if *skip > 0 {
                    *skip -= 1;
                    return None;
                }
                *n -= 1;
                Some(f.clone())
            });
        if hit.is_some() {
            plan.fired.push(key.to_string());
        }
        hit
    }
}

fn injected(key: &str) -> Error {
    Error::io(
        key,
        std::io::Error::new(std::io::ErrorKind::TimedOut, "injected fault"),
    )
}

#[async_trait]
impl AtomicPublisher for FaultyPublisher {
    fn describe(&self) -> String {
        format!("faulty({})", self.inner.describe())
    }

    fn read_limits(&self) -> crate::base::limits::ReadLimits {
        self.inner.read_limits()
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        let hook = {
            let mut hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
            let at = hooks.0.iter().position(|(p, _)| key.contains(p.as_str()));
            at.map(|i| hooks.0.remove(i).1)
        };
        if let Some(h) = hook {
            h.await;
        }
        match self.take_fault(key) {
            None => self.inner.put_create(key, bytes).await,
            Some(Fault::Before) => Err(injected(key)),
            Some(Fault::After) => {
                self.inner.put_create(key, bytes).await?;
                Err(injected(key))
            }
            Some(Fault::AfterAsExisting) => {
                self.inner.put_create(key, bytes).await?;
                Ok(Outcome::AlreadyExists)
            }
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.inner.get(key).await
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        self.inner.get_at_most(key, max).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.inner.list(prefix).await
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        self.inner.list_after(prefix, after, limit).await
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

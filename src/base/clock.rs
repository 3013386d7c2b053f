//! Injected time and commit-id generation, so tests are deterministic.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Where "now" comes from.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    // The one place that reads the system's time (clippy.toml).
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stands still at a given time (tests).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// A clock that moves only when told to (tests of time-driven behaviour, e.g. a sink's
/// `max_delay`, without sleeping).
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Standing at `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        Self(std::sync::Mutex::new(t))
    }
    /// Move forward by `d`.
    pub fn advance(&self, d: chrono::Duration) {
        let mut g = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *g += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Where fresh commit ids come from. Ids must be unique and should sort by time.
pub trait IdGen: Send + Sync + std::fmt::Debug {
    /// A new commit id.
    fn commit_id(&self) -> Uuid;
}

/// UUIDv7: 48 bits of milliseconds, then random bits; the `uuid` crate keeps ids made in
/// one process monotonic, so commit ids sort in commit order.
#[derive(Debug, Default, Clone, Copy)]
pub struct V7Ids;

impl IdGen for V7Ids {
    // The one place that makes time-ordered ids (clippy.toml).
    #[allow(clippy::disallowed_methods)]
    fn commit_id(&self) -> Uuid {
        Uuid::now_v7()
    }
}

/// Deterministic v7-shaped ids from a counter (tests): `019b76da-a800-7000-8000-<counter>`
/// (2026-01-01T00:00:00Z, then the counter).
#[derive(Debug, Default)]
pub struct SeqIds(AtomicU64);

impl IdGen for SeqIds {
    fn commit_id(&self) -> Uuid {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let ms: u128 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
        let v = (ms << 80) | (0x7u128 << 76) | (0x8u128 << 60) | u128::from(n);
        Uuid::from_u128(v)
    }
}

//! A stop request shared by the signal handler and the replication: once requested, no
//! new object is started, objects in flight finish (a commit's pointer follows its part),
//! and `--follow` ends its wait.

use std::sync::Arc;

use tokio::sync::watch;

/// A clonable stop flag that can also be awaited.
#[derive(Debug, Clone)]
pub struct Stop(Arc<watch::Sender<bool>>);

impl Default for Stop {
    fn default() -> Self {
        Self(Arc::new(watch::channel(false).0))
    }
}

impl Stop {
    /// A flag not yet requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask everything that holds this flag to stop.
    pub fn request(&self) {
        self.0.send_replace(true);
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Wait until a stop is requested (at once when it already was).
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|v| *v).await;
    }
}

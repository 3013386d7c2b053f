//! Flushes in flight: each is encoded and published by its own task, at most
//! `max_in_flight` at once and at most one encoding per core (the submitter waits for
//! both: back-pressure). Results come back in submission order.
//!
//! Tasks run on the runtime, not inside the submitter's future, so a commit that has
//! started always runs to its end (part, then pointer) even when the submitter stops
//! waiting: nothing is cut between part and pointer by a cancelled future.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::base::error::{Error, Result};
use crate::format::claim::derived_commit_id;
use crate::format::pointer::Pointer;
use crate::write::flush::Flush;
use crate::write::flush::WriteConfig;

/// Encodes and publishes flushes with bounded concurrency.
#[derive(Debug)]
pub(crate) struct Committer {
    writer: WriteConfig,
    commit_key: Option<String>,
    slots: Arc<Semaphore>,
    encoders: Arc<Semaphore>,
    tasks: VecDeque<JoinHandle<Result<Pointer>>>,
    landed: Vec<Pointer>,
    failed: Arc<AtomicBool>,
    handle: Handle,
}

impl Committer {
    /// On the current runtime; commit ids from `commit_key` when given, else fresh.
    pub(crate) fn new(
        writer: WriteConfig,
        max_in_flight: usize,
        commit_key: Option<String>,
    ) -> Result<Self> {
        let handle = Handle::try_current().map_err(|_| {
            Error::usage("a sink needs a tokio runtime: create it inside one (Runtime::enter)")
        })?;
        let encoders = Arc::new(Semaphore::new(writer.encoders()));
        Ok(Self {
            writer,
            commit_key,
            slots: Arc::new(Semaphore::new(max_in_flight.max(1))),
            encoders,
            tasks: VecDeque::new(),
            landed: Vec::new(),
            failed: Arc::new(AtomicBool::new(false)),
            handle,
        })
    }

    /// Commits started and not yet collected.
    pub(crate) fn in_flight(&self) -> usize {
        self.tasks.len()
    }

    /// Commits that landed since the last call, in submission order.
    pub(crate) fn take_landed(&mut self) -> Vec<Pointer> {
        std::mem::take(&mut self.landed)
    }

    /// Start committing `f`, waiting for a free slot and a free encoder first (landed
    /// commits are collected for [`take_landed`](Self::take_landed)). After a failed
    /// commit, waits for every commit in flight and returns the first error.
    ///
    /// Memory: at most `encoders` flushes are held as rows (being encoded), at most
    /// `max_in_flight` as encoded parts (being published).
    pub(crate) async fn submit(&mut self, f: Flush) -> Result<()> {
        self.collect_ready().await?;
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(Error::internal_from)?;
        let encoder = self
            .encoders
            .clone()
            .acquire_owned()
            .await
            .map_err(Error::internal_from)?;
        self.collect_ready().await?;
        let id = match &self.commit_key {
            Some(k) => derived_commit_id(&f.run_id, &f.target_crs, k, f.index_in_group),
            None => self.writer.new_commit_id(),
        }
        .to_string();
        let w = self.writer.clone();
        let failed = self.failed.clone();
        self.tasks.push_back(self.handle.spawn(async move {
            let r = async {
                let (run_id, target_crs) = (f.run_id.clone(), f.target_crs.clone());
                let enc = w.encode_flush(f, &id, encoder).await?;
                if let Some(p) = w.kept_flush(&run_id, &id, &enc).await? {
                    return Ok(p);
                }
                w.publish_flush(&run_id, &target_crs, id, enc).await
            }
            .await;
            if r.is_err() {
                failed.store(true, Ordering::SeqCst);
            }
            drop(permit);
            r
        }));
        Ok(())
    }

    /// Collect the commits that have landed at the front of the queue.
    pub(crate) async fn collect_ready(&mut self) -> Result<()> {
        if self.failed.load(Ordering::SeqCst) {
            return self.drain().await;
        }
        while self.tasks.front().is_some_and(JoinHandle::is_finished) {
            if let Some(t) = self.tasks.pop_front() {
                match join(t).await {
                    Ok(p) => self.landed.push(p),
                    Err(e) => {
                        // Let the others end (their commits stay), then report.
                        let _ = self.drain().await;
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Wait for every commit in flight (collected for [`take_landed`](Self::take_landed));
    /// the first error once all of them ended.
    pub(crate) async fn drain(&mut self) -> Result<()> {
        let mut first_err = None;
        while let Some(t) = self.tasks.pop_front() {
            match join(t).await {
                Ok(p) => self.landed.push(p),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.failed.store(false, Ordering::SeqCst);
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

async fn join(t: JoinHandle<Result<Pointer>>) -> Result<Pointer> {
    t.await
        .map_err(|e| Error::internal(format!("a commit task failed: {e}")))?
}

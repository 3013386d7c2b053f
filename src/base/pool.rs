//! A fixed set of encoder threads, one per core, for the whole process.
//!
//! Encoding allocates the largest buffers of an append (a flush's pages and its Parquet
//! file). On tokio's blocking pool those allocations land on whichever of dozens of
//! threads runs the task, and glibc keeps freed memory in per-thread arenas: a streaming
//! append measured ~100 MiB more peak RSS that way. A few long-lived threads keep the
//! big buffers in a few arenas, where freed memory is reused.

use std::sync::mpsc;
use std::sync::Mutex;

use crate::base::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send>;

/// The pool's queue. A child made by `fork()` (Python's multiprocessing) inherits the
/// parent's queue but none of its threads, so the pool belongs to the process that started
/// it: another process starts its own (a job queued to the inherited one would never run).
fn sender() -> Result<mpsc::Sender<Job>> {
    static POOL: Mutex<Option<(u32, mpsc::Sender<Job>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut pool = POOL
        .lock()
        .map_err(|_| Error::internal("the encoder pool is poisoned"))?;
    if let Some((owner, tx)) = pool.as_ref() {
        if *owner == pid {
            return Ok(tx.clone());
        }
    }
    let (tx, rx) = mpsc::channel::<Job>();
    let rx = std::sync::Arc::new(Mutex::new(rx));
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    for i in 0..n {
        let rx = rx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("lineage-encode-{i}"))
            .spawn(move || loop {
                let job = match rx.lock() {
                    Ok(g) => g.recv(),
                    Err(_) => return,
                };
                match job {
                    // A panicking job drops its result sender (its submitter gets an
                    // error) and leaves this thread serving the queue.
                    Ok(job) => {
                        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                            tracing::error!("an encoder job panicked");
                        }
                    }
                    Err(_) => return,
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start an encoder thread");
        }
    }
    // An inherited queue is forgotten, not dropped: its receiver's threads are not here.
    if let Some(inherited) = pool.replace((pid, tx.clone())) {
        std::mem::forget(inherited);
    }
    Ok(tx)
}

/// Run `f` on an encoder thread and wait for its result without blocking the runtime.
pub(crate) async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    sender()?
        .send(job)
        .map_err(|_| Error::internal("the encoder pool has stopped"))?;
    rx.await
        .map_err(|_| Error::internal("an encoder job failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that panics fails for its submitter, and the pool keeps every thread: more
    /// panicking jobs than threads, then as many jobs as threads at once, all run.
    #[tokio::test]
    async fn a_panicking_job_fails_alone_and_keeps_its_thread() {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        for _ in 0..n + 2 {
            let r = run(|| -> u32 { panic!("planted") }).await;
            assert!(matches!(r, Err(Error::Internal { .. })), "{r:?}");
        }
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(n));
        let jobs = (0..n).map(|i| {
            let b = barrier.clone();
            run(move || {
                b.wait();
                i
            })
        });
        let done = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            futures::future::join_all(jobs),
        )
        .await
        .expect("every encoder thread is still there");
        assert_eq!(
            done.into_iter().map(|r| r.unwrap()).sum::<usize>(),
            n * (n - 1) / 2
        );
    }
}

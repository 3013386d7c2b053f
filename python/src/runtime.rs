//! One tokio runtime per process for every call, entered with the GIL released.
//!
//! A child made by `fork()` (Python's `multiprocessing` default on Linux before 3.14)
//! inherits the parent's runtime object but none of its threads, so a runtime is only
//! reused in the process that built it; the child builds its own.
//!
//! Ctrl-C: while a call waits (on the store, on commits in flight), it looks for signals
//! every [`SIGNAL_CHECK`] (taking the GIL for a moment, as Python's own blocking calls
//! do) and stops waiting with the signal handler's exception (`KeyboardInterrupt` for
//! SIGINT). Stopping drops the future: nothing new is started. Commits already started
//! run on the runtime to their end (part, then pointer: see the library's `Committer`),
//! so nothing is left half-published by the interruption itself; if the process then
//! exits, what was in flight is what a `lineage append` killed by SIGINT leaves (temps,
//! at most a part without its pointer, named by `verify` and adopted by `repair`).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lineage_store::{Error, Result};
use pyo3::{PyResult, Python};
use tokio::runtime::Runtime;

static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// How often a waiting call looks for signals (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// This process's runtime (built on first use, and again in a forked child).
pub fn runtime() -> Result<Arc<Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, rt)) = slot.as_ref() {
        if *owner == pid {
            return Ok(rt.clone());
        }
    }
    if let Some((_, inherited)) = slot.take() {
        // Dropping it would wait for worker threads that do not exist in this process.
        std::mem::forget(inherited);
    }
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("lineage-store")
            .build()
            .map_err(|e| Error::internal(format!("cannot start the runtime: {e}")))?,
    );
    *slot = Some((pid, rt.clone()));
    Ok(rt)
}

/// Drive `f` to its end, or until a signal handler raises (the outer error).
async fn until_signal<F, T>(f: F) -> PyResult<T>
where
    F: Future<Output = T>,
{
    tokio::pin!(f);
    let mut tick = tokio::time::interval(SIGNAL_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            r = &mut f => return Ok(r),
            _ = tick.tick() => Python::attach(|py| py.check_signals())?,
        }
    }
}

/// Run `f` to completion on the runtime with the GIL released, so other Python threads
/// (and other calls into this module) run meanwhile. The outer error is a signal's
/// exception (Ctrl-C: `KeyboardInterrupt`); the inner one the library's.
pub fn block_on<F, T>(py: Python<'_>, f: F) -> PyResult<Result<T>>
where
    F: Future<Output = Result<T>> + Send,
    T: Send,
{
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return Ok(Err(e)),
    };
    py.detach(move || rt.block_on(until_signal(f)))
}

/// [`block_on`] for a future that is not `Send` (rustc cannot always prove it for futures
/// holding borrowed trait objects across awaits, e.g. `verify`'s): the future is made by
/// `make` on the detached thread and never crosses threads.
pub fn block_on_local<M, F, T>(py: Python<'_>, make: M) -> PyResult<Result<T>>
where
    M: FnOnce() -> F + Send,
    F: Future<Output = Result<T>>,
    T: Send,
{
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return Ok(Err(e)),
    };
    py.detach(move || rt.block_on(until_signal(make())))
}

/// Run blocking work (reading an Arrow stream, validating) with the GIL released.
pub fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    py.detach(f)
}

/// Whether a signal handler raised (Ctrl-C) since the last look: for loops that do
/// blocking work piece by piece without the GIL (reading a stream batch by batch).
pub fn signalled() -> PyResult<()> {
    Python::attach(|py| py.check_signals())
}

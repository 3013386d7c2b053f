//! One tokio runtime per process for every call, entered with the GIL released.
//!
//! A child made by `fork()` (Python's `multiprocessing` default on Linux before 3.14)
//! inherits the parent's runtime object but none of its threads, so a runtime is only
//! reused in the process that built it; the child builds its own.

use std::future::Future;
use std::sync::{Arc, Mutex};

use lineage_store::{Error, Result};
use pyo3::Python;
use tokio::runtime::Runtime;

static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

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
            .map_err(|e| Error::Internal(format!("cannot start the runtime: {e}")))?,
    );
    *slot = Some((pid, rt.clone()));
    Ok(rt)
}

/// Run `f` to completion on the runtime with the GIL released, so other Python threads
/// (and other calls into this module) run meanwhile.
pub fn block_on<F, T>(py: Python<'_>, f: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send,
    T: Send,
{
    let rt = runtime()?;
    py.detach(move || rt.block_on(f))
}

/// [`block_on`] for a future that is not `Send` (rustc cannot always prove it for futures
/// holding borrowed trait objects across awaits, e.g. `verify`'s): the future is made by
/// `make` on the detached thread and never crosses threads.
pub fn block_on_local<M, F, T>(py: Python<'_>, make: M) -> Result<T>
where
    M: FnOnce() -> F + Send,
    F: Future<Output = Result<T>>,
    T: Send,
{
    let rt = runtime()?;
    py.detach(move || rt.block_on(make()))
}

/// Run blocking work (reading an Arrow stream, validating) with the GIL released.
pub fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    py.detach(f)
}

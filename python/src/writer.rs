//! `Store.writer()`: a context manager for jobs that emit events as they go, on the
//! library's streaming [`Sink`]: each `write` is validated on arrival (all of it, before
//! any of it is buffered), partitions are committed as they fill or once their oldest
//! row has waited `max_delay`, `close` (leaving the block) publishes the rest, and
//! `abort` (an exception in the block) publishes nothing of the rows still buffered.
//!
//! What an exception inside the block leaves published: every commit cut before it
//! (partitions that reached `batch_rows`, or waited `max_delay`, or were `flush`ed) is
//! complete (part, then pointer) and stays; the rows still buffered are discarded. A
//! writer cannot be pickled (its buffered rows live in this process).
//!
//! The sink lives behind an async mutex shared with a ticker task on the runtime, which
//! calls [`Sink::tick`] at [`Sink::next_deadline`], so a partition is committed after
//! `max_delay` even while the job is quiet (the sink itself only looks at the clock
//! when called).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use lineage_store::conform_batch;
use lineage_store::{
    BatchValidator, Clock, Error, Pointer, Sink, SinkOptions, SystemClock, Writer as LibWriter,
};
use pyo3::prelude::*;
use tokio::sync::{Mutex, Notify};

use crate::arrow_in;
use crate::errors::{IntoPyResult, LResult};
use crate::runtime::{self, block_on};
use crate::types::Commit;

#[derive(Debug)]
struct Shared {
    /// `None` once closed or aborted.
    sink: Mutex<Option<Sink>>,
    /// Every commit that landed, kept when the sink is consumed by close/abort.
    done: std::sync::Mutex<Vec<Pointer>>,
    /// Wakes the ticker: rows were written, or the writer closed.
    wake: Notify,
    closed: AtomicBool,
}

/// A streaming writer (see the module docs). Use it as a context manager; it is safe to
/// share between threads (writes are serialised).
#[pyclass(module = "lineage_store", frozen)]
#[derive(Debug)]
pub struct Writer {
    shared: Arc<Shared>,
    /// The library writer: which commits resuming kept.
    lib: LibWriter,
}

/// A `max_delay` argument: seconds or a `datetime.timedelta`.
fn delay(py: Python<'_>, d: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let secs: f64 = match d.getattr("total_seconds") {
        Ok(f) => f.call0()?.extract()?,
        Err(_) => d.extract()?,
    };
    Duration::try_from_secs_f64(secs).map_err(|_| {
        crate::errors::to_py(
            py,
            Error::usage(format!(
                "max_delay {secs} s: expected a duration of at least 0 s"
            )),
        )
    })
}

impl Writer {
    /// A writer on `writer`'s store; the ticker starts when `max_delay` is set.
    pub fn open(
        py: Python<'_>,
        writer: LibWriter,
        batch_rows: usize,
        max_delay: Option<&Bound<'_, PyAny>>,
        max_in_flight: usize,
    ) -> PyResult<Self> {
        let max_delay = max_delay.map(|d| delay(py, d)).transpose()?;
        let opts = SinkOptions {
            batch_rows,
            max_delay,
            max_in_flight,
            ..SinkOptions::default()
        };
        let rt = runtime::runtime().py_err(py)?;
        let sink = {
            let _entered = rt.enter();
            writer.sink(opts).py_err(py)?
        };
        let lib = writer;
        let shared = Arc::new(Shared {
            sink: Mutex::new(Some(sink)),
            done: std::sync::Mutex::new(Vec::new()),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
        });
        if max_delay.is_some() {
            rt.spawn(tick(shared.clone()));
        }
        Ok(Self { shared, lib })
    }

    fn done(&self) -> Vec<Pointer> {
        self.shared
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Take the sink out and end it with `end` (finish or abort).
    fn end<F, Fut>(&self, py: Python<'_>, end: F) -> PyResult<Vec<Commit>>
    where
        F: FnOnce(Sink) -> Fut + Send,
        Fut: std::future::Future<Output = LResult<Vec<Pointer>>> + Send,
    {
        let shared = self.shared.clone();
        block_on(py, async move {
            let sink = shared.sink.lock().await.take();
            shared.closed.store(true, Ordering::SeqCst);
            shared.wake.notify_one();
            let Some(s) = sink else { return Ok(()) };
            // What landed so far stays known when ending fails (those commits are complete).
            let landed = s.committed().to_vec();
            let ended = end(s).await;
            let mut done = shared.done.lock().unwrap_or_else(|p| p.into_inner());
            match ended {
                Ok(all) => {
                    *done = all;
                    Ok(())
                }
                Err(e) => {
                    *done = landed;
                    Err(e)
                }
            }
        })?
        .py_err(py)?;
        Ok(self
            .done()
            .into_iter()
            .map(|p| Commit::by(p, &self.lib))
            .collect())
    }
}

/// Commit partitions past `max_delay` while the job is quiet: sleep until the sink's
/// next deadline (or until rows arrive), then tick. Ends when the writer is closed or
/// dropped (both wake it); an error is kept by the sink, whose next call reports it.
async fn tick(s: Arc<Shared>) {
    loop {
        if s.closed.load(Ordering::SeqCst) {
            return;
        }
        let deadline = match s.sink.lock().await.as_ref() {
            Some(sink) => sink.next_deadline(),
            None => return,
        };
        match deadline {
            Some(d) => {
                let wait = (d - SystemClock.now()).to_std().unwrap_or(Duration::ZERO);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = s.wake.notified() => continue,
                }
            }
            None => {
                s.wake.notified().await;
                continue;
            }
        }
        let mut guard = s.sink.lock().await;
        if let Some(sink) = guard.as_mut() {
            if sink.tick().await.is_err() {
                return;
            }
        }
    }
}

/// Validate every batch of one `write` (rows numbered across them) before any is
/// buffered: a refused write keeps nothing. One batch goes to the sink as it is (the sink
/// validates it whole); several are checked here first, then handed over.
fn prepare(source: arrow_in::Source) -> LResult<Vec<RecordBatch>> {
    let raw = source.read_all()?;
    if raw.len() == 1 {
        return raw.into_iter().map(conform_batch).collect();
    }
    let mut v = BatchValidator::new();
    raw.into_iter().map(|b| v.validate(b)).collect()
}

#[pymethods]
impl Writer {
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving the block: publish the rest when it ended normally; when it raised,
    /// discard the buffered rows (nothing of them is published). Never swallows the
    /// exception.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        exc: Option<Bound<'_, PyAny>>,
        tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = (exc, tb);
        if exc_type.is_none() {
            self.close(py)?;
        } else {
            self.abort(py)?;
        }
        Ok(false)
    }

    /// Validate `data` (any Arrow producer) and buffer it; commits the partitions it
    /// fills (and those past `max_delay`). Waits while `max_in_flight` commits are in
    /// flight. Refused data raises `InputError` and nothing of it is kept.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let source = arrow_in::import(py, data)?;
        // The schema first, also when no row follows (the CLI's rule for an Arrow file).
        if let Some(e) = crate::refusal::schema_error(py, source.producer, &source.schema) {
            return Err(e);
        }
        let batches = crate::runtime::detached(py, move || prepare(source)).py_err(py)?;
        let shared = self.shared.clone();
        block_on(py, async move {
            let mut guard = shared.sink.lock().await;
            let sink = guard
                .as_mut()
                .ok_or_else(|| Error::usage("the writer is closed"))?;
            for b in batches {
                sink.write(b).await?;
            }
            shared.wake.notify_one();
            Ok(())
        })?
        .py_err(py)
    }

    /// Commit every buffered row now and wait until every commit landed (a durability
    /// point); the writer stays open. Returns every commit so far.
    fn flush(&self, py: Python<'_>) -> PyResult<Vec<Commit>> {
        let shared = self.shared.clone();
        let landed = block_on(py, async move {
            let mut guard = shared.sink.lock().await;
            let sink = guard
                .as_mut()
                .ok_or_else(|| Error::usage("the writer is closed"))?;
            sink.flush().await?;
            Ok(sink.committed().to_vec())
        })?
        .py_err(py)?;
        Ok(landed
            .into_iter()
            .map(|p| Commit::by(p, &self.lib))
            .collect())
    }

    /// Publish the rest, wait for every commit, and return all of them. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<Vec<Commit>> {
        self.end(py, |s| s.finish())
    }

    /// Discard the buffered rows (nothing of them is published), wait for the commits in
    /// flight, and return the commits that landed.
    fn abort(&self, py: Python<'_>) -> PyResult<Vec<Commit>> {
        self.end(py, |s| s.abort())
    }

    /// Every commit landed so far, also those the `max_delay` timer cut.
    #[getter]
    fn commits(&self, py: Python<'_>) -> PyResult<Vec<Commit>> {
        let shared = self.shared.clone();
        let open = block_on(py, async move {
            let mut guard = shared.sink.lock().await;
            match guard.as_mut() {
                Some(s) => {
                    s.collect_landed().await?;
                    Ok(Some(s.committed().to_vec()))
                }
                None => Ok(None),
            }
        })?
        .py_err(py)?;
        Ok(open
            .unwrap_or_else(|| self.done())
            .into_iter()
            .map(|p| Commit::by(p, &self.lib))
            .collect())
    }

    /// Rows buffered, not committed yet.
    #[getter]
    fn buffered_rows(&self, py: Python<'_>) -> PyResult<usize> {
        let shared = self.shared.clone();
        block_on(py, async move {
            Ok(shared
                .sink
                .lock()
                .await
                .as_ref()
                .map_or(0, |s| s.buffered_rows()))
        })?
        .py_err(py)
    }

    /// True once closed or aborted.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// A writer is not data: its buffered rows and commits in flight live in this process.
    fn __reduce__(&self) -> PyResult<()> {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "cannot pickle a Writer: its buffered rows live in this process; pickle the Store and open a writer where the rows are made",
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "Writer(closed={})",
            if self.closed() { "True" } else { "False" }
        )
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Wake the ticker so that it ends (and with it the last reference to the sink).
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
    }
}

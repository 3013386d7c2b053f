//! Group commit of directory fsyncs: one `fsync(dir)` makes durable every name renamed
//! into `dir` before it started, so publishes into the same directory at the same time
//! (the commits in flight of one run all put their pointers into one directory and their
//! index entries into another) share fsyncs instead of queueing one each.
//!
//! A publish calls [`DirSyncs::after_rename`] once its rename (or exclusive create) has
//! returned. It takes a ticket, then waits until an fsync of the directory that *started
//! after the ticket was taken* has succeeded, running that fsync itself when none is
//! running. An fsync that started after the rename returned covers the rename, so no
//! publish returns before its name is durable. An fsync that fails fails every publish
//! whose rename came before it returned (Linux may drop the dirty entries and report the
//! error once, so a later successful fsync would not prove them durable).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};

/// How a directory is made durable (injected by tests to count and order fsyncs).
pub type SyncFn = Arc<dyn Fn(&Path) -> Result<()> + Send + Sync>;

/// Per-directory group commit (see the module docs).
pub struct DirSyncs {
    dirs: Mutex<HashMap<PathBuf, Arc<Dir>>>,
    sync: SyncFn,
}

impl std::fmt::Debug for DirSyncs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirSyncs").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Dir {
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Default)]
struct State {
    /// Tickets handed out so far.
    issued: u64,
    /// Every ticket up to this one is durable.
    durable: u64,
    /// An fsync is running.
    running: bool,
    /// Every ticket up to this one was covered by an fsync that failed, and why.
    failed: Option<(u64, String)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves counters that are still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DirSyncs {
    /// Group commit over `sync`.
    pub fn new(sync: SyncFn) -> Self {
        Self {
            dirs: Mutex::new(HashMap::new()),
            sync,
        }
    }

    /// Group commit over a real `fsync(dir)`.
    pub fn fsync() -> Self {
        Self::new(Arc::new(|dir: &Path| {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| Error::io(dir, e))
        }))
    }

    /// Return once every name renamed into `dir` before this call is durable (blocking).
    pub fn after_rename(&self, dir: &Path) -> Result<()> {
        let d = lock(&self.dirs)
            .entry(dir.to_path_buf())
            .or_default()
            .clone();
        let r = self.wait_durable(&d, dir);
        // Forget an idle directory, so a long-lived writer's table stays as small as its
        // publishes in flight: nobody else holds it while the table is locked.
        let mut dirs = lock(&self.dirs);
        if Arc::strong_count(&d) == 2 {
            dirs.remove(dir);
        }
        r
    }

    fn wait_durable(&self, d: &Dir, dir: &Path) -> Result<()> {
        let mut s = lock(&d.state);
        s.issued += 1;
        let ticket = s.issued;
        loop {
            if s.durable >= ticket {
                return Ok(());
            }
            // A failed fsync may have dropped our name and cleared the error, so a later
            // fsync's success would prove nothing: fail as its own publish did.
            if let Some((upto, why)) = s.failed.as_ref().filter(|(upto, _)| ticket <= *upto) {
                let e =
                    std::io::Error::other(format!("fsync covering ticket {upto} failed: {why}"));
                return Err(Error::io(dir, e));
            }
            if s.running {
                s = d.done.wait(s).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Ours to run: it covers every ticket issued so far (all renamed before now).
            s.running = true;
            let covers = s.issued;
            drop(s);
            let r = (self.sync)(dir);
            s = lock(&d.state);
            s.running = false;
            match &r {
                Ok(()) => s.durable = s.durable.max(covers),
                // Every name renamed before the fsync returned may have been in it.
                Err(e) => s.failed = Some((s.issued, e.to_string())),
            }
            d.done.notify_all();
            r?;
        }
    }

    /// Tickets issued for `dir` so far while it is tracked (tests force interleavings
    /// with it), 0 when it is not.
    pub fn issued(&self, dir: &Path) -> u64 {
        let d = lock(&self.dirs).get(dir).cloned();
        d.map_or(0, |d| lock(&d.state).issued)
    }

    /// Directories with a publish waiting on them now (tests: the table is not a leak).
    pub fn tracked(&self) -> usize {
        lock(&self.dirs).len()
    }
}

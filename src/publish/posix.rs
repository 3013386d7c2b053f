//! The local-disk [`AtomicPublisher`].
//!
//! Publish protocol, per object:
//! 1. create the parent directories (each new one fsynced into its parent);
//! 2. write a hidden temp `.<name>.<nonce>.tmp` beside the target (same directory, so the
//!    publish below is a same-filesystem metadata operation; hidden, so dataset readers
//!    skip it; the nonce keeps concurrent creators of one key from sharing a temp);
//! 3. fsync the temp;
//! 4. publish it with `renameat2(RENAME_NOREPLACE)`, or where the filesystem does not
//!    support that flag, with `link(temp, target)` + `unlink(temp)`; both fail with
//!    `EEXIST` instead of replacing (a plain `rename` would silently overwrite);
//! 5. fsync the directory so the new name survives a power cut.
//!
//! The temp is removed on every error path (a drop guard), so only a crash of the process
//! itself can leave one; `verify` reports those and `sweep` removes them. An empty object
//! (the history's index entries and markers) is created with `O_CREAT|O_EXCL` directly:
//! with no content, that is already all-or-nothing and never over anything.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind as IoKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use rustix::fs::{RenameFlags, CWD};
use rustix::io::Errno;

use crate::base::error::{Error, Result};
use crate::publish::{check_key, check_temp_key, AtomicPublisher, ObjectInfo, Outcome};

/// Called by [`PosixPublisher::list`] for every directory entry after it was read from
/// its directory and before it is examined: the window in which a concurrent publish can
/// rename a temp away. Tests use it to make that race happen deterministically.
pub type ListHook = Arc<dyn Fn(&Path) + Send + Sync>;

/// A store rooted at a local directory.
#[derive(Clone)]
pub struct PosixPublisher {
    root: PathBuf,
    list_hook: Option<ListHook>,
    inject: Option<InjectedWriteError>,
}

impl std::fmt::Debug for PosixPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixPublisher")
            .field("root", &self.root)
            .field("list_hook", &self.list_hook.is_some())
            .field("inject", &self.inject)
            .finish()
    }
}

/// A write error injected into this publisher's temps, for tests on machines where the
/// real condition cannot be made (no small filesystem can be mounted for a real ENOSPC;
/// a root process that cannot drop privileges ignores mode bits, so no real EACCES).
/// The temp is created and `after_bytes` written before the error, so the cleanup path
/// is the one a real failure takes.
#[derive(Debug, Clone)]
pub struct InjectedWriteError {
    /// Only publishes of keys containing this fail.
    pub key_contains: String,
    /// Bytes written to the temp before the error.
    pub after_bytes: usize,
    /// The OS error returned (28 ENOSPC, 13 EACCES, ...).
    pub errno: i32,
}

impl PosixPublisher {
    /// A store at `root` (created on first publish).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            list_hook: None,
            inject: None,
        }
    }

    /// Inject a [`ListHook`] (fault injection for tests; never needed otherwise).
    pub fn with_list_hook(mut self, hook: ListHook) -> Self {
        self.list_hook = Some(hook);
        self
    }

    /// Fail publishes as `e` says (tests only; see [`InjectedWriteError`]).
    pub fn with_injected_write_error(mut self, e: InjectedWriteError) -> Self {
        self.inject = Some(e);
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, key: &str) -> Result<PathBuf> {
        check_key(key)?;
        Ok(self.root.join(key))
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("blocking task failed: {e}")))?
}

/// `path` opened for reading at byte `start`; a missing file is [`Error::NotFound`].
fn open_at(path: &Path, start: u64) -> Result<File> {
    let mut f = File::open(path).map_err(|e| match e.kind() {
        IoKind::NotFound => Error::NotFound(path.display().to_string()),
        _ => Error::io(path, e),
    })?;
    f.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(path, e))?;
    Ok(f)
}

#[async_trait]
impl AtomicPublisher for PosixPublisher {
    /// A valid `file:///` URL of the absolute root (a relative `--store lake` is not shown
    /// as `file://lake`, which would name a host "lake").
    fn describe(&self) -> String {
        let abs = std::path::absolute(&self.root).unwrap_or_else(|_| self.root.clone());
        url::Url::from_file_path(&abs)
            .map(String::from)
            .unwrap_or_else(|()| format!("file://{}", abs.display()))
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        let target = self.path_of(key)?;
        let inject = self
            .inject
            .clone()
            .filter(|i| key.contains(i.key_contains.as_str()));
        blocking(move || publish_file(&target, &bytes, inject.as_ref())).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let path = self.path_of(key)?;
        blocking(move || match fs::read(&path) {
            Ok(b) => Ok(Some(Bytes::from(b))),
            Err(e) if e.kind() == IoKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        })
        .await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path_of(key)?;
        blocking(move || {
            let f = open_at(&path, range.start)?;
            let len = range.end.saturating_sub(range.start);
            // A recycled buffer for large reads (verify reads every part whole).
            let mut buf = crate::publish::recycle::take(len as usize);
            f.take(len)
                .read_to_end(&mut buf)
                .map_err(|e| Error::io(&path, e))?;
            Ok(crate::publish::recycle::freeze(buf))
        })
        .await
    }

    /// Reads and hashes in 256 KiB pieces through one reused buffer per thread: the
    /// bytes are hashed from cache, never copied into a buffer of the range's size.
    async fn digest_range(
        &self,
        key: &str,
        range: Range<u64>,
        want: crate::base::digest::Want,
    ) -> Result<Option<(crate::base::digest::Digests, u64)>> {
        const PIECE: usize = 256 * 1024;
        thread_local! {
            static PIECE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let path = self.path_of(key)?;
        blocking(move || {
            let mut f = open_at(&path, range.start)?;
            let mut left = range.end.saturating_sub(range.start);
            let mut h = crate::base::digest::Hasher::new(want);
            let mut n = 0u64;
            PIECE_BUF.with_borrow_mut(|buf| {
                buf.resize(PIECE, 0);
                while left > 0 {
                    let want = usize::try_from(left).unwrap_or(PIECE).min(PIECE);
                    let got = match f.read(&mut buf[..want]) {
                        Ok(0) => break,
                        Ok(got) => got,
                        Err(e) if e.kind() == IoKind::Interrupted => continue,
                        Err(e) => return Err(Error::io(&path, e)),
                    };
                    h.update(&buf[..got]);
                    n += got as u64;
                    left -= got as u64;
                }
                Ok(())
            })?;
            Ok(Some((h.finish(), n)))
        })
        .await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let root = self.root.clone();
        let prefix = prefix.to_string();
        let hook = self.list_hook.clone();
        blocking(move || {
            // Start at the deepest directory the prefix names, so listing one run's
            // pointers does not walk the whole store.
            let dir_part = match prefix.rfind('/') {
                Some(i) => &prefix[..i],
                None => "",
            };
            let mut out = Vec::new();
            let start = if dir_part.is_empty() {
                root.clone()
            } else {
                root.join(dir_part)
            };
            let walker = Walker {
                root: &root,
                prefix: &prefix,
                hook: hook.as_deref(),
            };
            walker.walk(&start, &mut out)?;
            Ok(out)
        })
        .await
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        let root = self.root.clone();
        let prefix = prefix.to_string();
        let after = after.to_string();
        let hook = self.list_hook.clone();
        blocking(move || {
            let dir_part = match prefix.rfind('/') {
                Some(i) => &prefix[..i],
                None => "",
            };
            let start = if dir_part.is_empty() {
                root.clone()
            } else {
                root.join(dir_part)
            };
            let mut out = Vec::new();
            let page = Page {
                prefix: &prefix,
                after: &after,
                limit,
            };
            let walker = Walker {
                root: &root,
                prefix: &prefix,
                hook: hook.as_deref(),
            };
            walker.walk_sorted(&start, &page, &mut out)?;
            Ok(out)
        })
        .await
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        check_temp_key(key)?;
        let path = self.path_of(key)?;
        blocking(move || match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == IoKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, e)),
        })
        .await
    }
}

/// A recursive listing. A directory walk is not a snapshot: a concurrent publish renames
/// its temp away, and `sweep` removes temps, between `read_dir` and the `stat` of an
/// entry. An entry (file or directory) that vanished in that window is skipped, as if the
/// walk had run a moment later; every other error is reported.
struct Walker<'a> {
    root: &'a Path,
    prefix: &'a str,
    hook: Option<&'a (dyn Fn(&Path) + Send + Sync)>,
}

impl Walker<'_> {
    fn walk(&self, dir: &Path, out: &mut Vec<ObjectInfo>) -> Result<()> {
        for (entry, is_dir) in self.entries(dir)? {
            let path = entry.path();
            if is_dir {
                self.walk(&path, out)?;
                continue;
            }
            let key = self.key(&path)?;
            if key.starts_with(self.prefix) {
                out.extend(object(&entry, key)?);
            }
        }
        Ok(())
    }

    /// The files and directories of `dir` (with whether each is a directory); entries
    /// that vanish before their type is read are skipped, a vanished `dir` is empty.
    fn entries(&self, dir: &Path) -> Result<Vec<(fs::DirEntry, bool)>> {
        let mut out = Vec::new();
        for entry in read_entries(dir)? {
            if let Some(t) = self.examine(&entry)? {
                out.push((entry, t.is_dir()));
            }
        }
        Ok(out)
    }

    /// The type of an entry read from its directory (after the hook), or `None` when it
    /// vanished since or is neither a file nor a directory.
    fn examine(&self, entry: &fs::DirEntry) -> Result<Option<fs::FileType>> {
        let path = entry.path();
        if let Some(hook) = self.hook {
            hook(&path);
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() || t.is_file() => Ok(Some(t)),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == IoKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The store key of a path under the root.
    fn key(&self, path: &Path) -> Result<String> {
        let rel = path
            .strip_prefix(self.root)
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(key_of(rel))
    }
}

/// The entries of `dir` as read (no type asked, nothing stat'ed); a vanished `dir` is
/// empty, an entry that vanished while being read is skipped.
fn read_entries(dir: &Path) -> Result<Vec<fs::DirEntry>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == IoKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        match entry {
            Ok(e) => out.push(e),
            Err(e) if e.kind() == IoKind::NotFound => continue,
            Err(e) => return Err(Error::io(dir, e)),
        }
    }
    Ok(out)
}

/// A file's listing entry; `None` when it vanished since its directory was read.
fn object(entry: &fs::DirEntry, key: String) -> Result<Option<ObjectInfo>> {
    let meta = match entry.metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == IoKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(entry.path(), e)),
    };
    Ok(Some(ObjectInfo {
        key,
        size: meta.len(),
        modified: meta.modified().ok().map(DateTime::<Utc>::from),
    }))
}

/// The store key of a relative path. Every key lineage-store writes is UTF-8; a name that
/// is not (a file someone else put there) is listed with each invalid byte written as
/// `%XX`, so that `verify` can name it. Such a key contains `%`, which no `run_id`,
/// CRS or file name of ours does, so it is always classified as foreign and is never
/// mistaken for one of ours (it cannot be opened through the store, and need not be).
fn key_of(rel: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut key = String::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            key.push('/');
        }
        for chunk in c.as_os_str().as_bytes().utf8_chunks() {
            key.push_str(chunk.valid());
            for b in chunk.invalid() {
                key.push_str(&format!("%{b:02X}"));
            }
        }
    }
    key
}

/// What one [`AtomicPublisher::list_after`] page asks for.
struct Page<'a> {
    prefix: &'a str,
    after: &'a str,
    limit: usize,
}

impl Walker<'_> {
    /// A directory walk in key order that skips every subtree sorting wholly before
    /// `page.after` or outside `page.prefix`, and stops once `limit` keys are found: the
    /// local emulation of a `start-after` listing. Each directory is read once; an entry is
    /// judged by its name first, and one that can be neither a key of the page nor a
    /// directory holding one is dropped there, before its type is asked for or its
    /// metadata read (so a page after a bound costs the names of the directories on the way
    /// and one `statx` per key returned, however many entries sort before the bound). The
    /// rest are sorted by the key they stand for (`name/` for a directory, so that `a/x`
    /// sorts after `a-b`, as keys do). Entries that vanish mid-walk are skipped, as in
    /// [`Walker::walk`].
    fn walk_sorted(&self, dir: &Path, page: &Page<'_>, out: &mut Vec<ObjectInfo>) -> Result<()> {
        let mut named = Vec::new();
        for entry in read_entries(dir)? {
            let key = self.key(&entry.path())?;
            let as_dir = format!("{key}/");
            let file_wanted = key.as_str() > page.after && key.starts_with(page.prefix);
            if !file_wanted && !page.may_hold(&as_dir) {
                continue;
            }
            match self.examine(&entry)? {
                Some(t) if t.is_dir() && page.may_hold(&as_dir) => named.push((as_dir, entry)),
                Some(t) if t.is_file() && file_wanted => named.push((key, entry)),
                _ => {}
            }
        }
        named.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, entry) in named {
            if out.len() >= page.limit {
                break;
            }
            if key.ends_with('/') {
                self.walk_sorted(&entry.path(), page, out)?;
            } else {
                out.extend(object(&entry, key)?);
            }
        }
        Ok(())
    }
}

impl Page<'_> {
    /// Whether the subtree of the directory key `dir` (ending in `/`) can hold a key of
    /// the page: every key inside starts with `dir`, so it cannot when `dir` is outside
    /// the prefix, or when all of it sorts before `after`.
    fn may_hold(&self, dir: &str) -> bool {
        let in_prefix = dir.starts_with(self.prefix) || self.prefix.starts_with(dir);
        let all_before = self.after > dir && !self.after.starts_with(dir);
        in_prefix && !all_before
    }
}

/// Removes the temp file on drop unless disarmed: every error path cleans up.
struct TempGuard<'a> {
    path: &'a Path,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = fs::remove_file(self.path) {
                if e.kind() != IoKind::NotFound {
                    tracing::warn!(path = %self.path.display(), error = %e, "could not remove temp file");
                }
            }
        }
    }
}

/// The temp name for a target: hidden, same directory, unique per attempt, carrying its
/// creation time ([`crate::format::keys::temp_name`]).
pub fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(crate::format::keys::temp_name(&name))
}

fn publish_file(
    target: &Path,
    bytes: &[u8],
    inject: Option<&InjectedWriteError>,
) -> Result<Outcome> {
    let dir = target
        .parent()
        .ok_or_else(|| Error::Internal(format!("{} has no parent", target.display())))?;
    create_dirs_durably(dir)?;
    if bytes.is_empty() {
        // An empty object (the history's markers) has no content that could be seen half
        // written: an exclusive create is already all-or-nothing, no temp is needed.
        return match OpenOptions::new().write(true).create_new(true).open(target) {
            Ok(_) => {
                fsync_dir(dir)?;
                Ok(Outcome::Created)
            }
            Err(e) if e.kind() == IoKind::AlreadyExists => Ok(Outcome::AlreadyExists),
            Err(e) => Err(Error::io(target, e)),
        };
    }
    // Cheap early answer; the no-replace publish below is what actually decides.
    if fs::symlink_metadata(target).is_ok() {
        return Ok(Outcome::AlreadyExists);
    }
    let tmp = temp_path(target);
    let mut guard = TempGuard {
        path: &tmp,
        armed: true,
    };
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, e))?;
    if let Some(i) = inject {
        f.write_all(&bytes[..i.after_bytes.min(bytes.len())])
            .map_err(|e| Error::io(&tmp, e))?;
        return Err(Error::io(&tmp, std::io::Error::from_raw_os_error(i.errno)));
    }
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    let outcome = match rustix::fs::renameat_with(CWD, &tmp, CWD, target, RenameFlags::NOREPLACE) {
        Ok(()) => {
            guard.armed = false;
            Outcome::Created
        }
        Err(Errno::EXIST) => Outcome::AlreadyExists,
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::OPNOTSUPP) => {
            // Filesystem without RENAME_NOREPLACE: a hard link also refuses to replace.
            match fs::hard_link(&tmp, target) {
                Ok(()) => Outcome::Created,
                Err(e) if e.kind() == IoKind::AlreadyExists => Outcome::AlreadyExists,
                Err(e) => return Err(Error::io(target, e)),
            }
        }
        Err(e) => return Err(Error::io(target, e.into())),
    };
    drop(guard);
    if outcome == Outcome::Created {
        fsync_dir(dir)?;
    }
    Ok(outcome)
}

fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// `create_dir_all`, then fsync the parent of every directory it created.
fn create_dirs_durably(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.is_dir() {
            break;
        }
        missing.push(d);
        cur = d.parent();
    }
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for d in missing.iter().rev() {
        match d.parent() {
            // A relative root's parent is the empty path: the current directory.
            Some(parent) if parent.as_os_str().is_empty() => fsync_dir(Path::new("."))?,
            Some(parent) => fsync_dir(parent)?,
            None => {}
        }
    }
    Ok(())
}

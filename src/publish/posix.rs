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

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{ErrorKind as IoKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use crate::base::error::{Error, Result};
use crate::publish::beneath;
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
    delete_hook: Option<ListHook>,
    inject: Option<InjectedWriteError>,
    /// Entries whose metadata a listing read (`statx`), for [`Self::metadata_reads`].
    stats: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for PosixPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixPublisher")
            .field("root", &self.root)
            .field("list_hook", &self.list_hook.is_some())
            .field("delete_hook", &self.delete_hook.is_some())
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
            delete_hook: None,
            inject: None,
            stats: Arc::default(),
        }
    }

    /// How many entries' metadata the listings of this publisher (and its clones) have
    /// read so far: one per object a listing returns, and one per entry whose type the
    /// directory did not give. What a listing costs the file system, for tests and benches.
    pub fn metadata_reads(&self) -> u64 {
        self.stats.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Inject a [`ListHook`] (fault injection for tests; never needed otherwise).
    pub fn with_list_hook(mut self, hook: ListHook) -> Self {
        self.list_hook = Some(hook);
        self
    }

    /// Call `hook` with a temp's path at the start of every
    /// [`delete_temp`](AtomicPublisher::delete_temp): the window between `sweep`'s listing
    /// and its unlink, in which a directory can be swapped for a symlink (fault injection
    /// for tests; never needed otherwise).
    pub fn with_delete_hook(mut self, hook: ListHook) -> Self {
        self.delete_hook = Some(hook);
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
        .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
}

/// The object `key` under `root` opened for reading at byte `start`, never through a
/// symlink ([`beneath`]); a missing one is [`Error::NotFound`].
fn open_at(root: &Path, key: &str, start: u64) -> Result<File> {
    let path = root.join(key);
    let mut f = beneath::open_file(root, key)?
        .ok_or_else(|| Error::NotFound(path.display().to_string()))?;
    f.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(&path, e))?;
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
        self.path_of(key)?;
        let (root, key) = (self.root.clone(), key.to_string());
        let inject = self
            .inject
            .clone()
            .filter(|i| key.contains(i.key_contains.as_str()));
        blocking(move || publish_file(&root, &key, &bytes, inject.as_ref())).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let path = self.path_of(key)?;
        let (root, key) = (self.root.clone(), key.to_string());
        blocking(move || {
            let Some(mut f) = beneath::open_file(&root, &key)? else {
                return Ok(None);
            };
            let mut b = Vec::new();
            f.read_to_end(&mut b).map_err(|e| Error::io(&path, e))?;
            Ok(Some(Bytes::from(b)))
        })
        .await
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        let path = self.path_of(key)?;
        let (root, key) = (self.root.clone(), key.to_string());
        blocking(move || {
            let Some(f) = beneath::open_file(&root, &key)? else {
                return Ok(None);
            };
            let size = f.metadata().map_err(|e| Error::io(&path, e))?.len();
            crate::publish::too_large(&key, size, max)?;
            // At most one byte more than allowed, should the file grow meanwhile.
            let mut b = Vec::new();
            f.take(max.saturating_add(1))
                .read_to_end(&mut b)
                .map_err(|e| Error::io(&path, e))?;
            crate::publish::too_large(&key, b.len() as u64, max)?;
            Ok(Some(Bytes::from(b)))
        })
        .await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path_of(key)?;
        let (root, key) = (self.root.clone(), key.to_string());
        blocking(move || {
            let f = open_at(&root, &key, range.start)?;
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
        let (root, key) = (self.root.clone(), key.to_string());
        blocking(move || {
            let mut f = open_at(&root, &key, range.start)?;
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
        let stats = self.stats.clone();
        blocking(move || {
            // Start at the deepest directory the prefix names, so listing one run's
            // pointers does not walk the whole store.
            let dir_part = match prefix.rfind('/') {
                Some(i) => &prefix[..i],
                None => "",
            };
            // A listing prefix is checked like any key: it never leaves the root.
            if !dir_part.is_empty() {
                check_key(dir_part)?;
            }
            let mut out = Vec::new();
            let Some(start) = beneath::open_dir_to_read(&root, dir_part)? else {
                return Ok(out);
            };
            let walker = Walker {
                root: &root,
                prefix: &prefix,
                hook: hook.as_deref(),
                stats: &stats,
            };
            walker.walk(&start, &root.join(dir_part), &mut out)?;
            Ok(out)
        })
        .await
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        let root = self.root.clone();
        let prefix = prefix.to_string();
        let after = after.to_string();
        let hook = self.list_hook.clone();
        let stats = self.stats.clone();
        blocking(move || {
            let dir_part = match prefix.rfind('/') {
                Some(i) => &prefix[..i],
                None => "",
            };
            // A listing prefix is checked like any key: it never leaves the root.
            if !dir_part.is_empty() {
                check_key(dir_part)?;
            }
            let mut out = Vec::new();
            let Some(start) = beneath::open_dir_to_read(&root, dir_part)? else {
                return Ok(out);
            };
            let page = Page {
                prefix: &prefix,
                after: &after,
                limit,
            };
            let walker = Walker {
                root: &root,
                prefix: &prefix,
                hook: hook.as_deref(),
                stats: &stats,
            };
            walker.walk_sorted(&start, &root.join(dir_part), &page, &mut out)?;
            Ok(out)
        })
        .await
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        check_temp_key(key)?;
        let path = self.path_of(key)?;
        if let Some(hook) = &self.delete_hook {
            hook(&path);
        }
        let (root, key) = (self.root.clone(), key.to_string());
        // The unlink is relative to the handle of the temp's directory, each directory on
        // the way opened without following a symlink: a directory swapped for a symlink
        // since the listing is refused, never deleted through.
        blocking(move || {
            let (dir, name) = beneath::split(&key);
            let Some(dfd) = beneath::open_dir(&root, dir, false)? else {
                return Ok(());
            };
            match rustix::fs::unlinkat(&dfd, name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                Err(e) => Err(Error::io(path, e.into())),
            }
        })
        .await
    }
}

/// A recursive listing, each directory opened relative to its parent's handle without
/// following a symlink ([`beneath`]). A symlink (to a file or a directory) is listed as an
/// object of its own, with [`ObjectInfo::link`] naming its target, and never descended
/// into. A directory walk is not a snapshot: a concurrent publish renames its temp away,
/// and `sweep` removes temps, between reading a directory and the `stat` of an entry. An
/// entry (file or directory) that vanished in that window is skipped, as if the walk had
/// run a moment later; a directory swapped for a symlink in that window is listed as the
/// symlink; every other error is reported.
struct Walker<'a> {
    root: &'a Path,
    prefix: &'a str,
    hook: Option<&'a (dyn Fn(&Path) + Send + Sync)>,
    stats: &'a std::sync::atomic::AtomicU64,
}

/// One entry read from a directory: its name, the handle of the directory it is in, and
/// its type as the directory says it (`d_type`; `None` where the file system does not say).
struct Entry {
    dir: Arc<OwnedFd>,
    name: OsString,
    path: PathBuf,
    told: Option<Option<Type>>,
}

/// What a listing entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Dir,
    File,
    Link,
}

impl Walker<'_> {
    fn walk(&self, dir: &OwnedFd, path: &Path, out: &mut Vec<ObjectInfo>) -> Result<()> {
        for (entry, t) in self.entries(dir, path)? {
            if t == Type::Dir {
                match open_sub(&entry)? {
                    Sub::Dir(fd) => self.walk(&fd, &entry.path, out)?,
                    Sub::Gone => {}
                    Sub::Link => self.push_object(&entry, out)?,
                }
                continue;
            }
            self.push_object(&entry, out)?;
        }
        Ok(())
    }

    fn push_object(&self, entry: &Entry, out: &mut Vec<ObjectInfo>) -> Result<()> {
        let key = self.key(&entry.path)?;
        if key.starts_with(self.prefix) {
            out.extend(self.object(entry, key)?);
        }
        Ok(())
    }

    /// The files, directories and symlinks of `dir` (with the type of each); entries
    /// that vanish before their type is read are skipped.
    fn entries(&self, dir: &OwnedFd, path: &Path) -> Result<Vec<(Entry, Type)>> {
        let mut out = Vec::new();
        for entry in read_entries(dir, path)? {
            if let Some(t) = self.examine(&entry)? {
                out.push((entry, t));
            }
        }
        Ok(out)
    }

    /// The type of an entry read from its directory (after the hook), or `None` when it
    /// vanished since or is neither a file, a directory nor a symlink (a FIFO, a socket).
    /// The type the directory gave (`d_type`) is taken as it is: ext4, xfs, btrfs and tmpfs
    /// give it, so a listing stats only what it returns, not every entry it skips or sorts
    /// (a directory of 10^3 seals or Delta versions listed for one key). Only a file system
    /// that does not say costs a `statx` here. Nothing is trusted further than that: a
    /// directory is opened with `O_NOFOLLOW` (a symlink put in its place is listed as a
    /// symlink), and a listed object is stat'ed without following ([`Self::object`]).
    fn examine(&self, entry: &Entry) -> Result<Option<Type>> {
        if let Some(hook) = self.hook {
            hook(&entry.path);
        }
        if let Some(told) = entry.told {
            return Ok(told);
        }
        self.stats
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match rustix::fs::statat(&*entry.dir, &entry.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(type_of(&st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Error::io(&entry.path, e.into())),
        }
    }

    /// An entry's listing entry (a symlink's with its target); `None` when it vanished since
    /// its directory was read.
    fn object(&self, entry: &Entry, key: String) -> Result<Option<ObjectInfo>> {
        self.stats
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let st = match rustix::fs::statat(&*entry.dir, &entry.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(Error::io(&entry.path, e.into())),
        };
        let link = match type_of(&st) {
            Some(Type::Link) => Some(
                beneath::link_target(&*entry.dir, &entry.name).unwrap_or_else(|| "?".to_string()),
            ),
            Some(Type::Dir) => Some("(a directory swapped for a symlink while listing)".into()),
            _ => None,
        };
        let modified = u64::try_from(st.st_mtime).ok().map(|secs| {
            std::time::UNIX_EPOCH
                + std::time::Duration::new(secs, u32::try_from(st.st_mtime_nsec).unwrap_or(0))
        });
        Ok(Some(ObjectInfo {
            key,
            size: u64::try_from(st.st_size).unwrap_or(0),
            modified: modified.map(DateTime::<Utc>::from),
            link,
        }))
    }

    /// The store key of a path under the root.
    fn key(&self, path: &Path) -> Result<String> {
        let rel = path
            .strip_prefix(self.root)
            .map_err(|e| Error::internal_from(e))?;
        Ok(key_of(rel))
    }
}

fn type_of(st: &rustix::fs::Stat) -> Option<Type> {
    let t = rustix::fs::FileType::from_raw_mode(st.st_mode);
    if t.is_dir() {
        Some(Type::Dir)
    } else if t.is_file() {
        Some(Type::File)
    } else if t.is_symlink() {
        Some(Type::Link)
    } else {
        None
    }
}

/// A subdirectory opened for the walk.
enum Sub {
    Dir(OwnedFd),
    /// It vanished since it was read.
    Gone,
    /// It was swapped for a symlink since it was read: listed as one, not descended.
    Link,
}

fn open_sub(entry: &Entry) -> Result<Sub> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(&*entry.dir, &entry.name, flags, Mode::empty()) {
        Ok(fd) => Ok(Sub::Dir(fd)),
        Err(Errno::NOENT) => Ok(Sub::Gone),
        Err(Errno::LOOP | Errno::NOTDIR) => Ok(Sub::Link),
        Err(e) => Err(Error::io(&entry.path, e.into())),
    }
}

/// The entries of `dir` (at `path`) as read, with the type the directory gives (nothing
/// stat'ed); an entry that vanished while being read is skipped.
fn read_entries(dir: &OwnedFd, path: &Path) -> Result<Vec<Entry>> {
    let shared = Arc::new(rustix::io::dup(dir).map_err(|e| Error::io(path, e.into()))?);
    let entries = rustix::fs::Dir::read_from(dir).map_err(|e| Error::io(path, e.into()))?;
    let mut out = Vec::new();
    for entry in entries {
        match entry {
            Ok(e) => {
                let bytes = e.file_name().to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                let name = OsStr::from_bytes(bytes).to_os_string();
                let told = match e.file_type() {
                    rustix::fs::FileType::Directory => Some(Some(Type::Dir)),
                    rustix::fs::FileType::RegularFile => Some(Some(Type::File)),
                    rustix::fs::FileType::Symlink => Some(Some(Type::Link)),
                    rustix::fs::FileType::Unknown => None,
                    _ => Some(None), // a FIFO, a socket, a device: never listed
                };
                out.push(Entry {
                    dir: shared.clone(),
                    path: path.join(&name),
                    name,
                    told,
                });
            }
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(Error::io(path, e.into())),
        }
    }
    Ok(out)
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
    fn walk_sorted(
        &self,
        dir: &OwnedFd,
        path: &Path,
        page: &Page<'_>,
        out: &mut Vec<ObjectInfo>,
    ) -> Result<()> {
        let mut named = Vec::new();
        for entry in read_entries(dir, path)? {
            let key = self.key(&entry.path)?;
            let as_dir = format!("{key}/");
            let file_wanted = key.as_str() > page.after && key.starts_with(page.prefix);
            if !file_wanted && !page.may_hold(&as_dir) {
                continue;
            }
            match self.examine(&entry)? {
                Some(Type::Dir) if page.may_hold(&as_dir) => named.push((as_dir, entry)),
                // A symlink is listed under its own name, like a file.
                Some(Type::File | Type::Link) if file_wanted => named.push((key, entry)),
                _ => {}
            }
        }
        named.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, entry) in named {
            if out.len() >= page.limit {
                break;
            }
            if let Some(k) = key.strip_suffix('/') {
                match open_sub(&entry)? {
                    Sub::Dir(fd) => self.walk_sorted(&fd, &entry.path, page, out)?,
                    Sub::Gone => {}
                    Sub::Link if k > page.after && k.starts_with(page.prefix) => {
                        out.extend(self.object(&entry, k.to_string())?)
                    }
                    Sub::Link => {}
                }
            } else {
                out.extend(self.object(&entry, key)?);
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
    dir: &'a OwnedFd,
    name: &'a OsStr,
    path: &'a Path,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            match rustix::fs::unlinkat(self.dir, self.name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "could not remove temp file")
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

/// Publish `bytes` as `key` under `root`: every directory created and opened relative to
/// its parent's handle without following a symlink, the temp created, renamed and (on
/// error) removed relative to the handle of its directory.
fn publish_file(
    root: &Path,
    key: &str,
    bytes: &[u8],
    inject: Option<&InjectedWriteError>,
) -> Result<Outcome> {
    let target = root.join(key);
    let (dir_key, name) = beneath::split(key);
    let dir = beneath::open_dir(root, dir_key, true)?
        .ok_or_else(|| Error::NotFound(root.join(dir_key).display().to_string()))?;
    let dir_path = root.join(dir_key);
    let create =
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(0o666);
    if bytes.is_empty() {
        // An empty object (the history's markers) has no content that could be seen half
        // written: an exclusive create is already all-or-nothing, no temp is needed.
        return match rustix::fs::openat(&dir, name, create, mode) {
            Ok(_) => {
                fsync_dir(&dir, &dir_path)?;
                Ok(Outcome::Created)
            }
            Err(Errno::EXIST) => Ok(Outcome::AlreadyExists),
            Err(e) => Err(Error::io(&target, e.into())),
        };
    }
    // Cheap early answer; the no-replace publish below is what actually decides.
    if rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return Ok(Outcome::AlreadyExists);
    }
    let tmp = temp_path(&target);
    let tmp_name = tmp.file_name().unwrap_or_default().to_os_string();
    let fd =
        rustix::fs::openat(&dir, &tmp_name, create, mode).map_err(|e| Error::io(&tmp, e.into()))?;
    let mut guard = TempGuard {
        dir: &dir,
        name: &tmp_name,
        path: &tmp,
        armed: true,
    };
    let mut f = File::from(fd);
    if let Some(i) = inject {
        f.write_all(&bytes[..i.after_bytes.min(bytes.len())])
            .map_err(|e| Error::io(&tmp, e))?;
        return Err(Error::io(&tmp, std::io::Error::from_raw_os_error(i.errno)));
    }
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    let outcome =
        match rustix::fs::renameat_with(&dir, &tmp_name, &dir, name, RenameFlags::NOREPLACE) {
            Ok(()) => {
                guard.armed = false;
                Outcome::Created
            }
            Err(Errno::EXIST) => Outcome::AlreadyExists,
            Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::OPNOTSUPP) => {
                // Filesystem without RENAME_NOREPLACE: a hard link also refuses to replace.
                match rustix::fs::linkat(&dir, &tmp_name, &dir, name, AtFlags::empty()) {
                    Ok(()) => Outcome::Created,
                    Err(Errno::EXIST) => Outcome::AlreadyExists,
                    Err(e) => return Err(Error::io(&target, e.into())),
                }
            }
            Err(e) => return Err(Error::io(&target, e.into())),
        };
    drop(guard);
    if outcome == Outcome::Created {
        fsync_dir(&dir, &dir_path)?;
    }
    Ok(outcome)
}

fn fsync_dir(dir: &OwnedFd, path: &Path) -> Result<()> {
    rustix::fs::fsync(dir).map_err(|e| Error::io(path, e.into()))
}

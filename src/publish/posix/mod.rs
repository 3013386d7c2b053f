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

use std::fs::File;
use std::io::{ErrorKind as IoKind, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use rustix::fs::AtFlags;
use rustix::io::Errno;

use crate::base::error::{Error, Result};
use crate::publish::beneath;
use crate::publish::{check_key, check_temp_key, AtomicPublisher, ObjectInfo, Outcome};

mod create;
mod stamp;
mod walk;

use self::create::publish_file;
pub use self::create::{temp_path, InjectedWriteError};
use self::walk::{Page, Unchanged, Walker};

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

    /// A recursive listing ([`Walker::walk`]); `names_only`: no regular file's metadata
    /// read (sizes 0, no times).
    async fn walk(&self, prefix: &str, names_only: bool) -> Result<Vec<ObjectInfo>> {
        // A key after every key: no regular file is stat'ed.
        let sized_from = names_only.then(|| "\u{10FFFF}".to_string());
        self.listing(prefix, sized_from, None, |w, start, dir, out| {
            w.walk(start, dir, out)
        })
        .await
    }

    /// [`Self::walk`] of names that leaves unread the directories unchanged since
    /// `since_ns` ([`Unchanged`]).
    async fn walk_changed(
        &self,
        prefix: &str,
        since_ns: i128,
    ) -> Result<crate::publish::ChangedListing> {
        let unchanged = Arc::new(Unchanged {
            before_ns: since_ns,
            skipped: std::sync::Mutex::default(),
        });
        let objects = self
            .listing(
                prefix,
                Some("\u{10FFFF}".to_string()),
                Some(unchanged.clone()),
                |w, start, dir, out| w.walk(start, dir, out),
            )
            .await?;
        let unchanged_dirs = std::mem::take(
            &mut *unchanged
                .skipped
                .lock()
                .map_err(|_| Error::internal("a listing thread panicked"))?,
        );
        Ok(crate::publish::ChangedListing {
            objects,
            unchanged_dirs,
        })
    }

    /// One page of a `start-after` listing ([`Walker::walk_sorted`]); `sized_from`: only
    /// keys at or after it have their metadata read.
    async fn page(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: Option<&str>,
    ) -> Result<Vec<ObjectInfo>> {
        self.page_skipping(prefix, after, limit, sized_from, Default::default())
            .await
    }

    /// [`Self::page`] that does not read the directories in `skip`.
    async fn page_skipping(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: Option<&str>,
        skip: std::collections::BTreeSet<String>,
    ) -> Result<Vec<ObjectInfo>> {
        let after = after.to_string();
        let p = prefix.to_string();
        self.listing(
            prefix,
            sized_from.map(str::to_string),
            None,
            move |w, start, dir, out| {
                let page = Page {
                    prefix: &p,
                    after: &after,
                    limit,
                    skip: &skip,
                };
                w.walk_sorted(start, dir, &page, out)
            },
        )
        .await
    }

    /// Run `walk` on a blocking thread with this publisher's [`Walker`] for `prefix`, from
    /// the directory the prefix starts in (nothing when it does not exist).
    async fn listing<F>(
        &self,
        prefix: &str,
        sized_from: Option<String>,
        unchanged: Option<Arc<Unchanged>>,
        walk: F,
    ) -> Result<Vec<ObjectInfo>>
    where
        F: FnOnce(&Walker<'_>, std::os::fd::OwnedFd, &Path, &mut Vec<ObjectInfo>) -> Result<()>
            + Send
            + 'static,
    {
        let root = self.root.clone();
        let prefix = prefix.to_string();
        let hook = self.list_hook.clone();
        let stats = self.stats.clone();
        blocking(move || {
            let mut out = Vec::new();
            let Some((start, dir_part)) = listing_start(&root, &prefix)? else {
                return Ok(out);
            };
            let walker = Walker {
                root: &root,
                prefix: &prefix,
                hook: hook.as_deref(),
                stats: &stats,
                sized_from: sized_from.as_deref(),
                unchanged: unchanged.as_deref(),
            };
            walk(&walker, start, &root.join(dir_part), &mut out)?;
            Ok(out)
        })
        .await
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
/// Where a listing of `prefix` starts: the deepest directory the prefix names (so listing
/// one run's pointers does not walk the whole store), opened beneath the root, and its
/// path under the root; `None` when it does not exist. A listing prefix is checked like
/// any key: it never leaves the root.
fn listing_start<'p>(
    root: &Path,
    prefix: &'p str,
) -> Result<Option<(std::os::fd::OwnedFd, &'p str)>> {
    let dir_part = prefix.rfind('/').map_or("", |i| &prefix[..i]);
    if !dir_part.is_empty() {
        check_key(dir_part)?;
    }
    Ok(beneath::open_dir_to_read(root, dir_part)?.map(|fd| (fd, dir_part)))
}

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
        self.walk(prefix, false).await
    }

    /// A regular file's metadata is not read: one `getdents64` per directory buffer.
    async fn list_names(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.walk(prefix, true).await
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        self.page(prefix, after, limit, None).await
    }

    /// Keys before `sized_from` from the directories' names and types alone: their files'
    /// metadata is not read.
    async fn list_after_sized_from(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
    ) -> Result<Vec<ObjectInfo>> {
        self.page(prefix, after, limit, Some(sized_from)).await
    }

    /// The directories in `skip` are not read (nor anything below them).
    async fn list_after_sized_skipping(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
        skip: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<ObjectInfo>> {
        self.page_skipping(prefix, after, limit, Some(sized_from), skip.clone())
            .await
    }

    /// Stamps from `statx` of each directory through its parent's handle ([`stamp`]).
    async fn dir_stamps(
        &self,
        dirs: &[String],
    ) -> Result<Option<Vec<Option<crate::publish::dirs::DirStamp>>>> {
        for d in dirs {
            self.path_of(d.trim_end_matches('/'))?;
        }
        let (root, dirs) = (self.root.clone(), dirs.to_vec());
        blocking(move || stamp::dir_stamps(&root, &dirs).map(Some)).await
    }

    /// A walk that leaves unread a directory unchanged since `since_ns`, under one
    /// unchanged since then, with no subdirectory ([`Unchanged`]).
    async fn list_names_changed(
        &self,
        prefix: &str,
        since_ns: i128,
    ) -> Result<Option<crate::publish::ChangedListing>> {
        self.walk_changed(prefix, since_ns).await.map(Some)
    }

    /// The change time of an `O_TMPFILE` made in `dir` ([`stamp::clock`]).
    async fn stamp_clock(&self, dir: &str) -> Result<Option<i128>> {
        self.path_of(dir.trim_end_matches('/'))?;
        let (root, dir) = (self.root.clone(), dir.to_string());
        blocking(move || stamp::clock(&root, &dir)).await
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

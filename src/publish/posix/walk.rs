//! Listing a local store: a recursive walk that never follows a symlink, and a walk in
//! key order for one page of a `start-after` listing.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::base::error::{Error, Result};
use crate::publish::beneath;
use crate::publish::ObjectInfo;

/// A recursive listing, each directory opened relative to its parent's handle without
/// following a symlink ([`beneath`]). A symlink (to a file or a directory) is listed as an
/// object of its own, with [`ObjectInfo::link`] naming its target, and never descended
/// into. A directory walk is not a snapshot: a concurrent publish renames its temp away,
/// and `sweep` removes temps, between reading a directory and the `stat` of an entry. An
/// entry (file or directory) that vanished in that window is skipped, as if the walk had
/// run a moment later; a directory swapped for a symlink in that window is listed as the
/// symlink; every other error is reported.
pub(super) struct Walker<'a> {
    pub(super) root: &'a Path,
    pub(super) prefix: &'a str,
    pub(super) hook: Option<&'a (dyn Fn(&Path) + Send + Sync)>,
    pub(super) stats: &'a std::sync::atomic::AtomicU64,
    /// Which keys' metadata is read: `None`, every listed object's; `Some(k)`, only of
    /// keys at or after `k` ([`crate::publish::AtomicPublisher::list_after_sized_from`];
    /// `list_names` passes a key after every key): a file the directory says is a regular
    /// file before it is listed with size 0 and no time (a symlink is still stat'ed, for
    /// its target).
    pub(super) sized_from: Option<&'a str>,
    /// Directories to leave unread ([`crate::publish::AtomicPublisher::list_names_changed`]).
    pub(super) unchanged: Option<&'a Unchanged>,
}

/// What a walk of the directories changed since a time leaves unread: a directory whose
/// change time is before `before_ns`, whose parent's is too, and that has no subdirectory
/// (link count 2: ext4, xfs and tmpfs count a directory's subdirectories in it; a file
/// system that does not, btrfs, has every directory read). The keys of those left unread
/// are gathered in `skipped`.
#[derive(Debug)]
pub(super) struct Unchanged {
    pub(super) before_ns: i128,
    pub(super) skipped: std::sync::Mutex<Vec<String>>,
}

/// One entry read from a directory: its name, the handle of the directory it is in, and
/// its type as the directory says it (`d_type`; `None` where the file system does not say).
struct Entry {
    dir: Arc<OwnedFd>,
    name: OsString,
    path: PathBuf,
    /// Its store key: the directory's key and its name ([`key_of`]'s spelling).
    key: String,
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
    pub(super) fn walk(&self, dir: OwnedFd, path: &Path, out: &mut Vec<ObjectInfo>) -> Result<()> {
        let dir_key = self.key(path)?;
        let old = self
            .unchanged_since(&dir, path)?
            .is_some_and(|(old, _)| old);
        self.walk_in(dir, path, &dir_key, old, out)
    }

    /// [`Self::walk`] of the directory whose key is `dir_key`; `old`: its change time is
    /// before [`Unchanged::before_ns`] (a subdirectory may then be left unread).
    fn walk_in(
        &self,
        dir: OwnedFd,
        path: &Path,
        dir_key: &str,
        old: bool,
        out: &mut Vec<ObjectInfo>,
    ) -> Result<()> {
        for (entry, t) in self.entries(dir, path, dir_key)? {
            if t == Type::Dir {
                // A directory no key under the prefix can be in is not descended into (a
                // listing of `run_id=` from the root skips `_lineage/` whole).
                if !within_prefix(&format!("{}/", entry.key), self.prefix) {
                    continue;
                }
                match open_sub(&entry)? {
                    Sub::Dir(fd) => {
                        let since = self.unchanged_since(&fd, &entry.path)?;
                        let sub_old = since.is_some_and(|(o, _)| o);
                        if old && since == Some((true, true)) {
                            self.leave_unread(&entry.key)?;
                            continue;
                        }
                        self.walk_in(fd, &entry.path, &entry.key, sub_old, out)?
                    }
                    Sub::Gone => {}
                    Sub::Link => self.push_object(&entry, Type::Link, out)?,
                }
                continue;
            }
            self.push_object(&entry, t, out)?;
        }
        Ok(())
    }

    /// With [`Self::unchanged`]: whether directory `dir` changed before
    /// [`Unchanged::before_ns`], and whether it has no subdirectory; `None` without.
    fn unchanged_since(&self, dir: &OwnedFd, path: &Path) -> Result<Option<(bool, bool)>> {
        let Some(u) = self.unchanged else {
            return Ok(None);
        };
        self.stats
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let st = rustix::fs::fstat(dir).map_err(|e| Error::io(path, e.into()))?;
        let changed = super::stamp::changed_ns(&st);
        Ok(Some((changed < u.before_ns, st.st_nlink == 2)))
    }

    /// Note directory `key` as left unread.
    fn leave_unread(&self, key: &str) -> Result<()> {
        if let Some(u) = self.unchanged {
            u.skipped
                .lock()
                .map_err(|_| Error::internal("a listing thread panicked"))?
                .push(format!("{key}/"));
        }
        Ok(())
    }

    fn push_object(&self, entry: &Entry, t: Type, out: &mut Vec<ObjectInfo>) -> Result<()> {
        if entry.key.starts_with(self.prefix) {
            out.extend(self.listed(entry, entry.key.clone(), t)?);
        }
        Ok(())
    }

    /// A listed object: its listing entry ([`Self::object`]), or, names only, a regular
    /// file's key alone.
    fn listed(&self, entry: &Entry, key: String, t: Type) -> Result<Option<ObjectInfo>> {
        if t == Type::File && self.sized_from.is_some_and(|k| key.as_str() < k) {
            return Ok(Some(ObjectInfo {
                key,
                size: 0,
                modified: None,
                link: None,
            }));
        }
        self.object(entry, key)
    }

    /// The files, directories and symlinks of `dir` (with the type of each); entries
    /// that vanish before their type is read are skipped.
    fn entries(&self, dir: OwnedFd, path: &Path, dir_key: &str) -> Result<Vec<(Entry, Type)>> {
        let mut out = Vec::new();
        for entry in read_entries(dir, path, dir_key)? {
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
        let rel = path.strip_prefix(self.root).map_err(Error::internal_from)?;
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

/// Bytes of directory entries one `getdents64` call may return: 64 KiB holds about 500
/// index entries (a second of a busy writer), so a directory costs one call that returns
/// its entries and one that says there are no more.
const DIRENT_BUFFER: usize = 64 * 1024;

/// The entries of `dir` (at `path`) as read, with the type the directory gives (nothing
/// stat'ed); an entry that vanished while being read is skipped. `dir` is a handle just
/// opened (read from its start, once) and is kept by the entries, for their `statx`.
fn read_entries(dir: OwnedFd, path: &Path, dir_key: &str) -> Result<Vec<Entry>> {
    let shared = Arc::new(dir);
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); DIRENT_BUFFER];
    let mut entries = rustix::fs::RawDir::new(&*shared, &mut buf);
    let mut out = Vec::new();
    while let Some(entry) = entries.next() {
        match entry {
            Ok(e) => {
                let bytes = e.file_name().to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                let name = OsStr::from_bytes(bytes).to_os_string();
                let told = told_type(e.file_type());
                let mut key = String::with_capacity(dir_key.len() + 1 + bytes.len());
                if !dir_key.is_empty() {
                    key.push_str(dir_key);
                    key.push('/');
                }
                push_name(&mut key, bytes);
                out.push(Entry {
                    dir: shared.clone(),
                    path: path.join(&name),
                    name,
                    key,
                    told,
                });
            }
            Err(Errno::NOENT) => break,
            Err(e) => return Err(Error::io(path, e.into())),
        }
    }
    Ok(out)
}

/// The type a directory entry says it is: `None` when the file system does not say
/// (`DT_UNKNOWN`: ask `statx`), `Some(None)` for what is never listed (a FIFO, a
/// socket, a device).
fn told_type(t: rustix::fs::FileType) -> Option<Option<Type>> {
    match t {
        rustix::fs::FileType::Directory => Some(Some(Type::Dir)),
        rustix::fs::FileType::RegularFile => Some(Some(Type::File)),
        rustix::fs::FileType::Symlink => Some(Some(Type::Link)),
        rustix::fs::FileType::Unknown => None,
        _ => Some(None),
    }
}

/// The store key of a relative path. Every key lineage-store writes is UTF-8; a name that
/// is not (a file someone else put there) is listed with each invalid byte written as
/// `%XX`, so that `verify` can name it. Such a key contains `%`, which no `run_id`,
/// CRS or file name of ours does, so it is always classified as foreign and is never
/// mistaken for one of ours (it cannot be opened through the store, and need not be).
fn key_of(rel: &Path) -> String {
    let mut key = String::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            key.push('/');
        }
        push_name(&mut key, c.as_os_str().as_bytes());
    }
    key
}

/// A file name as it is spelt in a key ([`key_of`]): its UTF-8 as it is, each invalid
/// byte as `%XX`.
fn push_name(key: &mut String, name: &[u8]) {
    for chunk in name.utf8_chunks() {
        key.push_str(chunk.valid());
        for b in chunk.invalid() {
            key.push_str(&format!("%{b:02X}"));
        }
    }
}

/// What one [`crate::publish::AtomicPublisher::list_after`] page asks for.
pub(super) struct Page<'a> {
    pub(super) prefix: &'a str,
    pub(super) after: &'a str,
    pub(super) limit: usize,
    /// Directories (keys ending in `/`) not read: nothing in them is listed.
    pub(super) skip: &'a std::collections::BTreeSet<String>,
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
    pub(super) fn walk_sorted(
        &self,
        dir: OwnedFd,
        path: &Path,
        page: &Page<'_>,
        out: &mut Vec<ObjectInfo>,
    ) -> Result<()> {
        let dir_key = self.key(path)?;
        self.walk_sorted_in(dir, path, &dir_key, page, out)
    }

    /// [`Self::walk_sorted`] of the directory whose key is `dir_key`.
    fn walk_sorted_in(
        &self,
        dir: OwnedFd,
        path: &Path,
        dir_key: &str,
        page: &Page<'_>,
        out: &mut Vec<ObjectInfo>,
    ) -> Result<()> {
        let mut named = Vec::new();
        for entry in read_entries(dir, path, dir_key)? {
            let key = entry.key.clone();
            let as_dir = format!("{key}/");
            let file_wanted = key.as_str() > page.after && key.starts_with(page.prefix);
            if !file_wanted && !page.may_hold(&as_dir) || page.skip.contains(&as_dir) {
                continue;
            }
            match self.examine(&entry)? {
                Some(Type::Dir) if page.may_hold(&as_dir) => named.push((as_dir, entry, Type::Dir)),
                // A symlink is listed under its own name, like a file.
                Some(t @ (Type::File | Type::Link)) if file_wanted => named.push((key, entry, t)),
                _ => {}
            }
        }
        named.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, entry, t) in named {
            if out.len() >= page.limit {
                break;
            }
            if let Some(k) = key.strip_suffix('/') {
                match open_sub(&entry)? {
                    Sub::Dir(fd) => self.walk_sorted_in(fd, &entry.path, k, page, out)?,
                    Sub::Gone => {}
                    Sub::Link if k > page.after && k.starts_with(page.prefix) => {
                        out.extend(self.object(&entry, k.to_string())?)
                    }
                    Sub::Link => {}
                }
            } else {
                out.extend(self.listed(&entry, key, t)?);
            }
        }
        Ok(())
    }
}

/// Whether the subtree of the directory key `dir` (ending in `/`) can hold a key that
/// starts with `prefix`.
fn within_prefix(dir: &str, prefix: &str) -> bool {
    dir.starts_with(prefix) || prefix.starts_with(dir)
}

impl Page<'_> {
    /// Whether the subtree of the directory key `dir` (ending in `/`) can hold a key of
    /// the page: every key inside starts with `dir`, so it cannot when `dir` is outside
    /// the prefix, or when all of it sorts before `after`.
    fn may_hold(&self, dir: &str) -> bool {
        let in_prefix = within_prefix(dir, self.prefix);
        let all_before = self.after > dir && !self.after.starts_with(dir);
        in_prefix && !all_before
    }
}

//! Paths under a local store's root, resolved one component at a time from directory
//! handles, never following a symlink.
//!
//! The root is the directory the operator named: it is opened as the OS resolves it (a
//! symlinked root works, it is the operator's choice). Below it, every directory is opened
//! with `openat(O_DIRECTORY | O_NOFOLLOW)` relative to its parent's handle and every file
//! with `openat(O_NOFOLLOW)` relative to its directory's handle; directories are created
//! with `mkdirat`, files published with `renameat2`/`linkat` and temps removed with
//! `unlinkat`, all relative to the handle of the directory checked just before. A symlink
//! anywhere below the root (one planted before, or a directory swapped for one while a
//! command runs) is refused with [`Error::Symlink`], naming it and its target: nothing is
//! ever read, written or deleted through one.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::base::error::{Error, Result};

/// Flags of a directory handle: read-only, not inherited, never through a symlink.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The root directory's handle (`None` when it does not exist).
pub(crate) fn open_root(root: &Path) -> Result<Option<OwnedFd>> {
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    match rustix::fs::openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(Error::io(root, e.into())),
    }
}

/// The target of the symlink `name` in `dir`, when it is one.
pub(crate) fn link_target(dir: impl AsFd, name: &OsStr) -> Option<String> {
    rustix::fs::readlinkat(dir, name, Vec::new())
        .ok()
        .map(|t| String::from_utf8_lossy(t.as_bytes()).into_owned())
}

/// The error of an `openat` of `name` in `dir` (shown as `shown`): a symlink is named as
/// one, anything else is the OS error.
fn refused(dir: impl AsFd, name: &OsStr, shown: &Path, e: Errno) -> Error {
    if matches!(e, Errno::LOOP | Errno::NOTDIR | Errno::MLINK) {
        if let Some(target) = link_target(dir, name) {
            return Error::Symlink {
                path: shown.display().to_string(),
                target,
            };
        }
    }
    Error::io(shown, e.into())
}

/// The handle of the directory `rel` (components separated by `/`) under `root`, each
/// component opened without following a symlink; with `create`, missing ones are made
/// (each new one fsynced into its parent). `None` when a component is missing and not
/// created (nor the root).
pub(crate) fn open_dir(root: &Path, rel: &str, create: bool) -> Result<Option<OwnedFd>> {
    let mut fd = match open_root(root)? {
        Some(fd) => fd,
        None if create => {
            create_root(root)?;
            match open_root(root)? {
                Some(fd) => fd,
                None => return Err(Error::NotFound(root.display().to_string())),
            }
        }
        None => return Ok(None),
    };
    let mut shown = root.to_path_buf();
    for comp in rel.split('/').filter(|c| !c.is_empty()) {
        let name = OsStr::new(comp);
        shown.push(comp);
        let next = match rustix::fs::openat(&fd, name, dir_flags(), Mode::empty()) {
            Ok(next) => next,
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) => rustix::fs::fsync(&fd).map_err(|e| Error::io(&shown, e.into()))?,
                    Err(Errno::EXIST) => {}
                    // Named by the directory that was to be made, as `create_dir_all` did.
                    Err(e) => return Err(Error::io(root.join(rel), e.into())),
                }
                rustix::fs::openat(&fd, name, dir_flags(), Mode::empty())
                    .map_err(|e| refused(&fd, name, &shown, e))?
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(refused(&fd, name, &shown, e)),
        };
        fd = next;
    }
    Ok(Some(fd))
}

/// [`open_dir`] to read from or list: a directory that is a symlink holds nothing of
/// the store (the link is an object of its own, which a listing of its parent shows and
/// `verify` reports), so reads under it find nothing, as on an object store, where
/// `a` and `a/b` are unrelated keys.
pub(crate) fn open_dir_to_read(root: &Path, rel: &str) -> Result<Option<OwnedFd>> {
    match open_dir(root, rel, false) {
        Err(Error::Symlink { .. }) => Ok(None),
        other => other,
    }
}

/// `create_dir_all` of the root the operator named, then fsync the parent of every
/// directory it created.
fn create_root(dir: &Path) -> Result<()> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || d.is_dir() {
            break;
        }
        missing.push(d);
        cur = d.parent();
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for d in missing.iter().rev() {
        let parent = match d.parent() {
            Some(p) if p.as_os_str().is_empty() => Path::new("."),
            Some(p) => p,
            None => continue,
        };
        std::fs::File::open(parent)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

/// A key split into its directory and its file name.
pub(crate) fn split(key: &str) -> (&str, &OsStr) {
    match key.rfind('/') {
        Some(i) => (&key[..i], OsStr::new(&key[i + 1..])),
        None => ("", OsStr::new(key)),
    }
}

/// The file `key` under `root` opened for reading, never through a symlink; `None` when
/// it (or a directory on its way) does not exist, or a directory on its way is a symlink
/// (an object of its own, with nothing under it: see [`open_dir_to_read`]). A symlink
/// under the key itself is refused ([`Error::Symlink`]).
pub(crate) fn open_file(root: &Path, key: &str) -> Result<Option<std::fs::File>> {
    let (dir, name) = split(key);
    let Some(dfd) = open_dir_to_read(root, dir)? else {
        return Ok(None);
    };
    let shown: PathBuf = root.join(key);
    match rustix::fs::openat(
        &dfd,
        name,
        // Non-blocking: a FIFO planted under an object's name must not hang the reader
        // (regular files ignore the flag).
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let st = rustix::fs::fstat(&fd).map_err(|e| Error::io(&shown, e.into()))?;
            if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() {
                return Err(Error::io(
                    &shown,
                    std::io::Error::other(
                        "not a regular file; lineage-store reads only regular files",
                    ),
                ));
            }
            Ok(Some(std::fs::File::from(fd)))
        }
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(refused(&dfd, name, &shown, e)),
    }
}

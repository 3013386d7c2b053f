//! Directory change stamps on a local disk, and the clock they read
//! ([`crate::publish::AtomicPublisher::dir_stamps`], [`stamp_clock`](crate::publish::AtomicPublisher::stamp_clock)).
//!
//! A directory's stamp is its inode and its change time (`st_ctime`). The kernel sets a
//! directory's change time whenever an entry is created, removed or renamed in it, and
//! whenever its times or mode are set (`utimes` sets `st_mtime` back, never `st_ctime`): so
//! a directory whose stamp is what it was has had no entry added since, unless the file
//! system's clock was set back to that very nanosecond. The clock is read the same way,
//! from the change time of a file made unnamed (`O_TMPFILE`) in the directory asked about:
//! the same file system, the same clock, and nothing left in the store if the process dies.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::base::error::{Error, Result};
use crate::publish::beneath;
use crate::publish::dirs::DirStamp;

/// The stamp of every directory in `dirs` (keys ending in `/`) under `root`, `None` for
/// one that is missing or is not a directory (a symlink is not followed). Each parent
/// directory is opened once (beneath the root), each directory stat'ed through it.
pub(super) fn dir_stamps(root: &Path, dirs: &[String]) -> Result<Vec<Option<DirStamp>>> {
    let mut parents: BTreeMap<&str, Option<OwnedFd>> = BTreeMap::new();
    let mut out = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let (parent, name) = beneath::split(dir.trim_end_matches('/'));
        if name.is_empty() || name == ".." || name == "." {
            out.push(None);
            continue;
        }
        if !parents.contains_key(parent) {
            parents.insert(parent, beneath::open_dir_to_read(root, parent)?);
        }
        let stamp = match parents.get(parent) {
            Some(Some(fd)) => stamp_at(fd, name, &root.join(dir))?,
            _ => None,
        };
        out.push(stamp);
    }
    Ok(out)
}

/// The stamp of directory `name` in `parent` (`None`: missing, or not a directory).
fn stamp_at(parent: &OwnedFd, name: &OsStr, shown: &Path) -> Result<Option<DirStamp>> {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => Ok(Some(DirStamp {
            inode: st.st_ino,
            changed_ns: changed_ns(&st),
        })),
        Ok(_) | Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
        Err(e) => Err(Error::io(shown, e.into())),
    }
}

/// `st_ctime` in nanoseconds.
pub(super) fn changed_ns(st: &rustix::fs::Stat) -> i128 {
    i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec)
}

/// The change time of an unnamed file made now in directory `dir` under `root`: the file
/// system's clock. `None` when `dir` is missing or no unnamed file can be made there
/// (`O_TMPFILE` unsupported, no permission): no stamp is then trusted.
pub(super) fn clock(root: &Path, dir: &str) -> Result<Option<i128>> {
    let Some(fd) = beneath::open_dir_to_read(root, dir.trim_end_matches('/'))? else {
        return Ok(None);
    };
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    // Whatever keeps the file system from making one (unsupported, no permission, read
    // only) means no clock, not a failed seal.
    let Ok(file) = rustix::fs::openat(&fd, ".", flags, Mode::from_raw_mode(0o600)) else {
        return Ok(None);
    };
    let st = rustix::fs::fstat(&file).map_err(|e| Error::io(root.join(dir), e.into()))?;
    Ok(Some(changed_ns(&st)))
}

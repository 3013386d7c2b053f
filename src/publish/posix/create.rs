//! Publishing one object on local disk: the temp, its fsync, the no-replace rename (see
//! [`super`] for the protocol).

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use crate::base::error::{Error, Result};
use crate::publish::beneath;
use crate::publish::Outcome;

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
pub(super) fn publish_file(
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
    if bytes.is_empty() {
        return create_empty(&dir, &dir_path, name, &target);
    }
    // Cheap early answer; the no-replace publish below is what actually decides.
    if rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return Ok(Outcome::AlreadyExists);
    }
    let tmp = temp_path(&target);
    let tmp_name = tmp.file_name().unwrap_or_default().to_os_string();
    let mut guard = write_temp(&dir, &tmp_name, &tmp, bytes, inject)?;
    let outcome = publish_temp(&mut guard, name, &target)?;
    drop(guard);
    if outcome == Outcome::Created {
        fsync_dir(&dir, &dir_path)?;
    }
    Ok(outcome)
}

/// Flags of an exclusive create that never follows a symlink.
fn exclusive_create() -> (OFlags, Mode) {
    (
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )
}

/// An empty object (the history's markers) has no content that could be seen half
/// written: an exclusive create is already all-or-nothing, no temp is needed.
fn create_empty(dir: &OwnedFd, dir_path: &Path, name: &OsStr, target: &Path) -> Result<Outcome> {
    let (create, mode) = exclusive_create();
    match rustix::fs::openat(dir, name, create, mode) {
        Ok(_) => {
            fsync_dir(dir, dir_path)?;
            Ok(Outcome::Created)
        }
        Err(Errno::EXIST) => Ok(Outcome::AlreadyExists),
        Err(e) => Err(Error::io(target, e.into())),
    }
}

/// Create the temp `tmp_name` in `dir`, write `bytes` to it and fsync it (or fail as
/// `inject` says). The returned guard removes the temp unless disarmed.
fn write_temp<'a>(
    dir: &'a OwnedFd,
    tmp_name: &'a OsStr,
    tmp: &'a Path,
    bytes: &[u8],
    inject: Option<&InjectedWriteError>,
) -> Result<TempGuard<'a>> {
    let (create, mode) = exclusive_create();
    let fd =
        rustix::fs::openat(dir, tmp_name, create, mode).map_err(|e| Error::io(tmp, e.into()))?;
    let guard = TempGuard {
        dir,
        name: tmp_name,
        path: tmp,
        armed: true,
    };
    let mut f = File::from(fd);
    if let Some(i) = inject {
        f.write_all(&bytes[..i.after_bytes.min(bytes.len())])
            .map_err(|e| Error::io(tmp, e))?;
        return Err(Error::io(tmp, std::io::Error::from_raw_os_error(i.errno)));
    }
    f.write_all(bytes).map_err(|e| Error::io(tmp, e))?;
    f.sync_all().map_err(|e| Error::io(tmp, e))?;
    Ok(guard)
}

/// Publish the guarded temp as `name` without replacing anything: `renameat2` with
/// `RENAME_NOREPLACE` (which disarms the guard), or a hard link where the filesystem
/// lacks that flag (the guard then removes the temp).
fn publish_temp(guard: &mut TempGuard<'_>, name: &OsStr, target: &Path) -> Result<Outcome> {
    let (dir, tmp_name) = (guard.dir, guard.name);
    Ok(
        match rustix::fs::renameat_with(dir, tmp_name, dir, name, RenameFlags::NOREPLACE) {
            Ok(()) => {
                guard.armed = false;
                Outcome::Created
            }
            Err(Errno::EXIST) => Outcome::AlreadyExists,
            Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::OPNOTSUPP) => {
                // Filesystem without RENAME_NOREPLACE: a hard link also refuses to replace.
                match rustix::fs::linkat(dir, tmp_name, dir, name, AtFlags::empty()) {
                    Ok(()) => Outcome::Created,
                    Err(Errno::EXIST) => Outcome::AlreadyExists,
                    Err(e) => return Err(Error::io(target, e.into())),
                }
            }
            Err(e) => return Err(Error::io(target, e.into())),
        },
    )
}

/// fsync the directory `dir` (at `path`, for errors).
fn fsync_dir(dir: &OwnedFd, path: &Path) -> Result<()> {
    rustix::fs::fsync(dir).map_err(|e| Error::io(path, e.into()))
}

//! `--store` URLs, resolved in this one place.
//!
//! - a path or `file:///abs/path`: the local-disk publisher;
//! - `memory://`: a fresh in-memory store (process-local; for tests);
//! - `s3://`, `az://` (`azure://`, `adl://`, `abfs[s]://`, `https://<account>.blob.core.windows.net/`)
//!   and `gs://`: the object-store publisher, resolved in [`cloud`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::publish::memory::MemoryPublisher;
use crate::publish::posix::PosixPublisher;
use crate::publish::AtomicPublisher;

pub mod aws_creds;
pub mod cloud;

pub use cloud::{CloudOptions, SideEnv};

/// Open the store a URL names.
pub async fn open(url: &str) -> Result<Arc<dyn AtomicPublisher>> {
    open_with(url, &CloudOptions::default()).await
}

/// Open the store a URL names, with settings that do not belong in a URL.
pub async fn open_with(url: &str, opts: &CloudOptions) -> Result<Arc<dyn AtomicPublisher>> {
    open_side(url, opts, &SideEnv::plain()).await
}

/// [`open_with`] for one of several stores a command opens: `env` says which variables
/// are this store's own (see [`SideEnv`]).
pub async fn open_side(
    url: &str,
    opts: &CloudOptions,
    env: &SideEnv,
) -> Result<Arc<dyn AtomicPublisher>> {
    resolve(url, opts, env, true).await
}

/// A location named like a store that holds other objects of ours (the shard reports of
/// `verify --report-dir`): the same URLs and credentials as [`open_with`], without
/// [`check_local_root`] (such a directory is not a store, and is not refused for holding
/// files). Still create-only: nothing in it is ever overwritten.
pub async fn open_plain(url: &str, opts: &CloudOptions) -> Result<Arc<dyn AtomicPublisher>> {
    resolve(url, opts, &SideEnv::plain(), false).await
}

async fn resolve(
    url: &str,
    opts: &CloudOptions,
    env: &SideEnv,
    store: bool,
) -> Result<Arc<dyn AtomicPublisher>> {
    let url = url.trim();
    if url.is_empty() {
        return Err(Error::Usage(
            "no store given: pass --store or set LINEAGE_STORE".into(),
        ));
    }
    if url == "memory://" || url == "memory:" {
        return Ok(Arc::new(MemoryPublisher::new()));
    }
    if let Some(rest) = url.strip_prefix("file://") {
        if !rest.starts_with('/') {
            return Err(Error::Usage(format!(
                "{}: a file:// URL needs an absolute path (file:///...)",
                crate::base::text::redact_url(url)
            )));
        }
        return local(PathBuf::from(rest), store);
    }
    if let Some(p) = cloud::open_side(url, opts, env).await? {
        return Ok(Arc::new(p));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        return Err(Error::Usage(format!(
            "unsupported store scheme `{scheme}://` in {}",
            crate::base::text::redact_url(url)
        )));
    }
    local(PathBuf::from(url), store)
}

/// The directory a store URL names on the local disk (a path or `file:///…`), or `None`
/// for any other store.
pub fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(rest) = url.strip_prefix("file://") {
        return Some(PathBuf::from(rest));
    }
    (!url.contains("://") && !url.starts_with("memory:")).then(|| PathBuf::from(url))
}

/// The local-disk publisher at `root`, after [`check_local_root`] when it is a store.
fn local(root: PathBuf, store: bool) -> Result<Arc<dyn AtomicPublisher>> {
    if store {
        check_local_root(&root)?;
    }
    Ok(Arc::new(PosixPublisher::new(root)))
}

/// Refuse a local path that cannot be a store: an existing file, or a non-empty directory
/// holding neither `_lineage/` nor a `run_id=` partition. A mistyped `--store` then never
/// scatters parts into some other directory, nor reports each of its files as foreign.
/// Hidden entries and `lost+found` (a dedicated filesystem's root) do not count.
pub fn check_local_root(root: &Path) -> Result<()> {
    let meta = match std::fs::metadata(root) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()), // made on first append
        Err(e) => return Err(Error::io(root, e)),
    };
    if !meta.is_dir() {
        return Err(Error::Usage(format!(
            "--store {}: is a file, not a directory (a store is a directory)",
            root.display()
        )));
    }
    let mut others = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| Error::io(root, e))? {
        let entry = entry.map_err(|e| Error::io(root, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "_lineage" || name.starts_with("run_id=") {
            return Ok(());
        }
        if !name.starts_with('.') && name != "lost+found" {
            others.push(name);
        }
    }
    if others.is_empty() {
        return Ok(());
    }
    others.sort();
    let shown: Vec<String> = others
        .iter()
        .take(3)
        .map(|n| crate::schema::rules::quote(n))
        .collect();
    Err(Error::Usage(format!(
        "--store {}: a non-empty directory that is not a lineage store (it holds {}{}, but no `_lineage/` or `run_id=` directory); give a new or empty directory, or an existing store",
        root.display(),
        shown.join(", "),
        if others.len() > 3 { format!(" and {} more", others.len() - 3) } else { String::new() }
    )))
}

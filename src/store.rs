//! `--store` URLs, resolved in this one place.
//!
//! - a path or `file:///abs/path`: the local-disk publisher;
//! - `memory://`: a fresh in-memory store (process-local; for tests);
//! - `s3://`, `az://` (`azure://`, `adl://`, `abfs[s]://`, `https://<account>.blob.core.windows.net/`)
//!   and `gs://`: the object-store publisher, resolved in [`cloud`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
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
                "{url}: a file:// URL needs an absolute path (file:///...)"
            )));
        }
        return Ok(Arc::new(PosixPublisher::new(PathBuf::from(rest))));
    }
    if let Some(p) = cloud::open_side(url, opts, env).await? {
        return Ok(Arc::new(p));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        return Err(Error::Usage(format!(
            "unsupported store scheme `{scheme}://` in {url}"
        )));
    }
    Ok(Arc::new(PosixPublisher::new(PathBuf::from(url))))
}

//! `--store` URLs, resolved in this one place, into the one store handle, [`Store`].
//!
//! - a path or `file:///abs/path`: the local-disk publisher;
//! - `memory://`: a fresh in-memory store (process-local; for tests);
//! - `s3://`, `az://` (`azure://`, `adl://`, `abfs[s]://`, `https://<account>.blob.core.windows.net/`)
//!   and `gs://`: the object-store publisher, resolved in [`cloud`].
//!
//! [`open`] is the only way in: a URL and a [`StoreOptions`] (the endpoint, whose
//! environment variables are this store's own, the [`ReadLimits`], and what the caller
//! expects to find). The [`Store`] it returns is an [`AtomicPublisher`] that carries those
//! limits ([`AtomicPublisher::read_limits`]) to every reader it is handed to.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::base::limits::ReadLimits;
use crate::base::param::{text, Param};
use crate::publish::memory::MemoryPublisher;
use crate::publish::object::ObjectStorePublisher;
use crate::publish::posix::PosixPublisher;
use crate::publish::{AtomicPublisher, ObjectInfo, Outcome};

pub mod aws_creds;
pub mod cloud;
pub mod options;

pub use options::{Opening, SideEnv, StoreOptions};

/// An opened store: its backend and the limits of what its readers read. An
/// [`AtomicPublisher`] itself, so it goes wherever a publisher goes; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
    limits: ReadLimits,
}

#[derive(Debug, Clone)]
enum Backend {
    Posix(Arc<PosixPublisher>),
    Memory(Arc<MemoryPublisher>),
    Object(Arc<ObjectStorePublisher>),
}

impl Store {
    /// The backend `publisher` with `limits` (a store made in code rather than from a URL).
    pub fn posix(publisher: PosixPublisher, limits: ReadLimits) -> Self {
        Self::with(Backend::Posix(Arc::new(publisher)), limits)
    }

    fn with(backend: Backend, limits: ReadLimits) -> Self {
        Store { backend, limits }
    }

    fn inner(&self) -> &dyn AtomicPublisher {
        match &self.backend {
            Backend::Posix(p) => p.as_ref(),
            Backend::Memory(p) => p.as_ref(),
            Backend::Object(p) => p.as_ref(),
        }
    }

    /// The object-store backend, when the URL named one (tests reach the raw object store
    /// through it to change objects underneath the store).
    pub fn object_store(&self) -> Option<&ObjectStorePublisher> {
        match &self.backend {
            Backend::Object(p) => Some(p),
            _ => None,
        }
    }
}

#[async_trait]
impl AtomicPublisher for Store {
    fn describe(&self) -> String {
        self.inner().describe()
    }

    fn read_limits(&self) -> ReadLimits {
        self.limits
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.inner().put_create(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.inner().get(key).await
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        self.inner().get_at_most(key, max).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner().get_range(key, range).await
    }

    async fn digest_range(
        &self,
        key: &str,
        range: Range<u64>,
        want: crate::base::digest::Want,
    ) -> Result<Option<(crate::base::digest::Digests, u64)>> {
        self.inner().digest_range(key, range, want).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.inner().list(prefix).await
    }

    async fn list_names(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.inner().list_names(prefix).await
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        self.inner().list_after(prefix, after, limit).await
    }

    async fn list_after_sized_from(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
    ) -> Result<Vec<ObjectInfo>> {
        self.inner()
            .list_after_sized_from(prefix, after, limit, sized_from)
            .await
    }

    async fn list_after_sized_skipping(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
        sized_from: &str,
        skip: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<ObjectInfo>> {
        self.inner()
            .list_after_sized_skipping(prefix, after, limit, sized_from, skip)
            .await
    }

    async fn dir_stamps(
        &self,
        dirs: &[String],
    ) -> Result<Option<Vec<Option<crate::publish::dirs::DirStamp>>>> {
        self.inner().dir_stamps(dirs).await
    }

    async fn stamp_clock(&self, dir: &str) -> Result<Option<i128>> {
        self.inner().stamp_clock(dir).await
    }

    async fn list_names_changed(
        &self,
        prefix: &str,
        since_ns: i128,
    ) -> Result<Option<crate::publish::ChangedListing>> {
        self.inner().list_names_changed(prefix, since_ns).await
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner().delete_temp(key).await
    }
}

/// The refusal of an empty store URL (also before a command reads its input).
pub(crate) fn no_store() -> Error {
    Error::usage(text![
        "no store given: pass ",
        Param::Store,
        " or set LINEAGE_STORE"
    ])
}

/// Open the store (or, with [`Opening::Location`], the location) a URL names: the one way
/// a store is opened, by the library, every command and the Python package.
pub async fn open(url: &str, options: &StoreOptions) -> Result<Arc<Store>> {
    let store = Arc::new(resolve(url, options).await?);
    if options.opening == Opening::ExistingStore {
        crate::publish::require_objects(store.as_ref()).await?;
    }
    Ok(store)
}

async fn resolve(url: &str, options: &StoreOptions) -> Result<Store> {
    let url = url.trim();
    let limits = options.limits;
    if url.is_empty() {
        return Err(no_store());
    }
    if url == "memory://" || url == "memory:" {
        return Ok(Store::with(
            Backend::Memory(Arc::new(MemoryPublisher::new())),
            limits,
        ));
    }
    let store = options.opening != Opening::Location;
    if let Some(rest) = url.strip_prefix("file://") {
        if !rest.starts_with('/') {
            return Err(Error::usage(format!(
                "{}: a file:// URL needs an absolute path (file:///...)",
                crate::base::text::redact_url(url)
            )));
        }
        return local(PathBuf::from(rest), store, limits);
    }
    if let Some(p) = cloud::open(url, options).await? {
        return Ok(Store::with(Backend::Object(Arc::new(p)), limits));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        return Err(Error::usage(format!(
            "unsupported store scheme `{scheme}://` in {}",
            crate::base::text::redact_url(url)
        )));
    }
    local(PathBuf::from(url), store, limits)
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
fn local(root: PathBuf, store: bool, limits: ReadLimits) -> Result<Store> {
    if store {
        check_local_root(&root)?;
    }
    Ok(Store::posix(PosixPublisher::new(root), limits))
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
        return Err(Error::invalid(
            Param::Store,
            text![format!(
                "{}: is a file, not a directory (a store is a directory)",
                root.display()
            )],
        ));
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
    Err(Error::invalid(Param::Store, text![format!("{}: a non-empty directory that is not a lineage store (it holds {}{}, but no `_lineage/` or `run_id=` directory); give a new or empty directory, or an existing store", root.display(), shown.join(", "), if others.len() > 3 { format!(" and {} more", others.len() - 3) } else { String::new() })]))
}

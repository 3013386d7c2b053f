//! The object-store [`AtomicPublisher`]: S3, Azure Blob and GCS through `object_store`.
//!
//! Every publish is one PUT with `PutMode::Create`, which each service turns into its own
//! conditional create (S3 and Azure `If-None-Match: *`, GCS `x-goog-if-generation-match: 0`):
//! the store itself decides who wins, so writers on many machines need no coordinator.
//!
//! What a create can answer, and what this module makes of it ([`classify_create`], the
//! one place these answers are mapped):
//!
//! | answer                                            | result                         |
//! |---------------------------------------------------|--------------------------------|
//! | 2xx                                               | `Outcome::Created`             |
//! | `AlreadyExists` (412 on S3/GCS, 409 on Azure)     | `Outcome::AlreadyExists`       |
//! | `Precondition` (what Azure reports in 0.14.1)     | `Outcome::AlreadyExists`       |
//! | S3 409 `ConditionalRequestConflict`               | retried (3 times), then ambiguous |
//! | timeout, connection reset, 5xx after retries      | ambiguous: an error of kind Io |
//!
//! `Outcome::AlreadyExists` is also what a create that landed and whose response was lost
//! looks like after `object_store` retried it (it retries 5xx and 429 even on a create):
//! the caller ([`crate::publish::checked::publish_checked`]) therefore reads the object back and
//! compares commit id and sha256 on every non-`Created` answer, never accepting silently.
//!
//! Parts go up as single PUTs: `object_store` multipart uploads cannot be create-only, so
//! the writer refuses flushes above [`crate::write::writer::MAX_PART_BYTES`].

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::base::error::{Error, Result};
use crate::publish::{check_key, check_temp_key, AtomicPublisher, ObjectInfo, Outcome};

/// How often a create answered with S3's 409 `ConditionalRequestConflict` is retried
/// before the answer is returned as ambiguous (and read back by the caller).
pub const CONFLICT_RETRIES: u32 = 3;
/// Wait before the n-th such retry: n times this.
const CONFLICT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

/// Which service is behind the `object_store` client: the answers to a create differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// Amazon S3 and S3-compatible stores (LocalStack, moto, MinIO, R2).
    S3,
    /// Azure Blob Storage (and Azurite).
    Azure,
    /// Google Cloud Storage (XML API).
    Gcs,
    /// `object_store`'s own in-memory store (tests of this module only).
    Memory,
}

/// An [`AtomicPublisher`] over any `object_store` backend, rooted at a prefix.
#[derive(Debug, Clone)]
pub struct ObjectStorePublisher {
    store: Arc<dyn ObjectStore>,
    backend: Backend,
    /// Object-store path of the root, without leading or trailing `/`; may be empty.
    prefix: String,
    /// `scheme://bucket/prefix` for messages: never a query string, never a credential.
    url: String,
}

impl ObjectStorePublisher {
    /// A publisher writing under `prefix` (`/`-separated, may be empty) of `store`.
    /// `url` names the store in messages; it must not hold credentials.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        backend: Backend,
        prefix: &str,
        url: impl Into<String>,
    ) -> Result<Self> {
        let prefix = prefix.trim_matches('/').to_string();
        if !prefix.is_empty() {
            check_key(&prefix)?;
            Path::parse(&prefix).map_err(|e| {
                Error::usage(format!(
                    "store prefix {prefix:?} is not a valid object path: {e}"
                ))
            })?;
        }
        Ok(Self {
            store,
            backend,
            prefix,
            url: url.into(),
        })
    }

    /// The service behind this publisher.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The underlying `object_store` client (for tests and tools).
    pub fn inner(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The full object path of a store key.
    fn path_of(&self, key: &str) -> Result<Path> {
        check_key(key)?;
        Path::parse(self.full_key(key))
            .map_err(|e| Error::internal(format!("key {key:?} is not a valid object path: {e}")))
    }

    /// The object-store path text of a key (no validation; see [`Self::path_of`]).
    fn full_key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    /// What to list for a key prefix: object_store lists whole path segments, so the
    /// deepest directory the prefix names; callers filter by the string prefix.
    fn list_base(&self, prefix: &str) -> Result<Option<Path>> {
        let dir = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let base = match (self.prefix.is_empty(), dir.is_empty()) {
            (true, true) => None,
            (true, false) => Some(dir.to_string()),
            (false, true) => Some(self.prefix.clone()),
            (false, false) => Some(format!("{}/{dir}", self.prefix)),
        };
        base.map(|b| Path::parse(&b))
            .transpose()
            .map_err(|e| Error::usage(format!("cannot list {prefix:?}: {e}")))
    }

    /// The store key of a listed object path, or `None` when it lies outside the prefix.
    fn key_of(&self, path: &Path) -> Option<String> {
        let s = path.as_ref();
        if self.prefix.is_empty() {
            return Some(s.to_string());
        }
        s.strip_prefix(self.prefix.as_str())?
            .strip_prefix('/')
            .map(str::to_string)
    }

    /// A key as named in messages: the store URL and the key.
    fn name_of(&self, key: &str) -> String {
        if key.is_empty() {
            return self.url.clone();
        }
        format!("{}/{key}", self.url.trim_end_matches('/'))
    }

    fn err(&self, key: &str, source: object_store::Error) -> Error {
        Error::ObjectStore {
            key: self.name_of(key),
            source: Box::new(source),
        }
    }
}

/// How a create answered, after mapping (see the table in the module docs).
#[derive(Debug)]
pub enum CreateAnswer {
    /// The object was created by this call.
    Created,
    /// Something is already there (perhaps our own earlier attempt): read it back.
    Exists,
    /// The outcome is unknown (the write may or may not have landed): read it back.
    Ambiguous(object_store::Error),
    /// Definitely not written (bad credentials, no such bucket, ...).
    Failed(object_store::Error),
}

/// The one place create answers are mapped, per backend.
pub fn classify_create(
    backend: Backend,
    r: std::result::Result<object_store::PutResult, object_store::Error>,
) -> CreateAnswer {
    use object_store::Error as E;
    match r {
        Ok(_) => CreateAnswer::Created,
        // S3 answers 409 ConditionalRequestConflict when another conditional write of the
        // key is in flight; object_store reports every 409 as AlreadyExists, but here the
        // key may well be empty still (the other write can fail), so it is ambiguous.
        Err(e @ E::AlreadyExists { .. })
            if backend == Backend::S3 && is_conditional_request_conflict(&e) =>
        {
            CreateAnswer::Ambiguous(e)
        }
        Err(E::AlreadyExists { .. }) => CreateAnswer::Exists,
        // Azure reports a failed If-None-Match as Precondition (object_store 0.14.1); on a
        // create that can only mean the key is taken.
        Err(E::Precondition { .. }) => CreateAnswer::Exists,
        Err(
            e @ (E::NotFound { .. }
            | E::PermissionDenied { .. }
            | E::Unauthenticated { .. }
            | E::InvalidPath { .. }
            | E::NotSupported { .. }
            | E::NotImplemented { .. }
            | E::UnknownConfigurationKey { .. }),
        ) => CreateAnswer::Failed(e),
        // Timeouts, resets, 5xx after retries, anything else: the request may have landed.
        Err(e) => CreateAnswer::Ambiguous(e),
    }
}

/// The answer of a create as the [`AtomicPublisher`] contract states it: a taken key is
/// `Ok(Outcome::AlreadyExists)`; an ambiguous answer is an error of kind
/// [`crate::ErrorKind::Io`], so that [`crate::publish::checked::publish_checked`] reads back.
/// `name` names the object in messages.
pub fn map_create(
    backend: Backend,
    name: &str,
    r: std::result::Result<object_store::PutResult, object_store::Error>,
) -> Result<Outcome> {
    let err = |source| Error::ObjectStore {
        key: name.to_string(),
        source: Box::new(source),
    };
    match classify_create(backend, r) {
        CreateAnswer::Created => Ok(Outcome::Created),
        CreateAnswer::Exists => Ok(Outcome::AlreadyExists),
        CreateAnswer::Ambiguous(e) => {
            tracing::warn!(object = name, error = %e, "create answered ambiguously; reading back");
            Err(err(as_ambiguous(backend, e)))
        }
        CreateAnswer::Failed(e) => Err(err(e)),
    }
}

/// Whether an error is an S3 409 (`ConditionalRequestConflict`, `OperationAborted`): S3
/// answers an existing key with 412, so a 409 on a create never means "taken". The status
/// type of object_store is not public; its text keeps the status line and the body.
fn is_conditional_request_conflict(e: &object_store::Error) -> bool {
    let mut text = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        text.push('\n');
        text.push_str(&s.to_string());
        src = s.source();
    }
    text.contains("ConditionalRequestConflict") || text.contains("409 Conflict")
}

/// Wrap an error so that its kind is Io (ambiguous), whatever object_store called it.
fn as_ambiguous(backend: Backend, e: object_store::Error) -> object_store::Error {
    match e {
        object_store::Error::Generic { .. } => e,
        other => object_store::Error::Generic {
            store: match backend {
                Backend::S3 => "S3",
                Backend::Azure => "MicrosoftAzure",
                Backend::Gcs => "GCS",
                Backend::Memory => "InMemory",
            },
            source: Box::new(other),
        },
    }
}

#[async_trait]
impl AtomicPublisher for ObjectStorePublisher {
    fn describe(&self) -> String {
        self.url.clone()
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        let path = self.path_of(key)?;
        let payload = PutPayload::from_bytes(bytes);
        let mut attempt = 0;
        loop {
            let opts = PutOptions {
                mode: PutMode::Create,
                ..PutOptions::default()
            };
            let r = self.store.put_opts(&path, payload.clone(), opts).await;
            // S3 answers 409 ConditionalRequestConflict while another conditional write of
            // the key is in flight, and asks the client to retry. A create is always safe
            // to retry: if the other write (or ours) landed, the retry answers 412.
            if self.backend == Backend::S3 && attempt < CONFLICT_RETRIES {
                if let Err(e @ object_store::Error::AlreadyExists { .. }) = &r {
                    if is_conditional_request_conflict(e) {
                        attempt += 1;
                        tracing::info!(
                            key,
                            attempt,
                            "S3 409 ConditionalRequestConflict; retrying the create"
                        );
                        tokio::time::sleep(CONFLICT_BACKOFF * attempt).await;
                        continue;
                    }
                }
            }
            return map_create(self.backend, &self.name_of(key), r);
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let path = self.path_of(key)?;
        let got = match self.store.get(&path).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.err(key, e)),
        };
        got.bytes().await.map(Some).map_err(|e| self.err(key, e))
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        let path = self.path_of(key)?;
        let got = match self.store.get(&path).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.err(key, e)),
        };
        // The size is in the response's headers: the body of a larger object is dropped
        // unread.
        crate::publish::too_large(key, got.meta.size, max)?;
        let b = got.bytes().await.map_err(|e| self.err(key, e))?;
        crate::publish::too_large(key, b.len() as u64, max)?;
        Ok(Some(b))
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path_of(key)?;
        if range.start >= range.end {
            return Ok(Bytes::new());
        }
        self.store
            .get_range(&path, range)
            .await
            .map_err(|e| match e {
                object_store::Error::NotFound { .. } => Error::NotFound(key.to_string()),
                e => self.err(key, e),
            })
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let base = self.list_base(prefix)?;
        let metas: Vec<object_store::ObjectMeta> = self
            .store
            .list(base.as_ref())
            .try_collect()
            .await
            .map_err(|e| self.err(prefix, e))?;
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let key = self.key_of(&m.location)?;
                key.starts_with(prefix).then_some(ObjectInfo {
                    key,
                    size: m.size,
                    modified: Some(m.last_modified),
                    link: None,
                })
            })
            .collect())
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        use futures::StreamExt;
        let base = self.list_base(prefix)?;
        // object_store's list_with_offset sends the offset to the service (S3 `start-after`,
        // Azure `startFrom`, GCS `startOffset`), which answers in key order; the stream is
        // dropped after `limit` matches, so only the pages needed are fetched.
        // An `after` that is no valid path is filtered client-side below: slower, never
        // wrong. One that ends with `/` (a directory: `run_id=<r>/`) cannot be a path, and
        // without its `/` it would name the directory, which some servers' `start-after`
        // then skips whole (SeaweedFS); the offset sent is just below the directory's name
        // instead, and the few keys between it and `after` are filtered out below.
        let offset = match after {
            "" => None,
            a => match a.strip_suffix('/') {
                Some(dir) => below_name(dir).and_then(|o| Path::parse(self.full_key(&o)).ok()),
                None => Path::parse(self.full_key(a)).ok(),
            },
        };
        let stream = match &offset {
            Some(o) => self.store.list_with_offset(base.as_ref(), o),
            None => self.store.list(base.as_ref()),
        };
        let mut stream = stream.map(|r| r.map_err(|e| self.err(prefix, e)));
        let mut out = Vec::new();
        while out.len() < limit {
            let Some(m) = stream.next().await.transpose()? else {
                break;
            };
            let Some(key) = self.key_of(&m.location) else {
                continue;
            };
            if key.starts_with(prefix) && key.as_str() > after {
                out.push(ObjectInfo {
                    key,
                    size: m.size,
                    modified: Some(m.last_modified),
                    link: None,
                });
            }
        }
        Ok(out)
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        // Object stores never hold temps (a PUT is atomic), but keep the guard: nothing but
        // a temp is ever deleted, and the writer's credentials need no delete permission.
        check_temp_key(key)?;
        let path = self.path_of(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(key, e)),
        }
    }
}

/// A string just below the name `dir` (its last character one lower, then the highest
/// character): every key under `dir/` sorts after it, and it names no directory. `None`
/// when there is no such string (an empty name, or one ending in U+0000).
fn below_name(dir: &str) -> Option<String> {
    let mut chars: Vec<char> = dir.chars().collect();
    let last = chars.pop()?;
    let lower = char::from_u32(u32::from(last).checked_sub(1)?)?;
    chars.push(lower);
    chars.push(char::MAX);
    Some(chars.into_iter().collect())
}

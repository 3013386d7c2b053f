//! What every command shares: the store arguments, the status a command returns, and
//! writing to standard output.
// The doc comments of the argument structs are clap help texts, not rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::io::Write;

use crate::base::error::{Error, Result};

/// Store selection shared by the commands that open one and read no seal (`append`,
/// `sweep`).
#[derive(Debug, clap::Args)]
pub(crate) struct StoreUrlArg {
    /// Store URL: a directory, file:///abs/dir, memory://, s3://bucket/prefix,
    /// az://container/prefix (also abfs[s]:// and https://<account>.blob.core.windows.net/...)
    /// or gs://bucket/prefix. Credentials come from the environment, never the URL.
    #[arg(long, env = "LINEAGE_STORE")]
    pub store: String,
    /// S3 endpoint (LocalStack, moto, MinIO...); default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
}

impl StoreUrlArg {
    /// Open the store these arguments name.
    pub(crate) async fn open(&self) -> Result<std::sync::Arc<dyn crate::AtomicPublisher>> {
        let opts = crate::publish::store::cloud::CloudOptions {
            endpoint_url: self.endpoint_url.clone(),
        };
        crate::publish::store::open_with(&self.store, &opts).await
    }

    /// Open the store, refusing one that holds no objects (exit 2, nothing created): only
    /// `append` (and `demo` into a new store) may create a store; on any other command an
    /// empty store is a mistyped URL.
    pub(crate) async fn open_existing(&self) -> Result<std::sync::Arc<dyn crate::AtomicPublisher>> {
        let store = self.open().await?;
        crate::publish::require_objects(store.as_ref()).await?;
        Ok(store)
    }
}

/// Store selection of the commands that read seals and parts: the store and the limits of
/// what is read (`--max-seal-bytes`, `--max-page-bytes`).
#[derive(Debug, clap::Args)]
pub(crate) struct StoreArg {
    #[command(flatten)]
    pub url: StoreUrlArg,
    #[command(flatten)]
    pub limit: ReadLimitsArg,
}

impl StoreArg {
    /// [`StoreUrlArg::open`], with the read limits applied.
    pub(crate) async fn open(&self) -> Result<std::sync::Arc<dyn crate::AtomicPublisher>> {
        self.limit.apply();
        self.url.open().await
    }

    /// [`StoreUrlArg::open_existing`], with the read limits applied.
    pub(crate) async fn open_existing(&self) -> Result<std::sync::Arc<dyn crate::AtomicPublisher>> {
        self.limit.apply();
        self.url.open_existing().await
    }
}

/// The most any command reads of one object or decodes of one page (docs/security.md).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReadLimitsArg {
    /// Largest seal object read, in bytes: a larger one is refused without being read,
    /// naming it (a seal holds about 95,000 commits or more in the default 64 MiB; raise
    /// it for a store sealed less often).
    #[arg(long, value_name = "BYTES", default_value_t = crate::history::seal::DEFAULT_MAX_SEAL_BYTES)]
    pub max_seal_bytes: u64,
    /// Largest page of a part decoded, in bytes, as its page header declares: a part with
    /// a larger page is refused without decoding it, naming it, row group and column.
    #[arg(long, value_name = "BYTES", default_value_t = crate::parts::pages::DEFAULT_MAX_PAGE_BYTES)]
    pub max_page_bytes: u64,
}

impl ReadLimitsArg {
    /// Make them the limits of this process.
    pub(crate) fn apply(&self) {
        crate::history::seal::set_max_seal_bytes(self.max_seal_bytes);
        crate::parts::pages::set_max_page_bytes(self.max_page_bytes);
    }
}

/// What a command reports back: exit code 0 or 1 (problems found).
pub(crate) type Status = u8;

/// The path an error on standard output names (a closed pipe ends the command quietly).
pub(crate) const STDOUT: &str = "<stdout>";

/// Whether `e` is a write to a standard output whose reader went away.
pub(crate) fn closed_stdout(e: &Error) -> bool {
    matches!(e, Error::Io { path, source }
        if path.as_os_str() == STDOUT && source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Write a human-readable line to stdout, every control character in it escaped
/// ([`crate::base::text::printable`]): a key or a field from the store holding a newline
/// or an escape sequence cannot forge a line of the report nor drive the terminal. A
/// closed pipe (e.g. `| head`) is not an error worth a panic.
pub(crate) fn out(line: &str) -> Result<()> {
    out_raw(&crate::base::text::printable(line))
}

/// Write text that is already safe to stdout as it is: JSON (serde escapes what must be),
/// or lines this program made.
pub(crate) fn out_raw(text: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{text}").map_err(|e| Error::io(STDOUT, e))
}

/// JSON of a serialisable value on one line.
pub(crate) fn json_line<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Internal(e.to_string()))
}

/// Refused input as the JSON object `append --json` and `check --json` print on standard
/// output: `{"valid": false, "error_count": N, "errors": [{line, row, field, value,
/// reason}...], "hint": ...}`. `None` for errors that are not about the input (I/O, a
/// conflict), which are only told on standard error.
pub(crate) fn refusal_json(e: &Error) -> Option<serde_json::Value> {
    use crate::base::error::ErrorKind;
    if let Some(r) = e.rejection() {
        return Some(r.to_json());
    }
    (e.kind() == ErrorKind::Input).then(|| {
        crate::base::rejection::Rejection::one(crate::base::rejection::InputError::new(
            crate::base::rejection::Place::Schema,
            None,
            None,
            e.to_string(),
        ))
        .to_json()
    })
}

/// Write `bytes` to the file an `--out` names, by the one rule every `--out` follows: an
/// existing file is refused (exit 2, left as it was) unless `force`, which replaces it
/// whole (a temp beside it, renamed over it: a reader never sees half a file). `-` is
/// standard output.
pub(crate) fn write_out_file(path: &std::path::Path, bytes: &[u8], force: bool) -> Result<()> {
    if path == std::path::Path::new("-") {
        let mut o = std::io::stdout().lock();
        return o
            .write_all(bytes)
            .and_then(|()| o.flush())
            .map_err(|e| Error::io(STDOUT, e));
    }
    if !force {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Error::Usage(format!(
                    "--out {}: the file exists; pass --force to replace it",
                    path.display()
                )),
                _ => Error::io(path, e),
            })?;
        return f.write_all(bytes).map_err(|e| Error::io(path, e));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(crate::format::keys::temp_name(&name));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::io(path, e)
        })
}

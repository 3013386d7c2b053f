//! What every command shares: the store arguments, the status a command returns, and
//! writing to standard output.
// The doc comments of the argument structs are clap help texts, not rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::io::Write;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::limits::{
    ReadLimits, DEFAULT_MAX_DECODED_BYTES, DEFAULT_MAX_PAGE_BYTES, DEFAULT_MAX_SEAL_BYTES,
};
use crate::publish::store::options::{Opening, SideEnv, StoreOptions};
use crate::publish::store::Store;

/// The store a command works on: its URL, endpoint, and the limits of what is read
/// (`--max-seal-bytes`, `--max-page-bytes`).
#[derive(Debug, clap::Args)]
pub(crate) struct StoreArg {
    /// Store URL: a directory, file:///abs/dir, memory://, s3://bucket/prefix,
    /// az://container/prefix (also abfs[s]:// and https://<account>.blob.core.windows.net/...)
    /// or gs://bucket/prefix. Credentials come from the environment, never the URL.
    /// Required: a command without it (or LINEAGE_STORE) is refused before anything runs.
    /// (Not a clap requirement, so that `verify merge` can go without it.)
    #[arg(
        long,
        env = "LINEAGE_STORE",
        default_value = "",
        hide_default_value = true
    )]
    pub store: String,
    /// S3 endpoint (LocalStack, moto, MinIO...); default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    #[command(flatten)]
    pub limit: ReadLimitsArg,
}

impl StoreArg {
    /// Refuse a command without a store before it reads anything else (standard input).
    pub(crate) fn given(&self) -> Result<()> {
        match self.store.trim() {
            "" => Err(crate::publish::store::no_store()),
            _ => Ok(()),
        }
    }

    /// Open the store: [`Opening::ExistingStore`] refuses one that holds no objects (exit
    /// 2, nothing created), as every command but `append` and `demo` must.
    pub(crate) async fn open(&self, opening: Opening) -> Result<Arc<Store>> {
        let side = Side {
            url: &self.store,
            endpoint_url: self.endpoint_url.as_deref(),
            env: SideEnv::plain(),
        };
        open(side, self.limit.get(), opening).await
    }
}

/// One of the stores (or locations) a command opens: its URL, endpoint and whose
/// environment variables are its own (`LINEAGE_FROM_…` for `--from`, …).
#[derive(Debug)]
pub(crate) struct Side<'a> {
    pub url: &'a str,
    pub endpoint_url: Option<&'a str>,
    pub env: SideEnv,
}

/// The one door through which every command opens a store or a location.
pub(crate) async fn open(
    side: Side<'_>,
    limits: ReadLimits,
    opening: Opening,
) -> Result<Arc<Store>> {
    let options = StoreOptions::new()
        .endpoint_url(side.endpoint_url.map(str::to_string))
        .env(side.env)
        .limits(limits)
        .opening(opening);
    crate::publish::store::open(side.url, &options).await
}

/// The most any command reads of one object or decodes of one page (docs/security.md).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReadLimitsArg {
    /// Largest seal object read, in bytes: a larger one is refused without being read,
    /// naming it (a seal holds about 95,000 commits or more in the default 64 MiB; raise
    /// it for a store sealed less often).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_SEAL_BYTES)]
    pub max_seal_bytes: u64,
    /// Largest page of a part decoded, in bytes, as its page header declares: a part with
    /// a larger page is refused without decoding it, naming it, row group and column.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_PAGE_BYTES)]
    pub max_page_bytes: u64,
    /// Most bytes one Parquet object (part, compacted part, Delta checkpoint) may decode
    /// to, bounded from its page headers and dictionaries before decoding: a larger one is
    /// refused, naming it (raise it for parts of more than about 500,000 rows).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_DECODED_BYTES)]
    pub max_decoded_bytes: u64,
}

impl ReadLimitsArg {
    /// The limits of the stores this command opens.
    pub(crate) fn get(&self) -> ReadLimits {
        ReadLimits {
            max_seal_bytes: self.max_seal_bytes,
            max_page_bytes: self.max_page_bytes,
            max_decoded_bytes: self.max_decoded_bytes,
        }
    }
}

/// The input of `append` and `check`, and the rules it is read by.
#[derive(Debug, clap::Args)]
pub(crate) struct InputArgs {
    /// Input file, or `-` for standard input (the default).
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
    /// Input format; detected from the file extension when not given (stdin: ndjson).
    #[arg(long, value_enum)]
    pub format: Option<crate::write::input::format::Format>,
    /// Most rows per commit (one Parquet part each).
    #[arg(long, default_value_t = crate::write::flush::DEFAULT_BATCH_ROWS)]
    pub batch_rows: usize,
    /// Contract version to write (default: the newest; Arrow/Parquet input keeps the
    /// version its schema is). Older input is widened with null columns.
    #[arg(long, value_name = "VERSION")]
    pub schema_version: Option<String>,
    /// Errors to list when the input is refused (0: all); the whole input is validated
    /// either way and the rest are counted.
    #[arg(long, value_name = "N", default_value_t = crate::base::rejection::DEFAULT_MAX_ERRORS)]
    pub max_errors: usize,
    /// Longest NDJSON line or CSV record accepted, in bytes, and longest Arrow or Parquet
    /// string value; a longer one is refused, naming its line (or row and field), before it
    /// is parsed (bounds the memory one line can cost; standard input is refused as soon as
    /// the line passes the limit, not after spooling the rest).
    #[arg(long, value_name = "BYTES", default_value_t = crate::write::input::guard::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

impl InputArgs {
    /// The input, opened (standard input spooled to a temp file: it is read twice), its
    /// Parquet pages at most `max_page` bytes.
    pub(crate) fn open(&self, max_page: u64) -> Result<crate::write::input::source::Input> {
        crate::write::input::source::Input::open_limited(
            self.input.as_deref(),
            self.format,
            self.max_line_bytes,
        )
        .map(|i| i.with_max_page_bytes(max_page))
    }
}

/// How a command that publishes a seal signs it (`seal`, `compact`).
#[derive(Debug, clap::Args)]
pub(crate) struct SigningArgs {
    /// Sign the seal with this Ed25519 secret key (made by `lineage keygen`).
    #[arg(long, value_name = "FILE")]
    pub signing_key: Option<std::path::PathBuf>,
    /// Accept a signing key file that others can read (refused by default, as ssh does).
    #[arg(long, requires = "signing_key")]
    pub allow_readable_key: bool,
    /// Publish an unsigned seal although the newest seal is signed (refused without it).
    #[arg(long, conflicts_with = "signing_key")]
    pub unsigned: bool,
}

impl SigningArgs {
    /// The signing key, its file checked first (not readable by others, unless allowed;
    /// not inside the local store `store_url` names).
    pub(crate) fn key(&self, store_url: &str) -> Result<Option<ed25519_dalek::SigningKey>> {
        let Some(path) = &self.signing_key else {
            return Ok(None);
        };
        let root = crate::publish::store::local_path(store_url);
        crate::history::signing::check_signing_key_file(
            path,
            root.as_deref(),
            self.allow_readable_key,
        )?;
        crate::history::signing::read_signing_key(path).map(Some)
    }
}

/// A duration flag (`90s`, `15m`, `1h`, `2d`), parsed by clap so a bad one is refused
/// with the flag's name before anything runs.
pub(crate) fn duration(s: &str) -> Result<chrono::Duration> {
    crate::base::time::parse_duration(s)
}

/// `--grace`'s default, [`crate::audit::verify::options::DEFAULT_GRACE_MINUTES`].
pub(crate) const DEFAULT_GRACE: &str = "15m";

/// `seal --lookback`'s default, [`crate::history::sealer::DEFAULT_LOOKBACK_MINUTES`].
pub(crate) const DEFAULT_LOOKBACK: &str = "5m";

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
    serde_json::to_string(v).map_err(Error::internal_from)
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
                std::io::ErrorKind::AlreadyExists => Error::usage(format!(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duration_defaults_are_the_librarys() {
        let minutes = |s| duration(s).map(|d| d.num_minutes()).unwrap();
        assert_eq!(
            minutes(DEFAULT_GRACE),
            crate::audit::verify::options::DEFAULT_GRACE_MINUTES
        );
        assert_eq!(
            minutes(DEFAULT_LOOKBACK),
            crate::history::sealer::DEFAULT_LOOKBACK_MINUTES
        );
    }
}

//! Errors, and the one place they are mapped to a small set of kinds (and exit codes).
//!
//! Every module returns [`Error`]; the CLI only ever looks at [`Error::kind`] to choose an
//! exit code, so a new variant is classified here and nowhere else.

use std::path::PathBuf;

use crate::base::cosign::CosignError;
use crate::base::param::{Param, Text};

/// What went wrong, in terms a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input (events, flags, a URL) is not acceptable. Nothing was published.
    Input,
    /// The store holds something that contradicts what we wrote or expected
    /// (a key taken by different content, a corrupt pointer).
    Conflict,
    /// What the store holds is not what it recorded: a part, pointer, seal or other object
    /// of ours changed, truncated, planted or not decodable. Exit 1 from every command, as
    /// `verify`'s "problems found".
    Integrity,
    /// The storage backend or the local filesystem failed.
    Io,
    /// The store or an object in it does not exist.
    NotFound,
    /// A bug or an unexpected state inside lineage-store.
    Internal,
}

impl ErrorKind {
    /// The process exit code for this kind, the same from every command: 1 when the store
    /// is not as recorded (as `verify`'s problems), 2 for refused input and access errors,
    /// 3 for conflicts, 4 for internal errors.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Integrity => 1,
            ErrorKind::Input | ErrorKind::Io | ErrorKind::NotFound => 2,
            ErrorKind::Conflict => 3,
            ErrorKind::Internal => 4,
        }
    }
}

/// All errors of the library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input record (line or row) broke the contract.
    #[error("{location}: {message}")]
    Record {
        /// "line 7" or "row 12", with the field when known.
        location: String,
        /// Why it was refused.
        message: String,
    },
    /// The input's Arrow schema is not the contract.
    #[error("schema mismatch: {0}")]
    Schema(String),
    /// Refused input: every error found (the first ones in input order, and how many in
    /// all), one per line of the message. Nothing was published.
    #[error("{0}")]
    Rejected(Box<crate::base::rejection::Rejection>),
    /// A call that cannot be carried out as given (a URL, an argument, a combination of
    /// them). The message names parameters as [`Param`]s, which each front end words.
    #[error("{0}")]
    Usage(Text),
    /// One parameter's value is not acceptable: "`param` `why`", e.g. `--grace 5x: expected
    /// a whole number and a unit`.
    #[error("{param} {why}")]
    Invalid {
        /// The parameter.
        param: Param,
        /// Why not (may name other parameters).
        why: Text,
    },
    /// A create-only key already holds different content.
    #[error("conflict at {key}: {message}")]
    Conflict {
        /// The object key.
        key: String,
        /// What differs.
        message: String,
    },
    /// An object we expected is missing.
    #[error("not found: {0}")]
    NotFound(String),
    /// A local I/O error, with the path it concerns.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An object-store error, with the key it concerns. The message never holds credentials:
    /// object_store does not put them in its errors, and we never format a config into one.
    #[error("object store error on {key}: {source}")]
    ObjectStore {
        /// The object key.
        key: String,
        /// The backend error.
        #[source]
        source: Box<object_store::Error>,
    },
    /// Parquet encoding or decoding failed; `origin` says whose bytes they were.
    #[error("parquet: {source}")]
    Parquet {
        /// Whose bytes.
        origin: Origin,
        /// What failed.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// Arrow failed (decoding, building or slicing arrays); `origin` says whose data.
    #[error("arrow: {source}")]
    Arrow {
        /// Whose data.
        origin: Origin,
        /// What failed.
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// A pointer, seal or proof is not valid JSON of the expected shape.
    #[error("corrupt {what} {key}: {message}")]
    Corrupt {
        /// "pointer", "seal", "proof".
        what: &'static str,
        /// The object key or file.
        key: String,
        /// Why it could not be read.
        message: Text,
    },
    /// An HTTP endpoint did not accept what was sent (after retries).
    #[error("delivery to {url} failed: {message}")]
    Delivery {
        /// The endpoint.
        url: String,
        /// What was not delivered, and why.
        message: String,
    },
    /// A C2SP tlog witness gave no cosignature ([`CosignError`] says which answer).
    #[error("witness {witness}: {refusal}")]
    Cosign {
        /// The witness (its URL, query redacted, and key name).
        witness: String,
        /// Why it did not cosign.
        refusal: CosignError,
    },
    /// A signature or key problem.
    #[error("signature: {0}")]
    Signature(String),
    /// What the store recorded does not hold: a part whose size or digest is not what its
    /// sealed pointer records, a sealed pointer missing or changed, a seal that does not
    /// chain. Each failing object is named.
    #[error("{}", integrity_text(.0))]
    Integrity(Vec<Failed>),
    /// A symlink inside a local store, which no command ever follows.
    #[error("refusing to follow the symlink {path} -> {target}: lineage-store never reads, writes or deletes through a symlink inside a store (`lineage verify` names every one)")]
    Symlink {
        /// The symlink, under the store's root.
        path: String,
        /// Where it points (as stored in the link; never followed).
        target: String,
    },
    /// An object larger than its kind may be, refused without reading it whole
    /// ([`crate::publish::AtomicPublisher::get_at_most`]); the caller names the kind and
    /// the flag that raises the limit.
    #[error("{key}: {size} bytes, more than the {max} read at most")]
    TooLarge {
        /// The object key.
        key: String,
        /// Its size (as listed or as the backend reported it before sending it).
        size: u64,
        /// The limit it exceeds.
        max: u64,
    },
    /// Anything that should not happen, with what caused it when there is a cause.
    #[error("internal error: {message}")]
    Internal {
        /// What went wrong.
        message: String,
        /// The error behind it.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// Whose bytes a Parquet or Arrow error arose in: it decides what the error means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// The caller's input (events to append, a file given): refused input, exit 2.
    Input,
    /// An object of the store (a part, a checkpoint): the store is not as recorded, exit 1.
    Stored,
    /// Our own encoding of data we built: a bug, exit 4.
    Ours,
}

impl From<parquet::errors::ParquetError> for Error {
    /// A Parquet error of our own encoding; decoding input or stored objects names its
    /// origin at the call ([`Error::parquet`]).
    fn from(source: parquet::errors::ParquetError) -> Self {
        Error::Parquet {
            origin: Origin::Ours,
            source,
        }
    }
}

impl From<arrow_schema::ArrowError> for Error {
    /// An Arrow error of our own building; decoding input or stored objects names its
    /// origin at the call ([`Error::arrow`]).
    fn from(source: arrow_schema::ArrowError) -> Self {
        Error::Arrow {
            origin: Origin::Ours,
            source,
        }
    }
}

/// One object that failed a check of the trusted read path ([`Error::Integrity`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// The object key (a part, a pointer, a seal).
    pub key: String,
    /// What is wrong with it (naming parameters as [`Param`]s).
    pub detail: Text,
}

impl Failed {
    /// A failure of `key`.
    pub fn new(key: impl Into<String>, detail: impl Into<Text>) -> Self {
        Failed {
            key: key.into(),
            detail: detail.into(),
        }
    }
}

fn integrity_text(failed: &[Failed]) -> String {
    integrity_text_named(failed, &|p| p.to_string())
}

fn integrity_text_named(failed: &[Failed], name: &dyn Fn(Param) -> String) -> String {
    let each: Vec<String> = failed
        .iter()
        .map(|f| format!("{}: {}", f.key, f.detail.render(name)))
        .collect();
    let n = failed.len();
    format!(
        "integrity: {n} object{} not as sealed: {} (`lineage verify` reports the store)",
        if n == 1 { "" } else { "s" },
        each.join("; ")
    )
}

impl Error {
    /// The one mapping from variants to kinds.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Record { .. }
            | Error::Schema(_)
            | Error::Rejected(_)
            | Error::Usage(_)
            | Error::Invalid { .. }
            | Error::Signature(_) => ErrorKind::Input,
            // A proof is a file the caller gives, not an object of the store.
            Error::Corrupt { what: "proof", .. } => ErrorKind::Input,
            Error::Corrupt { .. } | Error::Integrity(_) | Error::TooLarge { .. } => {
                ErrorKind::Integrity
            }
            Error::Conflict { .. } | Error::Symlink { .. } => ErrorKind::Conflict,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Io { .. } | Error::Delivery { .. } => ErrorKind::Io,
            Error::ObjectStore { source, .. } => match source.as_ref() {
                object_store::Error::NotFound { .. } => ErrorKind::NotFound,
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. } => ErrorKind::Conflict,
                _ => ErrorKind::Io,
            },
            Error::Parquet { origin, .. } | Error::Arrow { origin, .. } => match origin {
                Origin::Input => ErrorKind::Input,
                Origin::Stored => ErrorKind::Integrity,
                Origin::Ours => ErrorKind::Internal,
            },
            Error::Internal { .. } => ErrorKind::Internal,
            Error::Cosign { refusal, .. } => match refusal {
                // Down, or answering outside the protocol: the transport's fault.
                CosignError::Unreachable { .. }
                | CosignError::Status { .. }
                | CosignError::BadAnswer { .. } => ErrorKind::Io,
                // The witness does not accept this log, or the request: access refused.
                CosignError::UnknownOrigin { .. }
                | CosignError::Forbidden { .. }
                | CosignError::BadRequest { .. } => ErrorKind::Input,
                // The witness holds another view of the log than the store.
                CosignError::SizeConflict { .. }
                | CosignError::AheadOfLog { .. }
                | CosignError::ProofRefused { .. } => ErrorKind::Conflict,
            },
        }
    }

    /// A call that cannot be carried out as given.
    pub fn usage(why: impl Into<Text>) -> Self {
        Error::Usage(why.into())
    }

    /// `param`'s value is not acceptable, because `why`.
    pub fn invalid(param: Param, why: impl Into<Text>) -> Self {
        Error::Invalid {
            param,
            why: why.into(),
        }
    }

    /// Something that should not happen.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal {
            message: message.into(),
            source: None,
        }
    }

    /// Something that should not happen, caused by `source` (kept as the error's source).
    pub fn internal_from(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Internal {
            message: source.to_string(),
            source: Some(Box::new(source)),
        }
    }

    /// A Parquet error in bytes of `origin`.
    pub fn parquet(origin: Origin, source: parquet::errors::ParquetError) -> Self {
        Error::Parquet { origin, source }
    }

    /// An Arrow error in data of `origin`.
    pub fn arrow(origin: Origin, source: arrow_schema::ArrowError) -> Self {
        Error::Arrow { origin, source }
    }

    /// The message with every parameter named by `name` (each front end's words: the
    /// CLI's `--grace`, Python's `grace=`); `Display` names them as the library does.
    pub fn render(&self, name: &dyn Fn(Param) -> String) -> String {
        match self {
            Error::Usage(t) => t.render(name),
            Error::Invalid { param, why } => format!("{} {}", name(*param), why.render(name)),
            Error::Integrity(failed) => integrity_text_named(failed, name),
            Error::Corrupt { what, key, message } => {
                format!("corrupt {what} {key}: {}", message.render(name))
            }
            other => other.to_string(),
        }
    }

    /// Shorthand for an I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Refused input with one error.
    pub fn input(e: crate::base::rejection::InputError) -> Self {
        Error::Rejected(Box::new(crate::base::rejection::Rejection::one(e)))
    }

    /// The input's errors, when this is refused input (`None` for every other error).
    pub fn rejection(&self) -> Option<&crate::base::rejection::Rejection> {
        match self {
            Error::Rejected(r) => Some(r),
            _ => None,
        }
    }

    /// Shorthand for a record error.
    pub fn record(location: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Record {
            location: location.into(),
            message: message.into(),
        }
    }
}

impl crate::base::rejection::Collector {
    /// `Ok` when no error was recorded, else refused input ([`Error::Rejected`]) with
    /// every error recorded.
    pub fn finish(self) -> Result<()> {
        match self.into_rejection() {
            None => Ok(()),
            Some(r) => Err(Error::Rejected(Box::new(r))),
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A Parquet or Arrow error means what its origin says: the caller's input is refused
    /// (exit 2), a stored object is not as recorded (exit 1), our own encoding is a bug (4).
    #[test]
    fn parquet_and_arrow_errors_are_classified_by_their_origin() {
        let p = || parquet::errors::ParquetError::General("x".into());
        let a = || arrow_schema::ArrowError::InvalidArgumentError("x".into());
        assert_eq!(Error::parquet(Origin::Input, p()).kind(), ErrorKind::Input);
        assert_eq!(
            Error::parquet(Origin::Stored, p()).kind(),
            ErrorKind::Integrity
        );
        assert_eq!(Error::from(p()).kind(), ErrorKind::Internal);
        assert_eq!(Error::arrow(Origin::Input, a()).kind(), ErrorKind::Input);
        assert_eq!(Error::from(a()).kind(), ErrorKind::Internal);
        assert_eq!(ErrorKind::Integrity.exit_code(), 1);
    }

    /// A witness that is down is an I/O error (exit 2), one that refuses the log's view a
    /// conflict (exit 3), and the message names the witness and the answer.
    #[test]
    fn cosign_errors_are_classified_by_the_witness_answer() {
        let e = |refusal| Error::Cosign {
            witness: "https://w.example/ (w.example/w1)".into(),
            refusal,
        };
        let down = e(CosignError::Unreachable {
            why: "no answer within the timeout".into(),
        });
        assert_eq!(down.kind(), ErrorKind::Io);
        assert_eq!(
            down.to_string(),
            "witness https://w.example/ (w.example/w1): no answer: no answer within the timeout"
        );
        let refused = e(CosignError::ProofRefused {
            old: 3,
            tree_size: 9,
        });
        assert_eq!(refused.kind().exit_code(), 3);
        assert!(refused.to_string().contains("from size 3 to 9 (HTTP 422)"));
        let unknown = e(CosignError::UnknownOrigin { origin: "o".into() });
        assert_eq!(unknown.kind(), ErrorKind::Input);
        assert_eq!(
            e(CosignError::SizeConflict {
                old: 4,
                witness_size: Some(6)
            })
            .to_string(),
            "witness https://w.example/ (w.example/w1): the witness's latest cosigned size for the log is 6, not the old size 4 sent (HTTP 409)"
        );
    }

    /// An internal error keeps what caused it as its source.
    #[test]
    fn an_internal_error_keeps_its_source() {
        let e = Error::internal_from(std::io::Error::other("disk on fire"));
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("disk on fire"));
    }
}

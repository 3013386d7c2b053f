//! Input readers: NDJSON, CSV, Arrow IPC (file or stream) and Parquet, all producing
//! contract batches with an [`Origin`](crate::schema::events::Origin) so errors can name lines.
//!
//! [`Input`] reads a file (or spooled standard input) batch by batch, as often as needed:
//! `append` validates all of it before the first commit (so refused input publishes
//! nothing), then reads it again to commit. [`parse`] takes input already in memory.

use std::io::Read;
use std::path::Path;

use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::rejection::{Collector, DEFAULT_MAX_ERRORS};
use crate::schema::events::SourcedBatch;
use crate::write::validate::Validator;

pub mod batches;
mod binary;
mod csv;
pub(crate) mod format;
pub(crate) mod guard;
mod ipc_frames;
mod ndjson;
pub(crate) mod source;
pub(crate) mod tolerant;

pub use format::Format;
pub use guard::DEFAULT_MAX_LINE_BYTES;
pub use source::{BatchSource, Input};

/// Parse raw input bytes in `format` into contract batches (not yet validated). Refused
/// lines of text input are carried in the batches ([`SourcedBatch::read_errors`]), for
/// the validator to report with the rows' errors; a refused schema or header, or an
/// unreadable file, is an error here.
pub fn parse(bytes: Bytes, format: Format) -> Result<Vec<SourcedBatch>> {
    if crate::write::conform::is_empty_input(&bytes, format) {
        return Ok(Vec::new()); // no events: appending them is a no-op (docs/input.md)
    }
    match format {
        Format::Ndjson => ndjson::parse(&bytes),
        Format::Csv => csv::parse(&bytes),
        Format::Arrow => binary::parse_arrow(bytes),
        Format::Parquet => binary::parse_parquet(bytes),
    }
}

/// Parse and validate: the batches, canonical and checked, ready to append; or every error
/// of the input (the first [`DEFAULT_MAX_ERRORS`] listed, in input order).
pub fn parse_validated(bytes: Bytes, format: Format) -> Result<Vec<arrow_array::RecordBatch>> {
    let mut v = Validator::new();
    let mut errors = Collector::new(DEFAULT_MAX_ERRORS);
    let mut out = Vec::new();
    for sb in parse(bytes, format)? {
        out.extend(v.check(&sb, &mut errors)?);
    }
    errors.finish()?;
    Ok(out)
}

/// Read `path` (or standard input for `None` / `-`), detecting the format from the
/// extension when `format` is not given (standard input defaults to NDJSON).
pub fn read_input(path: Option<&Path>, format: Option<Format>) -> Result<(Bytes, Format)> {
    match path {
        None => read_stdin(format),
        Some(p) if p == Path::new("-") => read_stdin(format),
        Some(p) => {
            let format = match format.or_else(|| Format::from_path(p)) {
                Some(f) => f,
                None => {
                    return Err(Error::usage(text![
                        format!(
                            "cannot tell the format of {} from its extension; pass ",
                            p.display()
                        ),
                        Param::Format
                    ]))
                }
            };
            let bytes = std::fs::read(p).map_err(|e| Error::io(p, e))?;
            Ok((Bytes::from(bytes), format))
        }
    }
}

fn read_stdin(format: Option<Format>) -> Result<(Bytes, Format)> {
    let mut buf = Vec::new();
    std::io::stdin()
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("<stdin>", e))?;
    Ok((Bytes::from(buf), format.unwrap_or(Format::Ndjson)))
}

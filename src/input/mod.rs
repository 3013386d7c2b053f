//! Input readers: NDJSON, CSV, Arrow IPC (file or stream) and Parquet, all producing
//! contract batches with an [`Origin`](crate::events::Origin) so errors can name lines.
//!
//! Readers take the whole input as bytes: `append` validates its entire input before the
//! first commit (so refused input publishes nothing), which needs all of it at hand.

use std::io::Read;
use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::events::SourcedBatch;
use crate::validate::Validator;

mod binary;
mod csv;
mod ndjson;

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line with the 15 fields.
    Ndjson,
    /// A header with the 15 field names, then one row per line; an empty cell is null.
    Csv,
    /// Arrow IPC, file or stream.
    Arrow,
    /// Parquet.
    Parquet,
}

impl Format {
    /// The format a file name suggests.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "ndjson" | "jsonl" | "json" => Format::Ndjson,
            "csv" => Format::Csv,
            "arrow" | "arrows" | "ipc" | "feather" => Format::Arrow,
            "parquet" | "pq" => Format::Parquet,
            _ => return None,
        })
    }
}

/// Parse raw input bytes in `format` into contract batches (not yet validated).
pub fn parse(bytes: Bytes, format: Format) -> Result<Vec<SourcedBatch>> {
    if crate::conform::is_empty_input(&bytes, format) {
        return Ok(Vec::new()); // no events: appending them is a no-op (README, "Input")
    }
    match format {
        Format::Ndjson => ndjson::parse(&bytes),
        Format::Csv => csv::parse(&bytes),
        Format::Arrow => binary::parse_arrow(bytes),
        Format::Parquet => binary::parse_parquet(bytes),
    }
}

/// Parse and validate: the batches, canonical and checked, ready to append.
pub fn parse_validated(bytes: Bytes, format: Format) -> Result<Vec<arrow_array::RecordBatch>> {
    let mut v = Validator::new();
    parse(bytes, format)?
        .iter()
        .map(|sb| v.validate(sb))
        .collect()
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
                    return Err(Error::Usage(format!(
                        "cannot tell the format of {} from its extension; pass --format",
                        p.display()
                    )))
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

//! The input formats `append` reads.

use std::path::Path;

/// Input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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

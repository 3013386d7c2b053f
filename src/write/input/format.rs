//! The input formats `append` reads.

use std::path::Path;

/// Input formats.
#[non_exhaustive]
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

impl Format {
    /// What the start of an input looks like when it is not NDJSON, for standard input
    /// read without `--format`: Parquet or Arrow IPC by their magic bytes, CSV by a first
    /// line that is a header naming at least three of the contract's fields. `None`: read
    /// it as NDJSON (its errors say what is wrong with each line).
    pub fn sniff(head: &[u8]) -> Option<(Format, &'static str)> {
        if head.starts_with(b"PAR1") {
            return Some((
                Format::Parquet,
                "it starts with Parquet's magic bytes `PAR1`",
            ));
        }
        if head.starts_with(b"ARROW1") {
            return Some((
                Format::Arrow,
                "it starts with Arrow IPC's magic bytes `ARROW1`",
            ));
        }
        // An IPC stream starts with a continuation marker and a message length.
        if head.starts_with(&[0xff, 0xff, 0xff, 0xff]) {
            return Some((
                Format::Arrow,
                "it starts like an Arrow IPC stream (0xFFFFFFFF)",
            ));
        }
        let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
        let line = text
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .find(|l| !l.iter().all(u8::is_ascii_whitespace))?;
        let line = std::str::from_utf8(line).ok()?;
        if line.trim_start().starts_with('{') {
            return None;
        }
        let named = line
            .split([',', ';', '\t'])
            .map(|c| c.trim().trim_matches('"'))
            .filter(|c| {
                crate::schema::contract::COLUMNS
                    .iter()
                    .any(|k| k.name == *c)
            })
            .count();
        (named >= 3).then_some((
            Format::Csv,
            "its first line looks like a CSV header of the contract's fields",
        ))
    }

    /// The format a `--format` value names (`ndjson`, `csv`, `arrow`, `parquet`).
    pub fn from_flag(flag: &str) -> Option<Format> {
        [Format::Ndjson, Format::Csv, Format::Arrow, Format::Parquet]
            .into_iter()
            .find(|f| f.flag() == flag)
    }

    /// The `--format` value naming this format.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
            Format::Arrow => "arrow",
            Format::Parquet => "parquet",
        }
    }
}

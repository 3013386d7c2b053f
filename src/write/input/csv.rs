//! CSV: a header naming 1.2.0's 15 fields and any of the 6 fields 1.3.0 adds (in any
//! order; an absent 1.3.0 column is null), then one event per record. An empty cell is
//! null (also in `grids`: an empty list of grids needs NDJSON, Arrow or Parquet);
//! `event_time_utc` is RFC 3339; `degraded` is `true` or `false` (any case: pandas writes
//! `True`); spaces around a number, a boolean or a time are ignored, other cells are kept
//! as written.
//!
//! Lines are counted as an editor counts them: physical lines from 1, the header is line
//! 1, blank lines and quoted newlines count, CRLF and LF alike ([`Lines`]; the `csv`
//! crate's own count is one low after CRLF line ends and leaves quoted newlines out). A
//! record that spans lines is named by the line it starts on. Every refused record is
//! reported (a short or long record, invalid UTF-8, a number or time that does not parse),
//! each refused cell of a record on its own; the record's other cells still go through
//! the row rules.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Read;

use crate::base::error::{Error, Result};
use crate::base::rejection::{Collector, InputError, Place};
use crate::schema::contract::{self, col, Kind, COLUMNS, KNOWN_COLUMNS};
use crate::schema::events::{EventRow, LineBatcher, SourcedBatch};
use crate::schema::rules::cut;

use crate::write::input::guard::LineGuard;
use crate::write::input::ndjson::parse_time_us;

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<SourcedBatch>> {
    let mut out = Vec::new();
    read(
        bytes,
        crate::write::input::guard::DEFAULT_MAX_LINE_BYTES,
        &mut |b| {
            out.push(b);
            Ok(())
        },
    )?;
    Ok(out)
}

/// A reader that remembers where the line ends were in what it has handed out, so a
/// byte offset can be turned into the physical line it is on ([`Lines::line_at`]).
struct Lines<R> {
    inner: R,
    /// Bytes handed out so far.
    offset: u64,
    /// Offsets of `\n` and `\r` handed out but not passed by a query yet, and whether
    /// each ends a line: every `\r` does and every `\n` not right after a `\r`, so LF,
    /// CRLF and lone CR (old Mac) line ends each count once, as editors count them.
    ends: RefCell<VecDeque<(u64, bool)>>,
    /// Whether the last byte handed out was `\r` (a `\n` first in the next read is then
    /// the second half of a CRLF).
    after_cr: bool,
    /// Line ends before the first entry of `ends`.
    passed: RefCell<u64>,
    /// The longest record (`--max-line-bytes`), checked as the bytes go by.
    guard: LineGuard,
    /// Why reading stopped, when a record was longer than that.
    too_long: Option<Error>,
}

impl<R: Read> Read for Lines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.too_long.is_some() {
            return Err(std::io::Error::other(
                "a record is longer than --max-line-bytes",
            ));
        }
        let n = self.inner.read(buf)?;
        if let Err(e) = self.guard.feed(&buf[..n]) {
            self.too_long = Some(e);
            return Err(std::io::Error::other(
                "a record is longer than --max-line-bytes",
            ));
        }
        let ends = self.ends.get_mut();
        for i in memchr::memchr2_iter(b'\n', b'\r', &buf[..n]) {
            let after_cr = if i == 0 {
                self.after_cr
            } else {
                buf[i - 1] == b'\r'
            };
            ends.push_back((self.offset + i as u64, buf[i] == b'\r' || !after_cr));
        }
        if n > 0 {
            self.after_cr = buf[n - 1] == b'\r';
        }
        self.offset += n as u64;
        Ok(n)
    }
}

impl<R> Lines<R> {
    fn new(inner: R, max_record: usize) -> Self {
        Self {
            inner,
            offset: 0,
            ends: RefCell::new(VecDeque::new()),
            after_cr: false,
            passed: RefCell::new(0),
            guard: LineGuard::new(max_record, true),
            too_long: None,
        }
    }

    /// The refusal of a record longer than the limit, once one was met.
    fn take_too_long(&mut self) -> Option<Error> {
        self.too_long.take()
    }

    /// The line (from 1) of the first byte at or after `byte` that is not a line end:
    /// where a record starting at `byte` begins (the `csv` crate may place a record's
    /// start on the line end before it). Offsets must not decrease between calls.
    fn line_at(&self, byte: u64) -> u64 {
        let mut ends = self.ends.borrow_mut();
        let mut passed = self.passed.borrow_mut();
        let mut at = byte;
        while let Some(&(o, ends_line)) = ends.front() {
            if o < at {
                *passed += u64::from(ends_line);
                ends.pop_front();
            } else if o == at {
                // A line end where the record is said to start: it ends the line before.
                *passed += u64::from(ends_line);
                ends.pop_front();
                at += 1;
            } else {
                break;
            }
        }
        *passed + 1
    }
}

/// Read CSV from `r`, handing each batch to `emit` as it is cut. A header that is not the
/// contract's refuses the input (every problem of it named); refused records are carried
/// in the batches (see the module docs).
pub(super) fn read<R: std::io::Read>(
    r: R,
    max_record: usize,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(Lines::new(r, max_record));
    let (headers, pos) = read_header(&mut rdr)?;
    let mut batcher = LineBatcher::new();
    let mut rec = csv::StringRecord::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {
                let line = rec
                    .position()
                    .map_or(0, |p| rdr.get_ref().line_at(p.byte()));
                push_record(&rec, line, &pos, &mut batcher)?;
            }
            Err(e) => {
                if let Some(too_long) = rdr.get_mut().take_too_long() {
                    return Err(too_long);
                }
                // The record is skipped; reading goes on at the next one.
                let line = match e.position() {
                    Some(p) => rdr.get_ref().line_at(p.byte()),
                    None => return Err(crate::base::error::Error::usage(format!("CSV: {e}"))),
                };
                let (column, field) = utf8_field(&e, &headers, &pos);
                batcher.error_in(
                    line,
                    column,
                    field.as_deref(),
                    None,
                    csv_reason(&e, Some(&headers)),
                )?;
            }
        }
        for b in batcher.take_ready() {
            emit(b)?;
        }
    }
    for b in batcher.finish()? {
        emit(b)?;
    }
    Ok(())
}

/// The header record and the column index in the file of each contract column; an
/// unreadable header or one that is not the contract's refuses the input.
fn read_header<R: std::io::Read>(
    rdr: &mut csv::Reader<Lines<R>>,
) -> Result<(csv::StringRecord, Positions)> {
    let headers = match rdr.headers() {
        Ok(h) => h.clone(),
        Err(e) => {
            if let Some(too_long) = rdr.get_mut().take_too_long() {
                return Err(too_long);
            }
            let line = e.position().map_or(1, |p| rdr.get_ref().line_at(p.byte()));
            return Err(crate::base::error::Error::input(InputError::new(
                Place::Line(line),
                None,
                None,
                format!("the header cannot be read: {}", csv_reason(&e, None)),
            )));
        }
    };
    let header_line = headers
        .position()
        .map_or(1, |p| rdr.get_ref().line_at(p.byte()));
    let pos = header_columns(&headers, header_line)?;
    Ok((headers, pos))
}

/// One record at `line` into the batcher: each cell parsed as its column's type, the
/// cells that do not parse refused (and named).
fn push_record(
    rec: &csv::StringRecord,
    line: u64,
    pos: &Positions,
    batcher: &mut LineBatcher,
) -> Result<()> {
    let cell = |ci: usize| -> Option<&str> { rec.get(pos[ci]).filter(|v| !v.is_empty()) };
    let mut refused = Vec::new();
    let mut row = EventRow::default();
    for (ci, c) in contract::known_columns().enumerate() {
        let Some(v) = cell(ci) else { continue };
        let n = v.trim_matches(' ');
        let got = match c.kind {
            Kind::Str => Ok(()),
            Kind::I64 => n
                .parse()
                .map(|x| row.sequence = Some(x))
                .map_err(|_| format!("`{}` is not a 64-bit integer", cut(v))),
            Kind::I32 => n
                .parse()
                .map(|x| row.strategy_index = Some(x))
                .map_err(|_| format!("`{}` is not a 32-bit integer", cut(v))),
            Kind::F64 => n
                .parse()
                .map(|x| row.accuracy_m = Some(x))
                .map_err(|_| format!("`{}` is not a number", cut(v))),
            Kind::TimestampUtc => parse_time_us(v).map(|us| row.event_time_us = Some(us)),
            Kind::Bool => match n.to_ascii_lowercase().as_str() {
                "true" | "false" => {
                    row.degraded = Some(n.eq_ignore_ascii_case("true"));
                    Ok(())
                }
                _ => Err(format!("`{}` is not true or false", cut(v))),
            },
        };
        if let Err(why) = got {
            batcher.error(line, Some(ci), Some(cut(v)), why)?;
            refused.push(ci);
        }
    }
    row.event_id = cell(0);
    row.run_id = cell(1);
    row.stage = cell(4);
    row.event_type = cell(5);
    row.feature_id = cell(6);
    row.source_crs = cell(7);
    row.target_crs = cell(8);
    row.outcome = cell(9);
    row.rejection_reason = cell(12);
    row.tool_version = cell(13);
    row.audit_tag = cell(14);
    row.operation_code = cell(col::OPERATION_CODE);
    row.operation_name = cell(col::OPERATION_NAME);
    row.grids = cell(col::GRIDS);
    row.input_dataset = cell(col::INPUT_DATASET);
    row.input_version = cell(col::INPUT_VERSION);
    batcher.push_refused(&row, line, &refused)
}

/// Column index in the file of each column the reader knows ([`contract::known_columns`]);
/// `usize::MAX` for a 1.3.0 column the header does not have.
type Positions = [usize; KNOWN_COLUMNS];

/// Column index in the file of each contract column; every problem of the header at once.
fn header_columns(headers: &csv::StringRecord, line: u64) -> Result<Positions> {
    let mut pos = [usize::MAX; KNOWN_COLUMNS];
    let mut errors = Collector::new(0);
    let at =
        |field: &str, reason: String| InputError::new(Place::Line(line), Some(field), None, reason);
    for (i, h) in headers.iter().enumerate() {
        let h = h.trim_start_matches('\u{feff}');
        match contract::known_columns().position(|c| c.name == h) {
            Some(ci) if pos[ci] != usize::MAX => errors.push(
                at(
                    h,
                    format!(
                        "appears twice in the header (columns {} and {})",
                        pos[ci] + 1,
                        i + 1
                    ),
                ),
                ci,
            ),
            Some(ci) => pos[ci] = i,
            None => {
                let hint = match crate::schema::rules::meant(h) {
                    Some(name) => format!("; did you mean `{name}`?"),
                    None => String::new(),
                };
                errors.push(
                    at(
                        &cut(h),
                        format!(
                            "is not a field of the contract (column {} of the header){hint}",
                            i + 1
                        ),
                    ),
                    usize::MAX,
                )
            }
        }
    }
    for (ci, c) in COLUMNS.iter().enumerate() {
        if pos[ci] == usize::MAX {
            errors.push(
                at(
                    c.name,
                    "is missing from the header (every one of 1.2.0's 15 fields must be a column)"
                        .to_string(),
                ),
                ci,
            );
        }
    }
    errors.finish().map(|()| pos)
}

/// The contract column and field a UTF-8 error is in.
fn utf8_field(
    e: &csv::Error,
    headers: &csv::StringRecord,
    pos: &Positions,
) -> (Option<usize>, Option<String>) {
    match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => {
            let column = pos.iter().position(|&p| p == err.field());
            (column, headers.get(err.field()).map(str::to_string))
        }
        _ => (None, None),
    }
}

fn csv_reason(e: &csv::Error, headers: Option<&csv::StringRecord>) -> String {
    match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => match headers.and_then(|h| h.get(err.field())) {
            Some(_) => "invalid UTF-8".to_string(),
            None => format!("invalid UTF-8 in field {}", err.field() + 1),
        },
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("has {len} fields, the header has {expected_len}")
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        read(
            text,
            crate::write::input::guard::DEFAULT_MAX_LINE_BYTES,
            &mut |b| {
                if let crate::schema::events::Origin::Lines(l) = &b.origin {
                    out.extend(l);
                }
                Ok(())
            },
        )
        .unwrap();
        out
    }

    const H: &str = "event_id,run_id,sequence,event_time_utc,stage,event_type,feature_id,source_crs,target_crs,outcome,strategy_index,accuracy_m,rejection_reason,tool_version,audit_tag";
    const R: &str = "e,r,1,2026-07-13T06:00:00Z,s,t,f,,EPSG:4326,transformed,,,,v,";

    #[test]
    fn records_are_numbered_by_physical_line_with_lf_crlf_blank_lines_and_quoted_newlines() {
        let lf = format!("{H}\n{R}\n{R}\n");
        assert_eq!(lines_of(lf.as_bytes()), [2, 3]);
        let crlf = lf.replace('\n', "\r\n");
        assert_eq!(lines_of(crlf.as_bytes()), [2, 3]);
        let quoted =
            format!("{H}\n{}\n{R}\n", R.replace(",v,", ",\"v\nw\",")).replace('\n', "\r\n");
        assert_eq!(lines_of(quoted.as_bytes()), [2, 4]);
        let blank = format!("{H}\r\n\r\n{R}\r\n\n{R}\n");
        assert_eq!(lines_of(blank.as_bytes()), [3, 5]);
    }

    /// One byte per read: a CRLF split between reads still counts once.
    struct Dribble<'a>(&'a [u8]);
    impl std::io::Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(slot)) => {
                    *slot = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn lone_cr_line_ends_count_as_lines_and_a_crlf_split_between_reads_counts_once() {
        let lf = format!("{H}\n{R}\n{R}\n");
        assert_eq!(lines_of(lf.replace('\n', "\r").as_bytes()), [2, 3]);
        let mixed = format!("{H}\r{R}\r\n\r{R}\n{R}\r");
        assert_eq!(lines_of(mixed.as_bytes()), [2, 4, 5]);
        let crlf = lf.replace('\n', "\r\n");
        let mut out: Vec<u64> = Vec::new();
        read(
            Dribble(crlf.as_bytes()),
            crate::write::input::guard::DEFAULT_MAX_LINE_BYTES,
            &mut |b| {
                if let crate::schema::events::Origin::Lines(l) = &b.origin {
                    out.extend(l);
                }
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(out, [2, 3]);
    }
}

//! The longest line of NDJSON or record of CSV an input may hold (`--max-line-bytes`),
//! checked as the bytes go by: a longer one is refused as soon as it passes the limit,
//! before it is read whole (a file, or standard input while it is spooled).

use crate::base::error::Error;

/// Longest NDJSON line (and CSV record, and Arrow or Parquet string value) accepted by
/// default (`--max-line-bytes`): far above any event of the contract, and what bounds the
/// memory one line can cost (parsing holds a line a few times over). A longer one is
/// refused, naming it, before it is parsed.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// Counts the bytes of the current line (NDJSON: up to `\n`) or record (CSV: up to a line
/// end outside quotes, quoted newlines included).
#[derive(Debug)]
pub(crate) struct LineGuard {
    max: usize,
    csv: bool,
    /// Bytes of the current line or record so far.
    len: usize,
    /// Inside a quoted CSV field.
    quoted: bool,
    /// Physical lines ended so far (CSV: LF, CRLF and a lone CR once each, as editors
    /// count them; NDJSON: LF).
    ended: u64,
    after_cr: bool,
    /// The line the current line or record starts on.
    start: u64,
}

impl LineGuard {
    /// A guard for NDJSON lines, or CSV records when `csv`, of at most `max` bytes.
    pub(crate) fn new(max: usize, csv: bool) -> Self {
        Self {
            max,
            csv,
            len: 0,
            quoted: false,
            ended: 0,
            after_cr: false,
            start: 1,
        }
    }

    /// Account for the next bytes; the refusal ([`too_long`]) as soon as a line or record
    /// is longer than the limit.
    pub(crate) fn feed(&mut self, buf: &[u8]) -> Result<(), Error> {
        if !self.csv {
            let mut from = 0;
            for end in memchr::memchr_iter(b'\n', buf).chain([buf.len()]) {
                self.len += end - from;
                if self.len > self.max {
                    return Err(too_long(self.start, self.max, "line"));
                }
                if end < buf.len() {
                    self.len = 0;
                    self.ended += 1;
                    self.start = self.ended + 1;
                }
                from = end + 1;
            }
            return Ok(());
        }
        for &b in buf {
            let line_end = b == b'\n' || b == b'\r';
            if line_end && (b == b'\r' || !self.after_cr) {
                self.ended += 1;
            }
            self.after_cr = b == b'\r';
            if b == b'"' {
                self.quoted = !self.quoted;
            }
            if line_end && !self.quoted {
                self.len = 0;
                self.start = self.ended + 1;
                continue;
            }
            self.len += 1;
            if self.len > self.max {
                return Err(too_long(self.start, self.max, "record"));
            }
        }
        Ok(())
    }
}

/// The refusal of line `line`, longer than `max` bytes (`what`: "line" or "record").
pub(crate) fn too_long(line: u64, max: usize, what: &str) -> Error {
    Error::record(
        format!("line {line}"),
        format!(
            "longer than {max} bytes, the longest {what} accepted (--max-line-bytes raises it); the input is refused and nothing was published"
        ),
    )
}

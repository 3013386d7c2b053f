//! An input that `append` reads twice (validate all, then commit), batch by batch, so
//! memory does not grow with the input's size.
//!
//! A file is read where it is; standard input is first copied to an unnamed temp file
//! (the spool, in `TMPDIR`, removed when the append ends, also after a crash), because
//! it can be read only once. A read error on standard input refuses the whole append
//! before anything is validated or published (exit 2, naming how many bytes had been
//! read): a truncated input must not be committed as if it were complete.

use std::fs::File;
use std::io::{BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::base::error::{Error, Result};
use crate::base::limits::DEFAULT_MAX_PAGE_BYTES;
use crate::base::param::{text, Param};
use crate::schema::events::{LineBatcher, SourcedBatch};
use crate::write::input::format::Format;
use crate::write::input::guard::{LineGuard, DEFAULT_MAX_LINE_BYTES};
use crate::write::input::{binary, csv, ndjson};

/// An input that can be read from its start more than once.
pub trait BatchSource: Send + Sync + std::fmt::Debug + 'static {
    /// Read every batch in order, handing each to `f`; stop at the first error.
    fn read_all(&self, f: &mut dyn FnMut(SourcedBatch) -> Result<()>) -> Result<()>;
    /// Called before the second pass: refuse when the input changed since the first.
    fn check_unchanged(&self) -> Result<()> {
        Ok(())
    }
    /// About how many bytes of Arrow data the input makes, when it can tell beforehand:
    /// pass 1 keeps nothing when that is over what it may keep (no wasted copies).
    fn expected_bytes(&self) -> Option<u64> {
        None
    }
    /// Whether the batches are validated already (then the first pass only digests a
    /// keyed payload, and an unkeyed append reads the input once).
    fn validated(&self) -> bool {
        false
    }
    /// Whether the batches' schema says which contract version the input is (Arrow,
    /// Parquet, batches in memory): written as that version unless another is requested.
    /// Text formats say `false`: written as the newest version, added columns null.
    fn typed(&self) -> bool {
        true
    }
    /// Whether every batch `read_all` hands out stays in memory (shared, not copied) until
    /// the append ends anyway: then buffered rows refer to them instead of copying them
    /// (see `group`), which costs no memory and moves the copy onto the encoder threads.
    fn held_in_memory(&self) -> bool {
        false
    }
}

/// Bytes of NDJSON parsed at a time (cut at the last line end).
const NDJSON_BLOCK: usize = 8 << 20;

#[derive(Debug)]
enum Backing {
    Path {
        path: PathBuf,
        /// Size and modification time when opened.
        stamp: (u64, Option<SystemTime>),
    },
    Spool(File),
}

/// A file, or standard input spooled to a temp file, with its format.
#[derive(Debug)]
pub struct Input {
    backing: Backing,
    format: Format,
    len: u64,
    /// Standard input read as NDJSON because no format was given: checked for the look of
    /// another format before it is parsed ([`Format::sniff`]).
    defaulted: bool,
    /// Longest NDJSON line accepted ([`Input::with_max_line_bytes`]).
    max_line: usize,
    /// Largest Parquet page decoded ([`Input::with_max_page_bytes`]).
    max_page: u64,
}

fn stamp(path: &Path) -> Result<(u64, Option<SystemTime>)> {
    let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    Ok((m.len(), m.modified().ok()))
}

impl Input {
    /// `path` (or standard input for `None` / `-`), its format from the extension unless
    /// `format` says (standard input: NDJSON); lines of at most [`DEFAULT_MAX_LINE_BYTES`].
    pub fn open(path: Option<&Path>, format: Option<Format>) -> Result<Input> {
        Self::open_limited(path, format, DEFAULT_MAX_LINE_BYTES)
    }

    /// [`Input::open`] with lines (NDJSON), records (CSV) and values (Arrow, Parquet) of
    /// at most `max_line` bytes ([`Input::with_max_line_bytes`]). Standard input is
    /// checked while it is spooled: a longer line or record refuses it at once, before
    /// the rest is read.
    pub fn open_limited(
        path: Option<&Path>,
        format: Option<Format>,
        max_line: usize,
    ) -> Result<Input> {
        let stdin = || -> Result<Input> {
            let mut input = Self::spool_limited(
                std::io::stdin().lock(),
                format.unwrap_or(Format::Ndjson),
                max_line,
            )?;
            input.defaulted = format.is_none();
            Ok(input)
        };
        match path {
            None => stdin(),
            Some(p) if p == Path::new("-") => stdin(),
            Some(p) => {
                let format = format.or_else(|| Format::from_path(p)).ok_or_else(|| {
                    Error::usage(text![
                        format!(
                            "cannot tell the format of {} from its extension; pass ",
                            p.display()
                        ),
                        Param::Format
                    ])
                })?;
                let stamp = stamp(p)?;
                Ok(Input {
                    len: stamp.0,
                    backing: Backing::Path {
                        path: p.to_path_buf(),
                        stamp,
                    },
                    format,
                    defaulted: false,
                    max_line: DEFAULT_MAX_LINE_BYTES,
                    max_page: DEFAULT_MAX_PAGE_BYTES,
                }
                .with_max_line_bytes(max_line))
            }
        }
    }

    /// Copy `r` to a temp file, to the end. A read error refuses the input.
    pub fn spool(r: impl Read, format: Format) -> Result<Input> {
        Self::spool_limited(r, format, DEFAULT_MAX_LINE_BYTES)
    }

    /// [`Input::spool`], refusing at once (before reading on) an NDJSON line or a CSV
    /// record longer than `max_line` bytes.
    pub fn spool_limited(mut r: impl Read, format: Format, max_line: usize) -> Result<Input> {
        let tmp_err = |e| Error::io(std::env::temp_dir().join("<stdin spool>"), e);
        let mut file = tempfile::tempfile().map_err(tmp_err)?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        let max_line = max_line.max(1);
        let mut guard = match format {
            Format::Ndjson => Some(LineGuard::new(max_line, false)),
            Format::Csv => Some(LineGuard::new(max_line, true)),
            Format::Arrow | Format::Parquet => None,
        };
        let mut probe = matches!(format, Format::Ndjson).then(ObjectProbe::new);
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(g) = &mut guard {
                        g.feed(&buf[..n])?;
                    }
                    if let Some(p) = &mut probe {
                        if p.feed(&buf[..n])? {
                            probe = None;
                        }
                    }
                    file.write_all(&buf[..n]).map_err(tmp_err)?;
                    total += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::io(
                        "<stdin>",
                        std::io::Error::new(
                            e.kind(),
                            format!("reading failed after {total} bytes ({e}); the input is refused and nothing was published"),
                        ),
                    ))
                }
            }
        }
        Ok(Input {
            backing: Backing::Spool(file),
            format,
            len: total,
            defaulted: false,
            max_line,
            max_page: DEFAULT_MAX_PAGE_BYTES,
        })
    }

    /// Arrow batches of one schema, handed over one at a time by `next` (a stream that can
    /// be read only once: a Python `RecordBatchReader`, a DuckDB query), copied to an
    /// unnamed temp file (in `TMPDIR`) as an Arrow IPC stream, so that an append reads
    /// them twice (validate all, then commit) in bounded memory, as `lineage append`
    /// reads standard input. An error from `next` refuses the whole input.
    pub fn spool_arrow(
        schema: &arrow_schema::Schema,
        mut next: impl FnMut() -> Result<Option<arrow_array::RecordBatch>>,
    ) -> Result<Input> {
        let tmp_err = |e| Error::io(std::env::temp_dir().join("<Arrow stream spool>"), e);
        let mut file = tempfile::tempfile().map_err(tmp_err)?;
        {
            let out = std::io::BufWriter::with_capacity(1 << 20, &file);
            let mut w = arrow_ipc::writer::StreamWriter::try_new(out, schema)?;
            while let Some(b) = next()? {
                w.write(&b)?;
            }
            w.finish()?;
            w.into_inner()?.flush().map_err(tmp_err)?;
        }
        let len = file.stream_position().map_err(tmp_err)?;
        file.rewind().map_err(tmp_err)?;
        Ok(Input {
            backing: Backing::Spool(file),
            format: Format::Arrow,
            len,
            defaulted: false,
            max_line: DEFAULT_MAX_LINE_BYTES,
            max_page: DEFAULT_MAX_PAGE_BYTES,
        })
    }

    /// Refuse an NDJSON line or a CSV record longer than `n` bytes (default
    /// [`DEFAULT_MAX_LINE_BYTES`]), naming its line, before it is parsed; and an Arrow or
    /// Parquet string value longer than that, naming its row and field.
    pub fn with_max_line_bytes(mut self, n: usize) -> Self {
        self.max_line = n.max(1);
        self
    }

    /// Refuse a Parquet input holding a page that decodes to more than `n` bytes (default
    /// [`DEFAULT_MAX_PAGE_BYTES`]), naming its row group and column, before it is decoded.
    pub fn with_max_page_bytes(mut self, n: u64) -> Self {
        self.max_page = n.max(1);
        self
    }

    /// The input's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn name(&self) -> PathBuf {
        match &self.backing {
            Backing::Path { path, .. } => path.clone(),
            Backing::Spool(_) => PathBuf::from("<stdin>"),
        }
    }

    /// A handle at the start of the input.
    fn reopen(&self) -> Result<File> {
        let name = self.name();
        let mut f = match &self.backing {
            Backing::Path { path, .. } => File::open(path),
            Backing::Spool(f) => f.try_clone(),
        }
        .map_err(|e| Error::io(&name, e))?;
        f.rewind().map_err(|e| Error::io(&name, e))?;
        Ok(f)
    }
}

impl Input {
    /// Whether the input holds no events at all ([`crate::write::conform::is_empty_input`]),
    /// looking only as far as its first byte that is not white space.
    fn holds_no_events(&self, f: &mut File) -> Result<bool> {
        if matches!(self.format, Format::Arrow | Format::Parquet) || self.len == 0 {
            return Ok(self.len == 0);
        }
        let mut buf = vec![0u8; 64 << 10];
        let mut first = true;
        loop {
            let n = crate::write::input::binary::read_full(f, &mut buf)
                .map_err(|e| Error::io(self.name(), e))?;
            // The byte-order mark counts only at the start.
            let empty = if first {
                crate::write::conform::is_empty_input(&buf[..n], self.format)
            } else {
                buf[..n].iter().all(u8::is_ascii_whitespace)
            };
            first = false;
            if !empty || n < buf.len() {
                f.rewind().map_err(|e| Error::io(self.name(), e))?;
                return Ok(empty);
            }
        }
    }
}

/// How much of NDJSON standard input may pass without one line that starts a JSON object
/// before it is refused as not NDJSON (see [`ObjectProbe`]).
const NO_OBJECT_LIMIT: u64 = 8 << 20;

/// Watches the start of NDJSON input being spooled for a line that begins with `{`.
/// Every line of NDJSON input is judged (every error at once), so a bad first line alone
/// does not stop the spool; but input with no JSON object in its first
/// [`NO_OBJECT_LIMIT`] bytes is not NDJSON, and is refused before the rest is read (a
/// never-ending stream of short lines would otherwise be spooled to its end).
struct ObjectProbe {
    at_line_start: bool,
    scanned: u64,
    head: Vec<u8>,
}

impl ObjectProbe {
    fn new() -> Self {
        ObjectProbe {
            at_line_start: true,
            scanned: 0,
            head: Vec::new(),
        }
    }

    /// `Ok(true)` once a line starting a JSON object was seen (the probe is done).
    fn feed(&mut self, chunk: &[u8]) -> Result<bool> {
        if self.head.len() < 64 << 10 {
            let take = chunk.len().min((64 << 10) - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        for &b in chunk {
            if self.at_line_start {
                match b {
                    b'{' => return Ok(true),
                    // Blank space and a byte-order mark before the first character.
                    b' ' | b'\t' | b'\r' | b'\n' | 0xEF | 0xBB | 0xBF => {}
                    _ => self.at_line_start = false,
                }
            } else if b == b'\n' {
                self.at_line_start = true;
            }
        }
        self.scanned += chunk.len() as u64;
        if self.scanned < NO_OBJECT_LIMIT {
            return Ok(false);
        }
        let looks = Format::sniff(&self.head).map_or(String::new(), |(other, why)| {
            format!(" ({why}: pass --format {})", other.flag())
        });
        Err(Error::usage(format!(
            "standard input is read as NDJSON, and no line of its first {} MiB starts a JSON object{looks}: it is refused before the rest of it is read, and nothing was published",
            NO_OBJECT_LIMIT >> 20
        )))
    }
}

impl Input {
    /// Standard input without `--format` is read as NDJSON; one that looks like another
    /// format is refused with the flag that reads it.
    fn refuse_other_format(&self, f: &mut File) -> Result<()> {
        let mut head = vec![0u8; 64 << 10];
        let n = crate::write::input::binary::read_full(f, &mut head)
            .map_err(|e| Error::io(self.name(), e))?;
        f.rewind().map_err(|e| Error::io(self.name(), e))?;
        match Format::sniff(&head[..n]) {
            Some((other, why)) => Err(Error::usage(text![
                "standard input is read as NDJSON unless ",
                Param::Format,
                format!(" says otherwise, and {why}: pass "),
                Param::Format,
                format!(" {}", other.flag())
            ])),
            None => Ok(()),
        }
    }
}

impl BatchSource for Input {
    fn read_all(&self, emit: &mut dyn FnMut(SourcedBatch) -> Result<()>) -> Result<()> {
        let mut f = self.reopen()?;
        if self.holds_no_events(&mut f)? {
            return Ok(()); // no events: appending them is a no-op (docs/input.md)
        }
        if self.defaulted {
            self.refuse_other_format(&mut f)?;
        }
        match self.format {
            Format::Ndjson => read_ndjson(f, &self.name(), self.max_line, emit),
            Format::Csv => csv::read(BufReader::with_capacity(1 << 20, f), self.max_line, emit),
            Format::Arrow => binary::read_arrow(f, &self.name(), self.max_line, emit),
            Format::Parquet => binary::read_parquet(f, self.max_line, self.max_page, emit),
        }
    }

    fn expected_bytes(&self) -> Option<u64> {
        // Arrow data per input byte, measured on the bench's events: NDJSON 0.52, CSV
        // about 0.8; Arrow IPC is Arrow; Parquet is compressed (unknown).
        match self.format {
            Format::Ndjson => Some(self.len / 2),
            Format::Csv => Some(self.len * 3 / 4),
            Format::Arrow => Some(self.len),
            Format::Parquet => None,
        }
    }

    fn typed(&self) -> bool {
        matches!(self.format, Format::Arrow | Format::Parquet)
    }

    fn check_unchanged(&self) -> Result<()> {
        if let Backing::Path { path, stamp: s } = &self.backing {
            if stamp(path)? != *s {
                return Err(Error::usage(format!(
                    "{} changed while it was being appended (size or modification time); nothing was published",
                    path.display()
                )));
            }
        }
        Ok(())
    }
}

/// Batches a parser hands back, at most this many waiting per parser: a parser runs ahead
/// of the consumer by this much, not by a whole block (an 8 MiB block of bad lines makes
/// millions of errors; they are handed on batch by batch, so memory stays flat).
const NDJSON_BATCHES_AHEAD: usize = 2;

/// What a parser hands back for one block: each batch as it is cut, then `Ok(None)` at
/// the block's end (or the error that stopped it).
type Parsed = Result<Option<SourcedBatch>>;

/// NDJSON in blocks cut at the last line end, line numbers carried across blocks. One
/// parser thread per core (for the whole input, so allocations stay in few arenas) takes
/// blocks in turn while this thread reads ahead; batches are handed on in input order,
/// each as soon as its parser cuts it.
fn read_ndjson(
    mut r: impl Read,
    name: &Path,
    max_line: usize,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    use std::sync::mpsc;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 8));
    let mut blocks = Blocks {
        carry: Vec::new(),
        line: 1,
        eof: false,
        max_line,
    };
    std::thread::scope(|s| {
        let mut to: Vec<mpsc::Sender<(Vec<u8>, u64)>> = Vec::new();
        let mut from: Vec<mpsc::Receiver<Parsed>> = Vec::new();
        for _ in 0..workers {
            let (btx, brx) = mpsc::channel::<(Vec<u8>, u64)>();
            // Bounded: a parser waits for the consumer. After an error the consumer drops
            // its receivers, so a waiting parser's send fails and it stops.
            let (rtx, rrx) = mpsc::sync_channel::<Parsed>(NDJSON_BATCHES_AHEAD);
            s.spawn(move || parse_blocks(&brx, &rtx));
            to.push(btx);
            from.push(rrx);
        }
        let (mut sent, mut done) = (0usize, 0usize);
        loop {
            while sent - done < workers {
                match blocks.next(&mut r, name)? {
                    Some(b) => {
                        to[sent % workers]
                            .send(b)
                            .map_err(|_| Error::internal("an NDJSON parser stopped"))?;
                        sent += 1;
                    }
                    None => break,
                }
            }
            if sent == done {
                return Ok(());
            }
            // In input order: the first refused line is the one reported.
            while let Some(b) = from[done % workers]
                .recv()
                .map_err(|_| Error::internal("an NDJSON parser stopped"))??
            {
                emit(b)?;
            }
            done += 1;
        }
    })
}

/// A parser thread: each block it is given, parsed and handed back batch by batch, then
/// its end; it stops when nobody takes what it hands back.
fn parse_blocks(
    blocks: &std::sync::mpsc::Receiver<(Vec<u8>, u64)>,
    out: &std::sync::mpsc::SyncSender<Parsed>,
) {
    let stopped = || Error::internal("the NDJSON reader stopped");
    for (bytes, first) in blocks {
        let mut b = LineBatcher::new();
        let mut hand = |sb| out.send(Ok(Some(sb))).map_err(|_| stopped());
        let r = ndjson::parse_lines(&bytes, first, &mut b, &mut hand)
            .and_then(|()| b.finish())
            .and_then(|rest| rest.into_iter().try_for_each(&mut hand));
        drop(bytes);
        let end = match r {
            Ok(()) => Ok(None),
            Err(e) => Err(e),
        };
        let failed = end.is_err();
        if out.send(end).is_err() || failed {
            break;
        }
    }
}

/// Cuts an NDJSON stream into blocks of whole lines, refusing a line longer than
/// `max_line` bytes as soon as it is seen (before it is parsed or read further).
struct Blocks {
    carry: Vec<u8>,
    line: u64,
    eof: bool,
    max_line: usize,
}

impl Blocks {
    /// The next block and the number of its first line; `None` at the end.
    fn next(&mut self, r: &mut impl Read, name: &Path) -> Result<Option<(Vec<u8>, u64)>> {
        loop {
            if self.eof {
                if self.carry.is_empty() {
                    return Ok(None);
                }
                let first = self.line;
                self.check_lines(&self.carry, first, true)?;
                return Ok(Some((std::mem::take(&mut self.carry), first)));
            }
            let mut buf = std::mem::take(&mut self.carry);
            let start = buf.len();
            buf.resize(start + NDJSON_BLOCK, 0);
            let n = crate::write::input::binary::read_full(r, &mut buf[start..])
                .map_err(|e| Error::io(name, e))?;
            buf.truncate(start + n);
            self.eof = n < NDJSON_BLOCK;
            if self.eof {
                self.carry = buf;
                continue;
            }
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => {
                    self.carry = buf.split_off(i + 1);
                    let first = self.line;
                    self.check_lines(&buf, first, false)?;
                    self.line += memchr::memchr_iter(b'\n', &buf).count() as u64;
                    return Ok(Some((buf, first)));
                }
                // A line longer than the block: read on, up to the longest line accepted.
                None => {
                    if buf.len() > self.max_line {
                        return Err(self.too_long(self.line));
                    }
                    self.carry = buf;
                }
            }
        }
    }

    /// Refuse the first line of `block` (whose first line is `first`) longer than the
    /// limit; `last` when the block's last line has no line end.
    fn check_lines(&self, block: &[u8], first: u64, last: bool) -> Result<()> {
        if block.len() <= self.max_line {
            return Ok(());
        }
        let mut start = 0;
        let ends = memchr::memchr_iter(b'\n', block).chain(last.then_some(block.len()));
        for (line, end) in (first..).zip(ends) {
            if end - start > self.max_line {
                return Err(self.too_long(line));
            }
            start = end + 1;
        }
        Ok(())
    }

    fn too_long(&self, line: u64) -> Error {
        crate::write::input::guard::too_long(line, self.max_line, "line")
    }
}

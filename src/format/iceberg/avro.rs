//! The Avro object container encoding, as much of it as Iceberg's manifests and manifest
//! lists need (Avro 1.11 specification, "Binary Encoding" and "Object Container Files"):
//! `long`/`int` as zig-zag varints, `string`/`bytes` length-prefixed, a union as the
//! branch index then the value, an array as one block of items then a zero count, a
//! record as its fields in order; a file as the magic, the metadata map, a sync marker and
//! one block of every record (codec `null`), or no block when there are none.
//!
//! Every byte is fixed by the caller's values: the metadata map in the order given, the
//! sync marker derived by the caller (never random), so a file is a pure function of what
//! it holds. [`Reader`] reads back the files written here (same schema, same shape), which
//! is all the sealer and `verify` need: a file of other bytes is never ours.

/// The four bytes an object container file starts with.
const MAGIC: &[u8; 4] = b"Obj\x01";

/// Appends Avro-encoded values to a buffer.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `long` (or `int`): zig-zag, then 7 bits a byte, low first.
    pub fn long(&mut self, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            self.buf.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
        self.buf.push(z as u8);
    }

    /// A `boolean`.
    pub fn boolean(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    /// `bytes`: the length, then the bytes.
    pub fn bytes(&mut self, v: &[u8]) {
        self.long(v.len() as i64);
        self.buf.extend_from_slice(v);
    }

    /// A `string` (UTF-8, as `bytes`).
    pub fn string(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }

    /// The `null` branch of a `["null", T]` union.
    pub fn null(&mut self) {
        self.long(0);
    }

    /// The second branch of a `["null", T]` union: call the value's writer next.
    pub fn some(&mut self) {
        self.long(1);
    }

    /// An optional `long` as a `["null", "long"]` union.
    pub fn opt_long(&mut self, v: Option<i64>) {
        match v {
            Some(v) => {
                self.some();
                self.long(v);
            }
            None => self.null(),
        }
    }

    /// An optional `string` as a `["null", "string"]` union.
    pub fn opt_string(&mut self, v: Option<&str>) {
        match v {
            Some(v) => {
                self.some();
                self.string(v);
            }
            None => self.null(),
        }
    }

    /// What was written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// An object container file: `schema` (Avro schema JSON) and `meta` (further metadata, in
/// this order) in the header, `sync` as its marker, the `count` records `records` holds
/// (each already encoded) in one block.
pub fn container(
    schema: &str,
    meta: &[(&str, String)],
    sync: [u8; 16],
    count: usize,
    records: &[u8],
) -> Vec<u8> {
    let mut w = Writer::new();
    w.buf.extend_from_slice(MAGIC);
    // The metadata map: one block of its entries, then the end.
    w.long(meta.len() as i64 + 2);
    w.string("avro.schema");
    w.string(schema);
    w.string("avro.codec");
    w.string("null");
    for (k, v) in meta {
        w.string(k);
        w.string(v);
    }
    w.long(0);
    w.buf.extend_from_slice(&sync);
    if count > 0 {
        w.long(count as i64);
        w.long(records.len() as i64);
        w.buf.extend_from_slice(records);
        w.buf.extend_from_slice(&sync);
    }
    w.into_bytes()
}

/// Why a file could not be read as one written by [`container`].
pub type ReadError = String;

/// Reads what [`Writer`] wrote, failing (never panicking) on anything else.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Read `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| format!("ends inside a value at byte {}", self.pos))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// A `long` (or `int`).
    pub fn long(&mut self) -> Result<i64, ReadError> {
        let mut z: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            z |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
        }
        Err(format!(
            "a varint longer than 10 bytes at byte {}",
            self.pos
        ))
    }

    /// A `boolean`.
    pub fn boolean(&mut self) -> Result<bool, ReadError> {
        match self.take(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("boolean byte {b} at byte {}", self.pos - 1)),
        }
    }

    /// `bytes`.
    pub fn bytes(&mut self) -> Result<&'a [u8], ReadError> {
        let n = self.long()?;
        let n = usize::try_from(n).map_err(|_| format!("negative length {n}"))?;
        self.take(n)
    }

    /// A `string`.
    pub fn string(&mut self) -> Result<String, ReadError> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| "a string that is not UTF-8".to_string())
    }

    /// Whether a `["null", T]` union holds a value (then read it next).
    pub fn is_some(&mut self) -> Result<bool, ReadError> {
        match self.long()? {
            0 => Ok(false),
            1 => Ok(true),
            i => Err(format!("union branch {i}")),
        }
    }

    /// An optional `long`.
    pub fn opt_long(&mut self) -> Result<Option<i64>, ReadError> {
        if self.is_some()? {
            self.long().map(Some)
        } else {
            Ok(None)
        }
    }

    /// An optional `string`.
    pub fn opt_string(&mut self) -> Result<Option<String>, ReadError> {
        if self.is_some()? {
            self.string().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Whether everything was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// The records of a file written by [`container`], each decoded by `record`; the header
/// is skipped (the caller compares the whole file with the one it would write).
pub fn records<T>(
    file: &[u8],
    mut record: impl FnMut(&mut Reader<'_>) -> Result<T, ReadError>,
) -> Result<Vec<T>, ReadError> {
    let mut r = Reader::new(file);
    if r.take(4)? != MAGIC {
        return Err("not an Avro object container file".into());
    }
    loop {
        let n = r.long()?;
        if n == 0 {
            break;
        }
        for _ in 0..n.unsigned_abs() {
            r.bytes()?;
            r.bytes()?;
        }
        if n < 0 {
            return Err("a metadata block with a byte size".into());
        }
    }
    let sync = r.take(16)?;
    let mut out = Vec::new();
    while !r.at_end() {
        let n = r.long()?;
        let _size = r.long()?;
        for _ in 0..n {
            out.push(record(&mut r)?);
        }
        if r.take(16)? != sync {
            return Err("a block without the file's sync marker".into());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag() {
        for (v, b) in [
            (0i64, vec![0u8]),
            (-1, vec![1]),
            (1, vec![2]),
            (-64, vec![0x7f]),
            (64, vec![0x80, 1]),
        ] {
            let mut w = Writer::new();
            w.long(v);
            assert_eq!(w.into_bytes(), b, "{v}");
        }
        for v in [0, 1, -1, i64::MAX, i64::MIN, 300, -300] {
            let mut w = Writer::new();
            w.long(v);
            let b = w.into_bytes();
            assert_eq!(Reader::new(&b).long().unwrap(), v);
        }
    }

    #[test]
    fn container_round_trip() {
        let mut w = Writer::new();
        w.string("a");
        w.opt_long(Some(7));
        w.string("b");
        w.opt_long(None);
        let f = container("{}", &[("k", "v".into())], [9; 16], 2, &w.into_bytes());
        let got = records(&f, |r| Ok((r.string()?, r.opt_long()?))).unwrap();
        assert_eq!(got, vec![("a".into(), Some(7)), ("b".into(), None)]);
        assert!(records(&f[..f.len() - 1], |r| r.string()).is_err());
        assert!(
            records(&container("{}", &[], [0; 16], 0, &[]), |r| r.string())
                .unwrap()
                .is_empty()
        );
    }
}

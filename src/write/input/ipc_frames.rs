//! Arrow IPC input checked before arrow reads it. Arrow trusts the lengths a message
//! declares: a buffer said to lie past its message's body, or a file block of negative
//! length, makes it panic (slice bounds), not fail. So every message of a stream, and
//! every block a file's footer lists, is walked first (metadata only, bodies skipped) and
//! each declared length is held to the bytes that are there; what lies is refused input,
//! naming the message and the buffer.
//!
//! Guarantees: after [`check`] passed, every buffer of every record or dictionary batch
//! lies within its message's body, every body and block within the input, and every node
//! and batch length is non-negative. The walk reads at most [`MAX_METADATA`] bytes at a
//! time, whatever the input claims.

use std::io::{Read, Seek, SeekFrom};

use arrow_ipc::{Message, MessageHeader};

/// The continuation marker before a message's metadata length (IPC format 0.15 and on).
const CONTINUATION: [u8; 4] = [0xff; 4];

/// Most bytes of one message's metadata (a flatbuffer: a schema or a batch's layout; the
/// contract's is well under a kilobyte).
pub(super) const MAX_METADATA: u64 = 16 << 20;

/// Why an input was refused: `framing` when it does not even frame as IPC (its first
/// stream message, or a file's footer), else a message or block that lies.
pub(super) struct Refused {
    /// The input is not Arrow IPC at all (as far as its first lengths tell).
    pub framing: bool,
    /// Why, naming the message or block and the length.
    pub why: String,
}

/// Walk an Arrow IPC file (`file`: it starts with `ARROW1`) or stream from its start and
/// rewind it: refused for the first declared length that does not fit.
pub(super) fn check<R: Read + Seek>(r: &mut R, file: bool) -> Result<(), Refused> {
    let len = r
        .seek(SeekFrom::End(0))
        .and_then(|len| r.rewind().map(|()| len))
        .map_err(|e| Refused {
            framing: false,
            why: io(e),
        })?;
    let walked = if file {
        check_file(r, len)
    } else {
        check_stream(r, len)
    };
    walked.map_err(|(framing, why)| Refused { framing, why })?;
    r.rewind().map_err(|e| Refused {
        framing: false,
        why: io(e),
    })
}

fn io(e: std::io::Error) -> String {
    format!("unreadable: {e}")
}

/// Bytes `at..at + n` of the input, `n` bounded by [`MAX_METADATA`].
fn read_at<R: Read + Seek>(r: &mut R, at: u64, n: u64) -> Result<Vec<u8>, String> {
    if n > MAX_METADATA {
        return Err(format!(
            "metadata of {n} bytes at byte {at}, more than the {MAX_METADATA} a message may have"
        ));
    }
    r.seek(SeekFrom::Start(at)).map_err(io)?;
    let mut buf = vec![0u8; n as usize];
    r.read_exact(&mut buf).map_err(io)?;
    Ok(buf)
}

/// A stream: each message's length prefix, metadata and body, up to the end marker or the
/// end of the input; `Err((framing, why))`, framing for the first message.
fn check_stream<R: Read + Seek>(r: &mut R, len: u64) -> Result<(), (bool, String)> {
    let mut at = 0u64;
    for n in 1u64.. {
        if let Err(why) = stream_message(r, len, &mut at, n) {
            return Err((n == 1, why));
        }
        if at == u64::MAX {
            return Ok(());
        }
    }
    Ok(())
}

/// Message `n` of a stream, at byte `at` (moved past it; `u64::MAX` at the end).
fn stream_message<R: Read + Seek>(r: &mut R, len: u64, at: &mut u64, n: u64) -> Result<(), String> {
    if len - *at < 4 {
        *at = u64::MAX; // the end, without an end marker (as arrow reads it)
        return Ok(());
    }
    let mut prefix = read_at(r, *at, 4)?;
    *at += 4;
    if prefix[..] == CONTINUATION[..] {
        if len - *at < 4 {
            return Err(format!("message {n}: the input ends in its length"));
        }
        prefix = read_at(r, *at, 4)?;
        *at += 4;
    }
    let meta = i32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    if meta == 0 {
        *at = u64::MAX;
        return Ok(());
    }
    let meta = u64::try_from(meta).map_err(|_| format!("message {n}: metadata length {meta}"))?;
    if meta > len - *at {
        return Err(format!(
            "message {n}: metadata of {meta} bytes, past the end of the input ({} left)",
            len - *at
        ));
    }
    let bytes = read_at(r, *at, meta)?;
    *at += meta;
    let message = arrow_ipc::root_as_message(&bytes)
        .map_err(|e| format!("message {n}: metadata is not an IPC message ({e})"))?;
    let body = u64::try_from(message.bodyLength())
        .ok()
        .filter(|&b| b <= len - *at)
        .ok_or_else(|| {
            format!(
                "message {n}: a body of {} bytes, past the end of the input ({} left)",
                message.bodyLength(),
                len - *at
            )
        })?;
    batch_fits(&message, body).map_err(|why| format!("message {n}: {why}"))?;
    *at += body;
    Ok(())
}

/// A file: the footer (`Err((true, why))` when it is not one), and each block it lists
/// (dictionaries, then record batches).
fn check_file<R: Read + Seek>(r: &mut R, len: u64) -> Result<(), (bool, String)> {
    let footer = footer_of(r, len).map_err(|why| (true, why))?;
    blocks_fit(r, &footer.0, footer.1).map_err(|why| (false, why))
}

/// The footer's bytes and where the data before it ends.
fn footer_of<R: Read + Seek>(r: &mut R, len: u64) -> Result<(Vec<u8>, u64), String> {
    if len < 18 {
        return Err(format!("{len} bytes, too short for an Arrow IPC file"));
    }
    let tail = read_at(r, len - 10, 10)?;
    let footer_len = i32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let data_end = u64::try_from(footer_len)
        .ok()
        .and_then(|f| (len - 10).checked_sub(f))
        .filter(|&end| end >= 8)
        .ok_or_else(|| format!("a footer of {footer_len} bytes in a file of {len}"))?;
    let footer_bytes = read_at(r, data_end, len - 10 - data_end)?;
    arrow_ipc::root_as_footer(&footer_bytes)
        .map_err(|e| format!("the footer is not an IPC footer ({e})"))?;
    Ok((footer_bytes, data_end))
}

/// Each block `footer_bytes` lists within the data, which ends at `data_end`.
fn blocks_fit<R: Read + Seek>(r: &mut R, footer_bytes: &[u8], data_end: u64) -> Result<(), String> {
    let footer = arrow_ipc::root_as_footer(footer_bytes)
        .map_err(|e| format!("the footer is not an IPC footer ({e})"))?;
    let blocks = footer.dictionaries().into_iter().flatten();
    for (i, block) in blocks
        .chain(footer.recordBatches().into_iter().flatten())
        .enumerate()
    {
        let (offset, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let why = |what: &str| {
            format!(
                "block {} (offset {offset}, metadata {meta}, body {body} bytes): {what}",
                i + 1
            )
        };
        let (o, m, b) = match (
            u64::try_from(offset),
            u64::try_from(meta),
            u64::try_from(body),
        ) {
            (Ok(o), Ok(m), Ok(b)) if m >= 8 => (o, m, b),
            _ => return Err(why("a negative or too short length")),
        };
        if o.checked_add(m)
            .and_then(|e| e.checked_add(b))
            .is_none_or(|e| e > data_end)
        {
            return Err(why(&format!(
                "lies past the data, which ends at byte {data_end}"
            )));
        }
        let bytes = read_at(r, o, m)?;
        let skip = if bytes[..4] == CONTINUATION[..] { 8 } else { 4 };
        let message = arrow_ipc::root_as_message(&bytes[skip..])
            .map_err(|e| why(&format!("metadata is not an IPC message ({e})")))?;
        batch_fits(&message, b).map_err(|w| why(&w))?;
    }
    Ok(())
}

/// A record or dictionary batch's buffers within its body of `body` bytes, its lengths
/// non-negative (other messages: nothing to hold).
fn batch_fits(message: &Message<'_>, body: u64) -> Result<(), String> {
    let rb = match message.header_type() {
        MessageHeader::RecordBatch => message.header_as_record_batch(),
        MessageHeader::DictionaryBatch => {
            message.header_as_dictionary_batch().and_then(|d| d.data())
        }
        _ => None,
    };
    let Some(rb) = rb else {
        return Ok(());
    };
    if rb.length() < 0 {
        return Err(format!("a batch of {} rows", rb.length()));
    }
    for (i, node) in rb.nodes().into_iter().flatten().enumerate() {
        if node.length() < 0 || node.null_count() < 0 || node.null_count() > node.length() {
            return Err(format!(
                "column node {}: {} values of which {} null",
                i + 1,
                node.length(),
                node.null_count()
            ));
        }
    }
    for (i, b) in rb.buffers().into_iter().flatten().enumerate() {
        let (offset, length) = (b.offset(), b.length());
        let fits = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(length).ok())
            .and_then(|(o, l)| o.checked_add(l))
            .is_some_and(|end| end <= body);
        if !fits {
            return Err(format!(
                "buffer {} claims {length} bytes at offset {offset} of a body of {body} bytes",
                i + 1
            ));
        }
    }
    Ok(())
}

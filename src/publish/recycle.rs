//! Read buffers that go back to a small free list when the [`Bytes`] made from them (and
//! every slice of it) is dropped.
//!
//! Why: `verify` reads every part whole (up to one 4 MiB hash chunk at a time). A fresh
//! allocation that large is a fresh anonymous mapping, so each read paid a page fault and
//! a zeroed page per 4 KiB before the copy from the page cache (~12 % of a page-cache-hot
//! verify's CPU in perf). A recycled buffer is already mapped. Small reads use plain
//! allocations: malloc serves those from its heap without faults.

use std::sync::Mutex;

use bytes::Bytes;

/// Reads at least this large use a recycled buffer.
pub(super) const MIN_BYTES: usize = 256 * 1024;
/// Largest buffer kept (one hash chunk plus slack).
const MAX_KEPT_BYTES: usize = 8 * 1024 * 1024;
/// Most bytes kept idle on the free list, so a process that read a lot once does not
/// hold much afterwards.
const MAX_IDLE_BYTES: usize = 32 * 1024 * 1024;

static FREE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with capacity for at least `len` bytes: a recycled one when `len` is
/// large and one is free, else a new allocation.
pub(crate) fn take(len: usize) -> Vec<u8> {
    if len >= MIN_BYTES {
        let mut free = FREE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = free.iter().position(|b| b.capacity() >= len) {
            let mut b = free.swap_remove(i);
            b.clear();
            return b;
        }
    }
    Vec::with_capacity(len)
}

/// `buf` as [`Bytes`]; a large buffer returns to the free list when the last reference
/// to it is dropped.
pub(crate) fn freeze(buf: Vec<u8>) -> Bytes {
    if buf.capacity() >= MIN_BYTES && buf.capacity() <= MAX_KEPT_BYTES {
        Bytes::from_owner(Recycled(buf))
    } else {
        Bytes::from(buf)
    }
}

/// Owner of a recycled buffer's bytes.
struct Recycled(Vec<u8>);

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        let b = std::mem::take(&mut self.0);
        let mut free = FREE.lock().unwrap_or_else(|p| p.into_inner());
        let idle: usize = free.iter().map(Vec::capacity).sum();
        if idle + b.capacity() <= MAX_IDLE_BYTES {
            free.push(b);
        }
    }
}

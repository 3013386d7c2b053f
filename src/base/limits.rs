//! The most a store's readers read of one seal or decode of one page or one Parquet
//! object: [`ReadLimits`], held
//! by each opened store ([`crate::publish::AtomicPublisher::read_limits`]), never by the
//! process, so two stores in one process may have different limits.

/// Default of [`ReadLimits::max_seal_bytes`]: 64 MiB. A seal's entry is at most
/// [`MAX_ENTRY_BYTES`] (a pointer key of the longest `run_id`, a digest, an index key in
/// `ahead`), so this holds one seal of at least 64 MiB / [`MAX_ENTRY_BYTES`] (about
/// 95,000) commits even with the longest run ids (538 bytes each measured: 124,000), and
/// about 200,000 with 20-character ones; a store sealed less often needs a larger limit on
/// every reader.
pub const DEFAULT_MAX_SEAL_BYTES: u64 = 64 << 20;

/// The most bytes one sealed commit adds to a pretty-printed seal: its entry (a pointer
/// key of 194 bytes with a 128-byte `run_id`, a 64-digit sha256, the indentation and
/// field names) and its index key in `ahead` (about as long): 538 measured, with room.
pub const MAX_ENTRY_BYTES: u64 = 704;

/// Default of [`ReadLimits::max_page_bytes`]: 256 MiB, four of the longest values an input
/// may hold (64 MiB); our writer cuts pages at about 1 MiB.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 256 << 20;

/// Default of [`ReadLimits::max_decoded_bytes`]: 256 MiB. A part of the default 100,000
/// rows (demo events: 22 MiB of Arrow) is bounded at 47 MiB, so parts of up to about
/// 500,000 rows pass; a store written with more rows per commit needs a larger limit on
/// every reader.
pub const DEFAULT_MAX_DECODED_BYTES: u64 = 256 << 20;

/// What the readers of one store read at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The largest seal object read. A larger seal is refused without being read: its size
    /// is known from the listing, or from the backend before its content is sent
    /// ([`crate::publish::AtomicPublisher::get_at_most`]), so a hostile seal of any size
    /// costs no memory. Delta versions are bounded by 8 × this.
    pub max_seal_bytes: u64,
    /// The largest page of a part decoded, as its page header declares: a part with a
    /// larger page is refused without decoding it, naming it, row group and column.
    pub max_page_bytes: u64,
    /// The most one Parquet object (a part, a compacted part, a Delta checkpoint) may
    /// decode to, bounded from its page headers and its dictionaries before any value is
    /// decoded ([`crate::parts::decoded`]): a few kilobytes of dictionary-encoded pages can
    /// repeat one long value a million times. A larger object is refused, naming it.
    pub max_decoded_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_seal_bytes: DEFAULT_MAX_SEAL_BYTES,
            max_page_bytes: DEFAULT_MAX_PAGE_BYTES,
            max_decoded_bytes: DEFAULT_MAX_DECODED_BYTES,
        }
    }
}

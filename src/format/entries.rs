//! C2SP tlog-tiles entry bundles: pure data.
//!
//! A *leaf* of the store's tree is the 32-byte sha256 of a commit pointer's exact bytes
//! (the pointer is the commit's record: its part's digests, rows, run and times), in seal
//! order; its RFC 6962 leaf hash is `sha256(0x00 || leaf)`. An entry bundle holds up to
//! 256 consecutive leaves, each as a big-endian 16-bit length (32) followed by the leaf:
//! the exact leaf preimages, as tlog-tiles requires.

/// The bytes of one leaf in an entry bundle.
pub const ENTRY_BYTES: usize = 2 + 32;

/// An entry bundle of `leaves`.
pub fn bundle(leaves: &[[u8; 32]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(leaves.len() * ENTRY_BYTES);
    for l in leaves {
        out.extend_from_slice(&32u16.to_be_bytes());
        out.extend_from_slice(l);
    }
    out
}

/// The leaves of a bundle of ours, or `None` when it is not one (an entry of another
/// length, or bytes left over).
pub fn parse_bundle(bytes: &[u8]) -> Option<Vec<[u8; 32]>> {
    if !bytes.len().is_multiple_of(ENTRY_BYTES) {
        return None;
    }
    bytes
        .chunks(ENTRY_BYTES)
        .map(|c| {
            (c[..2] == 32u16.to_be_bytes())
                .then(|| <[u8; 32]>::try_from(&c[2..]).ok())
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Entry bundles round-trip and refuse other shapes.

    use super::*;

    #[test]
    fn a_bundle_is_length_prefixed_leaves_and_parses_back() {
        let leaves = [[1u8; 32], [2u8; 32]];
        let b = bundle(&leaves);
        assert_eq!(b.len(), 68);
        assert_eq!(&b[..3], &[0, 32, 1]);
        assert_eq!(parse_bundle(&b), Some(leaves.to_vec()));
        assert_eq!(parse_bundle(&b[..67]), None);
        let mut other = b.clone();
        other[1] = 31;
        assert_eq!(parse_bundle(&other), None);
    }
}

//! RFC 3161 trusted time: the request a seal's time is asked with, the TSA's response,
//! and checking a response's token against a trusted root. Pure data, no I/O.
//!
//! A seal's time is backed by a time-stamp token over the seal's digest (sha256 of the
//! seal object's exact bytes, the head digest `seal` prints): the request
//! (`TimeStampReq`: a SHA-256 message imprint, a 16-byte random nonce, `certReq` true) is
//! stored as `_lineage/timestamps/<seq>.tsq` and the TSA's answer (`TimeStampResp`, DER) as
//! `_lineage/timestamps/<seq>.tsr`, both create-only ([`crate::format::keys`]). Both are
//! the files `openssl ts` reads, so `openssl ts -verify -queryfile <seq>.tsq -in <seq>.tsr`
//! checks a seal's time without this tool.
//!
//! What [`check_token`] checks, each a reason a token is refused:
//! - the status is granted (`granted` or `grantedWithMods`) and a token is present;
//! - the token is CMS SignedData over a `TSTInfo`, with one signer whose signed attributes
//!   hold the content type, the message digest of the `TSTInfo`, and the signing-certificate
//!   attribute (ESSCertID, SHA-1; or ESSCertIDv2, SHA-256 by default) naming the signer's
//!   certificate, which the token embeds;
//! - the signature over the signed attributes verifies under that certificate's key (RSA
//!   PKCS#1 v1.5 or ECDSA P-256 / P-384, with SHA-256, SHA-384 or SHA-512);
//! - the certificate has extended key usage `timeStamping`, was valid at `genTime`, and
//!   chains (through certificates the token embeds, each a CA) to a given root.
//!
//! The imprint and nonce are compared by the caller (with the seal's digest and the stored
//! request).

mod algorithms;
mod chain;
mod query;
mod reply;
mod signer;
mod tst_info;

pub use chain::{parse_roots, Roots};
pub use query::{build_query, parse_query, Query, NONCE_BYTES};
pub use reply::{parse_reply, Token};
pub use signer::{check_token, Signer};

/// Largest TSA response read or stored: a token with a chain of a few certificates is a
/// few KB; a larger answer is refused unread beyond this.
pub const MAX_REPLY_BYTES: u64 = 256 * 1024;
/// Largest stored request read (ours are under 100 bytes).
pub const MAX_QUERY_BYTES: u64 = 4 * 1024;
/// Certificates in a chain at most (signer, intermediates, root).
pub const MAX_CHAIN: usize = 8;

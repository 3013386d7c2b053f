//! The `TimeStampReq` a seal's time is asked with.

use der::asn1::{Any, Int, OctetString};
use der::{Decode, Encode};
use spki::AlgorithmIdentifier;
use x509_tsp::{MessageImprint, TimeStampReq, TspVersion};

use super::algorithms::SHA256;

/// Bytes of the nonce ([`build_query`]).
pub const NONCE_BYTES: usize = 16;

/// A stored request, parsed: what the TSA's token must echo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The SHA-256 message imprint (the seal's digest).
    pub digest: Vec<u8>,
    /// The nonce, as its INTEGER's content bytes.
    pub nonce: Vec<u8>,
}

/// The DER `TimeStampReq` for `digest` (a seal's sha256) with `nonce` (random bytes; the
/// first is made 0x01..=0x7f so the INTEGER is positive and its encoding minimal),
/// asking for the TSA's certificate (`certReq`).
pub fn build_query(digest: &[u8; 32], mut nonce: [u8; NONCE_BYTES]) -> Result<Vec<u8>, String> {
    nonce[0] = (nonce[0] & 0x7f).max(1);
    let req = TimeStampReq {
        version: TspVersion::V1,
        message_imprint: MessageImprint {
            hash_algorithm: AlgorithmIdentifier {
                oid: SHA256,
                parameters: Some(Any::null()),
            },
            hashed_message: OctetString::new(digest.to_vec()).map_err(|e| e.to_string())?,
        },
        req_policy: None,
        nonce: Some(Int::new(&nonce).map_err(|e| e.to_string())?),
        cert_req: true,
        extensions: None,
    };
    req.to_der().map_err(|e| e.to_string())
}

/// A stored request, parsed and checked to be one [`build_query`] makes: SHA-256, a nonce,
/// `certReq`.
pub fn parse_query(bytes: &[u8]) -> Result<Query, String> {
    let req = TimeStampReq::from_der(bytes).map_err(|e| format!("not a TimeStampReq: {e}"))?;
    if req.message_imprint.hash_algorithm.oid != SHA256 {
        return Err(format!(
            "its imprint is hashed with {}, not SHA-256",
            req.message_imprint.hash_algorithm.oid
        ));
    }
    let digest = req.message_imprint.hashed_message.as_bytes().to_vec();
    if digest.len() != 32 {
        return Err(format!("its imprint is {} bytes, not 32", digest.len()));
    }
    let nonce = req.nonce.ok_or("it carries no nonce")?.as_bytes().to_vec();
    if !req.cert_req {
        return Err("it does not ask for the TSA's certificate (certReq)".into());
    }
    Ok(Query { digest, nonce })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_round_trips() {
        let q = build_query(&[7u8; 32], [0xff; NONCE_BYTES]).unwrap();
        let p = parse_query(&q).unwrap();
        assert_eq!(p.digest, vec![7u8; 32]);
        assert_eq!(p.nonce[0], 0x7f);
        assert_eq!(p.nonce.len(), NONCE_BYTES);
        assert!(parse_query(&q[..q.len() - 1]).is_err());
    }
}

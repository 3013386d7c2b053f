//! A TSA's `TimeStampResp`, parsed into what is checked of it.

use chrono::{DateTime, Utc};
use cms::signed_data::SignedData;
use der::asn1::AnyRef;
use der::{Decode, Encode, Reader, SliceReader, Tag, TagNumber, Tagged};
use x509_tsp::TimeStampResp;

use super::tst_info::TstInfo;

use super::algorithms::{decode, SHA256, SIGNED_DATA, TST_INFO};

/// A granted response's token, parsed (not yet checked: [`super::check_token`]).
#[derive(Debug, Clone)]
pub struct Token {
    /// When the TSA says the imprint existed.
    pub gen_time: DateTime<Utc>,
    /// The SHA-256 message imprint.
    pub digest: Vec<u8>,
    /// The nonce echoed, as its INTEGER's content bytes.
    pub nonce: Option<Vec<u8>>,
    /// The token's serial number (hex).
    pub serial: String,
    /// The TSA's policy.
    pub policy: String,
    /// The signed data, for [`super::check_token`].
    pub(super) signed: SignedData,
    /// The `TSTInfo`'s exact bytes (what the message digest attribute is over).
    pub(super) tst_der: Vec<u8>,
}

/// Parse a DER `TimeStampResp`: granted, with a token over a SHA-256 imprint. Hostile
/// input is refused with why (the caller bounds its size: [`super::MAX_REPLY_BYTES`]).
pub fn parse_reply(bytes: &[u8]) -> Result<Token, String> {
    let resp: TimeStampResp<'_> = decode("not a TimeStampResp", bytes)?;
    let status = resp.status.status as u8;
    if status > 1 {
        let text = resp
            .status
            .status_string
            .as_ref()
            .and_then(|s| s.first())
            .map(|s| format!(" ({})", crate::schema::rules::quote(s.as_str())))
            .unwrap_or_default();
        return Err(format!(
            "the TSA did not grant a token: status {status}{text}"
        ));
    }
    let token = resp
        .time_stamp_token
        .ok_or("the response is granted but carries no token")?;
    if token.content_type != SIGNED_DATA {
        return Err(format!(
            "the token is {}, not SignedData",
            token.content_type
        ));
    }
    let sd_der = token.content.to_der().map_err(|e| e.to_string())?;
    let sd_der = unique_certificates(&sd_der)?;
    let signed: SignedData = decode("the token's SignedData", &sd_der)?;
    if signed.encap_content_info.econtent_type != TST_INFO {
        return Err(format!(
            "the token signs {}, not a TSTInfo",
            signed.encap_content_info.econtent_type
        ));
    }
    let tst_der = signed
        .encap_content_info
        .econtent
        .as_ref()
        .ok_or("the token holds no TSTInfo")?
        .value()
        .to_vec();
    let tst: TstInfo = decode("the token's TSTInfo", &tst_der)?;
    if tst.message_imprint.hash_algorithm.oid != SHA256 {
        return Err(format!(
            "the token's imprint is hashed with {}, not SHA-256",
            tst.message_imprint.hash_algorithm.oid
        ));
    }
    Ok(Token {
        gen_time: tst.gen_time.0,
        digest: tst.message_imprint.hashed_message.as_bytes().to_vec(),
        nonce: tst.nonce.map(|n| n.as_bytes().to_vec()),
        serial: hex::encode(tst.serial_number.as_bytes()),
        policy: tst.policy.to_string(),
        signed,
        tst_der,
    })
}

/// `SignedData` with each certificate of its `certificates` SET once. DER's `SET OF`
/// allows equal elements and RFC 5652 lets the set hold more than the chain needs; OpenSSL
/// (`openssl ts -verify`) reads a token whose TSA embedded one certificate twice, but the
/// `der` crate refuses a SET with a duplicate. A duplicate adds no certificate to the pool
/// the chain is built from, and the signature is over the signed attributes, not the SET:
/// dropping it changes nothing that is checked. (An unsorted SET is sorted by `der`.)
fn unique_certificates(sd_der: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |e: der::Error| format!("the token's SignedData: {e}");
    let outer = AnyRef::from_der(sd_der).map_err(bad)?;
    let mut fields = SliceReader::new(outer.value()).map_err(bad)?;
    let certs_tag = Tag::ContextSpecific {
        constructed: true,
        number: TagNumber::N0,
    };
    let mut body = Vec::new();
    let mut dropped = 0usize;
    while !fields.is_finished() {
        let field = AnyRef::decode(&mut fields).map_err(bad)?;
        if field.tag() != certs_tag {
            body.extend(field.to_der().map_err(bad)?);
            continue;
        }
        let mut certs = SliceReader::new(field.value()).map_err(bad)?;
        let mut seen: Vec<Vec<u8>> = Vec::new();
        while !certs.is_finished() {
            let c = AnyRef::decode(&mut certs)
                .map_err(bad)?
                .to_der()
                .map_err(bad)?;
            if seen.contains(&c) {
                dropped += 1;
            } else {
                seen.push(c);
            }
        }
        let unique = seen.concat();
        let set = AnyRef::new(certs_tag, &unique).map_err(bad)?;
        body.extend(set.to_der().map_err(bad)?);
    }
    if dropped == 0 {
        return Ok(sd_der.to_vec());
    }
    AnyRef::new(outer.tag(), &body)
        .and_then(|a| a.to_der())
        .map_err(bad)
}

/// The DER of a value, re-encoded (what a signature over it is checked against).
pub(super) fn der_of<T: Encode>(v: &T) -> Result<Vec<u8>, String> {
    v.to_der().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_set_holding_one_certificate_twice_keeps_it_once() {
        // SEQUENCE { INTEGER 1, [0] { SEQUENCE { INTEGER 5 }, SEQUENCE { INTEGER 5 },
        // SEQUENCE { INTEGER 4 } }, SET {} }
        let twice = b"\x30\x16\x02\x01\x01\xa0\x0f\x30\x03\x02\x01\x05\x30\x03\x02\x01\x05\x30\x03\x02\x01\x04\x31\x00";
        let once = b"\x30\x11\x02\x01\x01\xa0\x0a\x30\x03\x02\x01\x05\x30\x03\x02\x01\x04\x31\x00";
        assert_eq!(unique_certificates(twice).unwrap(), once.to_vec());
        assert_eq!(
            unique_certificates(once).unwrap(),
            once.to_vec(),
            "unchanged"
        );
        assert!(unique_certificates(b"\x30\x05\xa0\x03\x30\x05").is_err());
    }

    #[test]
    fn garbage_is_refused_not_a_panic() {
        for bad in [
            &b""[..],
            b"\x30",
            b"\x30\x03\x02\x01\x02",
            b"<html>down</html>",
        ] {
            assert!(parse_reply(bad).is_err());
        }
    }
}

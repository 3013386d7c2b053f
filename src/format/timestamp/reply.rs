//! A TSA's `TimeStampResp`, parsed into what is checked of it.

use chrono::{DateTime, Utc};
use cms::signed_data::SignedData;
use der::Encode;
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

/// The DER of a value, re-encoded (what a signature over it is checked against).
pub(super) fn der_of<T: Encode>(v: &T) -> Result<Vec<u8>, String> {
    v.to_der().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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

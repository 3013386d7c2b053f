//! `TSTInfo` (RFC 3161 §2.4.2) as a TSA writes it: like `x509_tsp::TstInfo`, but whose
//! `genTime` may carry fractional seconds (`YYYYMMDDHHMMSS[.f]Z`, which RFC 3161 allows and
//! TSAs use; the `der` crate's `GeneralizedTime` refuses them).

use chrono::{DateTime, Utc};
use der::asn1::{Int, ObjectIdentifier};
use der::{DecodeValue, EncodeValue, FixedTag, Header, Length, Reader, Sequence, Tag, Writer};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::Extensions;
use x509_tsp::{Accuracy, MessageImprint, TspVersion};

/// RFC 3161 `TSTInfo`.
#[derive(Debug, Clone, Sequence)]
pub(super) struct TstInfo {
    pub(super) version: TspVersion,
    pub(super) policy: ObjectIdentifier,
    pub(super) message_imprint: MessageImprint,
    pub(super) serial_number: Int,
    pub(super) gen_time: GenTime,
    #[asn1(optional = "true")]
    pub(super) accuracy: Option<Accuracy>,
    #[asn1(default = "Default::default")]
    pub(super) ordering: bool,
    #[asn1(optional = "true")]
    pub(super) nonce: Option<Int>,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub(super) tsa: Option<GeneralName>,
    #[asn1(context_specific = "1", tag_mode = "IMPLICIT", optional = "true")]
    pub(super) extensions: Option<Extensions>,
}

/// A `GeneralizedTime` in UTC, with optional fractional seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GenTime(pub(super) DateTime<Utc>);

/// Longest `genTime` accepted (14 digits, a dot, nanoseconds, `Z`).
const MAX_GEN_TIME: usize = 25;

impl FixedTag for GenTime {
    const TAG: Tag = Tag::GeneralizedTime;
}

impl<'a> DecodeValue<'a> for GenTime {
    fn decode_value<R: Reader<'a>>(reader: &mut R, header: Header) -> der::Result<Self> {
        if usize::try_from(header.length)? > MAX_GEN_TIME {
            return Err(Self::TAG.value_error());
        }
        let bytes = reader.read_vec(header.length)?;
        let s = std::str::from_utf8(&bytes).map_err(|_| Self::TAG.value_error())?;
        parse(s).map(GenTime).ok_or_else(|| Self::TAG.value_error())
    }
}

/// `YYYYMMDDHHMMSS[.f]Z` (DER: no trailing zero in the fraction, no bare dot).
fn parse(s: &str) -> Option<DateTime<Utc>> {
    let body = s.strip_suffix('Z')?;
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (body, None),
    };
    if whole.len() != 14 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos = match frac {
        None => 0,
        Some(f)
            if (1..=9).contains(&f.len())
                && f.bytes().all(|b| b.is_ascii_digit())
                && !f.ends_with('0') =>
        {
            format!("{f:0<9}").parse::<u32>().ok()?
        }
        Some(_) => return None,
    };
    let n = |r: std::ops::Range<usize>| whole.get(r)?.parse::<u32>().ok();
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(n(0..4)?).ok()?, n(4..6)?, n(6..8)?)?;
    let t = date.and_hms_nano_opt(n(8..10)?, n(10..12)?, n(12..14)?, nanos)?;
    Some(t.and_utc())
}

impl EncodeValue for GenTime {
    fn value_len(&self) -> der::Result<Length> {
        Length::try_from(self.text().len())
    }
    fn encode_value(&self, writer: &mut impl Writer) -> der::Result<()> {
        writer.write(self.text().as_bytes())
    }
}

impl GenTime {
    /// `YYYYMMDDHHMMSS[.f]Z`, the fraction without trailing zeros.
    fn text(&self) -> String {
        let whole = self.0.format("%Y%m%d%H%M%S").to_string();
        let frac = format!("{:09}", self.0.timestamp_subsec_nanos());
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!("{whole}Z")
        } else {
            format!("{whole}.{frac}Z")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use der::{Decode, Encode};

    #[test]
    fn fractional_seconds_round_trip() {
        for s in [
            "20260713060000Z",
            "20260713060000.5Z",
            "20260713060000.123456Z",
        ] {
            let mut der = vec![0x18, s.len() as u8];
            der.extend_from_slice(s.as_bytes());
            let t = GenTime::from_der(&der).unwrap();
            assert_eq!(t.to_der().unwrap(), der);
        }
        for bad in [
            "20260713060000",
            "20260713060000.Z",
            "20260713060000.50Z",
            "2026071306Z",
        ] {
            let mut der = vec![0x18, bad.len() as u8];
            der.extend_from_slice(bad.as_bytes());
            assert!(GenTime::from_der(&der).is_err(), "{bad}");
        }
    }
}

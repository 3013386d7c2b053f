//! Canonical CRS identifiers: every spelling of an EPSG code becomes `EPSG:<code>`.
//!
//! Why: the CRS is a partition key. `epsg:4326`, `EPSG::4326` and the OGC URN of the same
//! code must land in one partition (the design note's "un-canonicalized target_crs
//! exploding partitions"), and an auditor must be able to trust that the code names a
//! real CRS. Codes are checked against the EPSG table shipped by the `crs-definitions`
//! crate (EPSG projected, geographic and compound CRSs, codes 2000..=32766).
//!
//! `OGC:CRS84` is refused on purpose: it has longitude/latitude axis order and is not
//! `EPSG:4326` (latitude/longitude). Recording one as the other would misstate what a
//! transformation did, so the caller must name the EPSG code of the CRS actually used.

use crate::base::error::{Error, Result};

/// Parse any usual spelling of an EPSG CRS and return its canonical `EPSG:<code>` form.
///
/// Accepted (case-insensitive, surrounding spaces ignored; control characters and
/// anything not ASCII refused): `EPSG:4326`,
/// `EPSG::4326`, `urn:ogc:def:crs:EPSG::4326`, `urn:ogc:def:crs:EPSG:<version>:4326`,
/// `http(s)://www.opengis.net/def/crs/EPSG/<version>/4326`,
/// `http://www.opengis.net/gml/srs/epsg.xml#4326`.
pub fn canonicalize(input: &str) -> Result<String, String> {
    // Plain ASCII only: a control character (`EPSG:4326\n`) or a look-alike (full-width
    // digits) is refused, not trimmed or normalised away.
    if let Some(c) = input.chars().find(|c| c.is_control() || !c.is_ascii()) {
        return Err(format!(
            "{} contains {c:?} (U+{:04X}): a CRS identifier is plain ASCII, without control characters",
            crate::schema::rules::quote(input),
            u32::from(c)
        ));
    }
    let s = input.trim_matches(' ');
    let shown = crate::schema::rules::cut(s);
    let lower = s.to_ascii_lowercase();
    if lower.contains("crs84") || lower.contains("crs:84") {
        return Err(format!(
            "`{shown}` is OGC:CRS84 (longitude/latitude), which is not EPSG:4326; \
             give the EPSG code of the CRS actually used"
        ));
    }
    let code = parse_code(&lower).ok_or_else(|| {
        format!("`{shown}` is not an EPSG CRS identifier (expected e.g. EPSG:4326 or urn:ogc:def:crs:EPSG::4326)")
    })?;
    let known = u16::try_from(code)
        .ok()
        .and_then(crs_definitions::from_code)
        .is_some();
    if !known {
        return Err(format!(
            "`{shown}`: EPSG code {code} is not a coordinate reference system in the EPSG registry"
        ));
    }
    Ok(format!("EPSG:{code}"))
}

/// Like [`canonicalize`], as a library error naming the field.
pub fn canonicalize_field(input: &str, field: &str, location: &str) -> Result<String> {
    canonicalize(input).map_err(|m| Error::record(format!("{location}, field `{field}`"), m))
}

fn parse_code(lower: &str) -> Option<u32> {
    let rest = if let Some(r) = lower.strip_prefix("urn:ogc:def:crs:epsg:") {
        // `:<code>` (empty version) or `<version>:<code>`.
        r.rsplit_once(':').and_then(|(version, code)| {
            (version.is_empty() || is_version(version)).then_some(code)
        })?
    } else if let Some(r) = lower
        .strip_prefix("http://www.opengis.net/def/crs/epsg/")
        .or_else(|| lower.strip_prefix("https://www.opengis.net/def/crs/epsg/"))
    {
        let (version, code) = r.split_once('/')?;
        if !is_version(version) {
            return None;
        }
        code
    } else if let Some(r) = lower
        .strip_prefix("http://www.opengis.net/gml/srs/epsg.xml#")
        .or_else(|| lower.strip_prefix("https://www.opengis.net/gml/srs/epsg.xml#"))
    {
        r
    } else if let Some(r) = lower.strip_prefix("epsg:") {
        r.strip_prefix(':').unwrap_or(r)
    } else {
        return None;
    };
    if rest.is_empty() || rest.len() > 6 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

fn is_version(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crs_spellings_canonicalise_and_unknowns_are_refused() {
        for s in [
            "EPSG:4326",
            "epsg:4326",
            "EPSG::4326",
            " urn:ogc:def:crs:EPSG::4326 ",
            "urn:ogc:def:crs:EPSG:9.8.1:4326",
            "http://www.opengis.net/def/crs/EPSG/0/4326",
            "https://www.opengis.net/def/crs/EPSG/9.9.1/4326",
            "http://www.opengis.net/gml/srs/epsg.xml#4326",
        ] {
            assert_eq!(canonicalize(s).as_deref(), Ok("EPSG:4326"), "{s}");
        }
        assert_eq!(canonicalize("EPSG:25832").as_deref(), Ok("EPSG:25832"));
        let e = canonicalize("OGC:CRS84").unwrap_err();
        assert!(e.contains("not EPSG:4326"), "{e}");
        assert!(canonicalize("urn:ogc:def:crs:OGC:1.3:CRS84").is_err());
        let e = canonicalize("EPSG:999999").unwrap_err();
        assert!(
            e.contains("not a coordinate reference system in the EPSG registry"),
            "{e}"
        );
        assert!(canonicalize("EPSG:1234").is_err(), "1234 is no CRS code");
        for bad in [
            "4326",
            "WGS84",
            "EPSG:",
            "EPSG:43a6",
            "EPSG:4326/x",
            "urn:ogc:def:crs:EPSG:x:4326",
            "",
        ] {
            assert!(canonicalize(bad).is_err(), "{bad:?} must be refused");
        }
    }
}

//! The trusted roots (`verify --tsa-root`), and a TSA certificate's chain to one of them.

use chrono::{DateTime, Utc};
use der::{Decode, Encode};
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage};
use x509_cert::Certificate;

use super::algorithms::TIME_STAMPING;
use super::algorithms::{decode, signature_hash, verify, BASIC_CONSTRAINTS, EXT_KEY_USAGE};
use super::MAX_CHAIN;

/// The root certificates a token must chain to.
#[derive(Debug, Clone)]
pub struct Roots(Vec<Certificate>);

impl Roots {
    /// The roots' subjects, for messages.
    pub fn subjects(&self) -> Vec<String> {
        self.0.iter().map(subject).collect()
    }
}

/// Certificates from PEM (one or more `CERTIFICATE` blocks) or one DER certificate.
pub fn parse_roots(bytes: &[u8]) -> Result<Roots, String> {
    let certs = if !bytes.starts_with(&[0x30]) {
        Certificate::load_pem_chain(bytes).map_err(|e| format!("not PEM certificates: {e}"))?
    } else {
        vec![Certificate::from_der(bytes).map_err(|e| format!("not a DER certificate: {e}"))?]
    };
    if certs.is_empty() {
        return Err("holds no certificate".into());
    }
    Ok(Roots(certs))
}

/// A certificate's subject, for messages.
pub(super) fn subject(c: &Certificate) -> String {
    c.tbs_certificate.subject.to_string()
}

/// Whether `c` names `timeStamping` in its extended key usage.
pub(super) fn time_stamping(c: &Certificate) -> Result<(), String> {
    let eku = extension(c, &EXT_KEY_USAGE).ok_or_else(|| {
        format!(
            "the TSA certificate {} has no extended key usage",
            subject(c)
        )
    })?;
    let eku: ExtendedKeyUsage = decode("its extended key usage", eku)?;
    if eku.0.contains(&TIME_STAMPING) {
        Ok(())
    } else {
        Err(format!(
            "the TSA certificate {} is not for timeStamping (extended key usage)",
            subject(c)
        ))
    }
}

/// The value of extension `oid` of `c`.
pub(super) fn extension<'c>(
    c: &'c Certificate,
    oid: &der::asn1::ObjectIdentifier,
) -> Option<&'c [u8]> {
    c.tbs_certificate
        .extensions
        .as_ref()?
        .iter()
        .find(|e| &e.extn_id == oid)
        .map(|e| e.extn_value.as_bytes())
}

/// Chain `signer` to one of `roots` through CA certificates of `pool` (those the token
/// embeds), each certificate but the root valid at `at`; the root's subject.
pub(super) fn to_root(
    signer: &Certificate,
    pool: &[Certificate],
    roots: &Roots,
    at: DateTime<Utc>,
) -> Result<String, String> {
    let mut cur = signer;
    for _ in 0..MAX_CHAIN {
        if roots.0.iter().any(|r| r == cur) {
            return Ok(subject(cur));
        }
        valid_at(cur, at)?;
        let issuer = &cur.tbs_certificate.issuer;
        if let Some(r) = roots
            .0
            .iter()
            .find(|r| &r.tbs_certificate.subject == issuer && signed_by(cur, r).is_ok())
        {
            return Ok(subject(r));
        }
        cur = pool
            .iter()
            .find(|c| {
                &c.tbs_certificate.subject == issuer
                    && *c != cur
                    && is_ca(c)
                    && signed_by(cur, c).is_ok()
            })
            .ok_or_else(|| {
                format!(
                    "{} does not chain to the given root ({}): its issuer {issuer} is neither that root nor a CA certificate the token embeds",
                    subject(cur),
                    roots.subjects().join("; ")
                )
            })?;
    }
    Err(format!("the chain is longer than {MAX_CHAIN} certificates"))
}

/// Whether `child`'s signature verifies under `issuer`'s key.
fn signed_by(child: &Certificate, issuer: &Certificate) -> Result<(), String> {
    let hash = signature_hash(&child.signature_algorithm.oid, None)?;
    let tbs = child.tbs_certificate.to_der().map_err(|e| e.to_string())?;
    let sig = child
        .signature
        .as_bytes()
        .ok_or("a signature of unaligned bits")?;
    verify(
        &issuer.tbs_certificate.subject_public_key_info,
        hash,
        &tbs,
        sig,
    )
}

/// Whether `c` is a CA (basic constraints).
fn is_ca(c: &Certificate) -> bool {
    extension(c, &BASIC_CONSTRAINTS)
        .and_then(|v| BasicConstraints::from_der(v).ok())
        .is_some_and(|b| b.ca)
}

/// Whether `c` was valid at `at`.
fn valid_at(c: &Certificate, at: DateTime<Utc>) -> Result<(), String> {
    let v = &c.tbs_certificate.validity;
    let secs = |t: x509_cert::time::Time| t.to_unix_duration().as_secs();
    let at_s = u64::try_from(at.timestamp()).unwrap_or(0);
    if at_s < secs(v.not_before) || at_s > secs(v.not_after) {
        return Err(format!(
            "{} was not valid at {} (valid {} to {})",
            subject(c),
            crate::base::time::rfc3339(at),
            v.not_before,
            v.not_after
        ));
    }
    Ok(())
}

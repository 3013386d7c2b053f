//! Checking a token's CMS signature and its signer ([`check_token`]).

use cms::cert::CertificateChoices;
use cms::signed_data::{SignerIdentifier, SignerInfo};
use der::asn1::{Any, ObjectIdentifier, OctetString};
use der::Sequence;
use spki::AlgorithmIdentifierOwned;
use x509_cert::attr::Attribute;
use x509_cert::Certificate;

use super::algorithms::{
    decode, signature_hash, verify, Hash, CONTENT_TYPE, MESSAGE_DIGEST, SHA256, SIGNING_CERT,
    SIGNING_CERT_V2, TST_INFO,
};
use super::chain::{extension, subject, time_stamping, to_root, Roots};
use super::reply::{der_of, Token};

/// Who signed a token that checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The TSA certificate's subject.
    pub subject: String,
    /// The root it chains to.
    pub root: String,
}

/// Check `token`'s signature, signer and chain to `roots` (see the module docs of
/// [`super`]); not its imprint or nonce.
pub fn check_token(token: &Token, roots: &Roots) -> Result<Signer, String> {
    let sd = &token.signed;
    let [si] = sd.signer_infos.0.as_slice() else {
        return Err(format!(
            "the token has {} signers, not one",
            sd.signer_infos.0.len()
        ));
    };
    let certs: Vec<Certificate> = sd
        .certificates
        .iter()
        .flat_map(|s| s.0.iter())
        .filter_map(|c| match c {
            CertificateChoices::Certificate(c) => Some(c.clone()),
            CertificateChoices::Other(_) => None,
        })
        .collect();
    let cert = find_signer(&si.sid, &certs)?;
    signed_attributes(token, si, cert)?;
    let attrs = si.signed_attrs.as_ref().ok_or("no signed attributes")?;
    let hash = signature_hash(&si.signature_algorithm.oid, Some(&si.digest_alg.oid))?;
    verify(
        &cert.tbs_certificate.subject_public_key_info,
        hash,
        &der_of(attrs)?,
        si.signature.as_bytes(),
    )
    .map_err(|e| format!("the token's signature by {}: {e}", subject(cert)))?;
    time_stamping(cert)?;
    let root = to_root(cert, &certs, roots, token.gen_time)?;
    Ok(Signer {
        subject: subject(cert),
        root,
    })
}

/// The embedded certificate `sid` names.
fn find_signer<'c>(
    sid: &SignerIdentifier,
    certs: &'c [Certificate],
) -> Result<&'c Certificate, String> {
    const SUBJECT_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.14");
    certs
        .iter()
        .find(|c| match sid {
            SignerIdentifier::IssuerAndSerialNumber(ias) => {
                c.tbs_certificate.issuer == ias.issuer
                    && c.tbs_certificate.serial_number == ias.serial_number
            }
            SignerIdentifier::SubjectKeyIdentifier(ski) => extension(c, &SUBJECT_KEY_ID)
                .and_then(|v| decode::<OctetString>("", v).ok())
                .is_some_and(|v| v == ski.0),
        })
        .ok_or_else(|| "the token does not embed its signer's certificate".to_string())
}

/// The signed attributes: content type `TSTInfo`, the message digest of the `TSTInfo`,
/// and the signing-certificate attribute naming `cert` first.
fn signed_attributes(token: &Token, si: &SignerInfo, cert: &Certificate) -> Result<(), String> {
    let attrs = si
        .signed_attrs
        .as_ref()
        .ok_or("the token's signer has no signed attributes")?;
    let one = |oid: &ObjectIdentifier| -> Result<Option<&Any>, String> {
        let Some(a) = attrs.iter().find(|a: &&Attribute| &a.oid == oid) else {
            return Ok(None);
        };
        match a.values.as_slice() {
            [v] => Ok(Some(v)),
            _ => Err(format!(
                "signed attribute {oid} has {} values",
                a.values.len()
            )),
        }
    };
    let ct = one(&CONTENT_TYPE)?.ok_or("no content-type attribute")?;
    if ct.decode_as::<ObjectIdentifier>().ok() != Some(TST_INFO) {
        return Err("the content-type attribute is not TSTInfo".into());
    }
    let md = one(&MESSAGE_DIGEST)?.ok_or("no message-digest attribute")?;
    let md = md
        .decode_as::<OctetString>()
        .map_err(|e| format!("the message-digest attribute: {e}"))?;
    let digest = Hash::of(&si.digest_alg.oid)?;
    if digest == Hash::Sha1 || md.as_bytes() != digest.digest(&token.tst_der) {
        return Err(
            "the message-digest attribute is not the digest of the TSTInfo (the token was changed)"
                .into(),
        );
    }
    let cert_der = der_of(cert)?;
    let (hash, named) = if let Some(v) = one(&SIGNING_CERT_V2)? {
        let sc: SigningCertificateV2 = decode("the signing-certificate-v2 attribute", &der_of(v)?)?;
        let id = sc
            .certs
            .first()
            .ok_or("an empty signing-certificate-v2 attribute")?;
        let alg = id.hash_algorithm.as_ref().map_or(SHA256, |a| a.oid);
        (Hash::of(&alg)?, id.cert_hash.as_bytes().to_vec())
    } else if let Some(v) = one(&SIGNING_CERT)? {
        let sc: SigningCertificate = decode("the signing-certificate attribute", &der_of(v)?)?;
        let id = sc
            .certs
            .first()
            .ok_or("an empty signing-certificate attribute")?;
        (Hash::Sha1, id.cert_hash.as_bytes().to_vec())
    } else {
        return Err("no signing-certificate attribute (ESSCertID or ESSCertIDv2)".into());
    };
    if hash.digest(&cert_der) != named {
        return Err(format!(
            "the signing-certificate attribute names another certificate than the signer's ({})",
            subject(cert)
        ));
    }
    Ok(())
}

// The ESS attributes (RFC 2634, RFC 5035). `policies` and `issuer_serial` are decoded so
// that a value holding them parses; only the first certificate's hash is checked (it names
// the signer's certificate, which the token embeds and the chain check follows).

/// RFC 2634 `SigningCertificate`.
#[derive(Debug, Sequence)]
struct SigningCertificate {
    certs: Vec<EssCertId>,
    #[asn1(optional = "true")]
    #[allow(dead_code)]
    policies: Option<Any>,
}

/// RFC 2634 `ESSCertID`.
#[derive(Debug, Sequence)]
struct EssCertId {
    cert_hash: OctetString,
    #[asn1(optional = "true")]
    #[allow(dead_code)]
    issuer_serial: Option<Any>,
}

/// RFC 5035 `SigningCertificateV2`.
#[derive(Debug, Sequence)]
struct SigningCertificateV2 {
    certs: Vec<EssCertIdV2>,
    #[asn1(optional = "true")]
    #[allow(dead_code)]
    policies: Option<Any>,
}

/// RFC 5035 `ESSCertIDv2` (hash algorithm SHA-256 when absent).
#[derive(Debug, Sequence)]
struct EssCertIdV2 {
    #[asn1(optional = "true")]
    hash_algorithm: Option<AlgorithmIdentifierOwned>,
    cert_hash: OctetString,
    #[asn1(optional = "true")]
    #[allow(dead_code)]
    issuer_serial: Option<Any>,
}

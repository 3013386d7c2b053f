//! The object identifiers, digests and signature algorithms a token is checked with.

use der::asn1::ObjectIdentifier as Oid;
use der::Decode;
use rsa::pkcs1::DecodeRsaPublicKey;
use sha2::Digest;
use spki::SubjectPublicKeyInfoOwned;

pub(super) const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");
pub(super) const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
pub(super) const SHA384: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.2");
pub(super) const SHA512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.3");
const RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.1");
const RSA_SHA256: Oid = Oid::new_unwrap("1.2.840.113549.1.1.11");
const RSA_SHA384: Oid = Oid::new_unwrap("1.2.840.113549.1.1.12");
const RSA_SHA512: Oid = Oid::new_unwrap("1.2.840.113549.1.1.13");
const EC_PUBLIC_KEY: Oid = Oid::new_unwrap("1.2.840.10045.2.1");
const ECDSA_SHA256: Oid = Oid::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_SHA384: Oid = Oid::new_unwrap("1.2.840.10045.4.3.3");
const ECDSA_SHA512: Oid = Oid::new_unwrap("1.2.840.10045.4.3.4");
const P256: Oid = Oid::new_unwrap("1.2.840.10045.3.1.7");
const P384: Oid = Oid::new_unwrap("1.3.132.0.34");
/// `id-signedData`.
pub(super) const SIGNED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.2");
/// `id-ct-TSTInfo`.
pub(super) const TST_INFO: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.1.4");
/// Signed attributes: content type, message digest, signing certificate (v1, v2).
pub(super) const CONTENT_TYPE: Oid = Oid::new_unwrap("1.2.840.113549.1.9.3");
pub(super) const MESSAGE_DIGEST: Oid = Oid::new_unwrap("1.2.840.113549.1.9.4");
pub(super) const SIGNING_CERT: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.2.12");
pub(super) const SIGNING_CERT_V2: Oid = Oid::new_unwrap("1.2.840.113549.1.9.16.2.47");
/// Certificate extensions: extended key usage, basic constraints; `id-kp-timeStamping`.
pub(super) const EXT_KEY_USAGE: Oid = Oid::new_unwrap("2.5.29.37");
pub(super) const BASIC_CONSTRAINTS: Oid = Oid::new_unwrap("2.5.29.19");
pub(super) const TIME_STAMPING: Oid = Oid::new_unwrap("1.3.6.1.5.5.7.3.8");

/// A digest a token may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hash {
    /// Only to match a certificate to an ESSCertID, never in a signature.
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    /// The digest of a digest algorithm's identifier.
    pub(super) fn of(oid: &Oid) -> Result<Self, String> {
        Ok(match *oid {
            SHA1 => Hash::Sha1,
            SHA256 => Hash::Sha256,
            SHA384 => Hash::Sha384,
            SHA512 => Hash::Sha512,
            _ => return Err(format!("digest algorithm {oid} is not supported")),
        })
    }

    pub(super) fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Hash::Sha256 => sha2::Sha256::digest(data).to_vec(),
            Hash::Sha384 => sha2::Sha384::digest(data).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(data).to_vec(),
        }
    }
}

/// The digest a signature algorithm signs with; `digest_alg` for the bare `rsaEncryption`
/// and `id-ecPublicKey` that CMS signers may name instead.
pub(super) fn signature_hash(sig_alg: &Oid, digest_alg: Option<&Oid>) -> Result<Hash, String> {
    let h = match *sig_alg {
        RSA_SHA256 | ECDSA_SHA256 => Hash::Sha256,
        RSA_SHA384 | ECDSA_SHA384 => Hash::Sha384,
        RSA_SHA512 | ECDSA_SHA512 => Hash::Sha512,
        RSA | EC_PUBLIC_KEY => match digest_alg {
            Some(d) => Hash::of(d)?,
            None => return Err(format!("signature algorithm {sig_alg} names no digest")),
        },
        _ => return Err(format!("signature algorithm {sig_alg} is not supported")),
    };
    if h == Hash::Sha1 {
        return Err("SHA-1 signatures are not accepted".into());
    }
    Ok(h)
}

/// Check `sig` over `message` (hashed with `hash`) under `key`: RSA PKCS#1 v1.5, or ECDSA on
/// P-256 or P-384 (DER signature).
pub(super) fn verify(
    key: &SubjectPublicKeyInfoOwned,
    hash: Hash,
    message: &[u8],
    sig: &[u8],
) -> Result<(), String> {
    let hashed = hash.digest(message);
    let raw = key.subject_public_key.raw_bytes();
    let bad = |e: &dyn std::fmt::Display| format!("the signature does not verify ({e})");
    match key.algorithm.oid {
        RSA => {
            let pk = rsa::RsaPublicKey::from_pkcs1_der(raw)
                .map_err(|e| format!("not an RSA public key: {e}"))?;
            let scheme = match hash {
                Hash::Sha256 => rsa::Pkcs1v15Sign::new::<sha2::Sha256>(),
                Hash::Sha384 => rsa::Pkcs1v15Sign::new::<sha2::Sha384>(),
                Hash::Sha512 => rsa::Pkcs1v15Sign::new::<sha2::Sha512>(),
                Hash::Sha1 => return Err("SHA-1 signatures are not accepted".into()),
            };
            pk.verify(scheme, &hashed, sig).map_err(|e| bad(&e))
        }
        EC_PUBLIC_KEY => {
            use p256::ecdsa::signature::hazmat::PrehashVerifier;
            let curve = key
                .algorithm
                .parameters
                .as_ref()
                .ok_or("an EC key without its curve")?
                .decode_as::<Oid>()
                .map_err(|e| format!("an EC key's curve: {e}"))?;
            match curve {
                P256 => {
                    let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(raw)
                        .map_err(|e| format!("not a P-256 key: {e}"))?;
                    let s = p256::ecdsa::Signature::from_der(sig).map_err(|e| bad(&e))?;
                    vk.verify_prehash(&hashed, &s).map_err(|e| bad(&e))
                }
                P384 => {
                    let vk = p384::ecdsa::VerifyingKey::from_sec1_bytes(raw)
                        .map_err(|e| format!("not a P-384 key: {e}"))?;
                    let s = p384::ecdsa::Signature::from_der(sig).map_err(|e| bad(&e))?;
                    vk.verify_prehash(&hashed, &s).map_err(|e| bad(&e))
                }
                c => Err(format!("EC curve {c} is not supported (P-256, P-384 are)")),
            }
        }
        o => Err(format!("public key algorithm {o} is not supported")),
    }
}

/// Decode a DER value, naming what it was meant to be.
pub(super) fn decode<'a, T: Decode<'a>>(what: &str, bytes: &'a [u8]) -> Result<T, String> {
    T::from_der(bytes).map_err(|e| format!("{what}: {e}"))
}

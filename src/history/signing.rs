//! Keys for signing seals: Ed25519 key pairs made by `lineage keygen`, read from their
//! files, and the short key ids seals and messages name.

use std::path::Path;

use base64::Engine;
use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A short, printable id of a public key: the first 16 hex digits of its sha256 (the one
/// id seals and writer signatures name, [`crate::parts::writer_sig::key_id`]).
pub fn key_id(k: &VerifyingKey) -> String {
    crate::parts::writer_sig::key_id(k)
}

/// Parse a base64 Ed25519 public key as stored in a seal.
pub fn parse_public_key(b64: &str) -> Result<VerifyingKey> {
    let bytes: [u8; 32] = B64
        .decode(b64.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::Signature("a public key is 32 bytes of base64".into()))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|_| Error::Signature("not a valid Ed25519 public key".into()))
}

const SECRET_TAG: &str = "lineage-ed25519-secret:";
const PUBLIC_TAG: &str = "lineage-ed25519-public:";

/// Make a key pair: `<prefix>.key` (secret, mode 0600) and `<prefix>.pub`. Refuses to
/// overwrite either file. Returns the key id.
pub fn keygen(prefix: &Path) -> Result<String> {
    keygen_with(prefix, false, None)
}

/// [`keygen`]; with `replace`, existing key files at `prefix` are replaced (each written
/// whole beside it and renamed over it) instead of refused; with `origin`, `<prefix>.vkey`
/// is written too: the C2SP verifier key of checkpoints with that origin
/// ([`crate::format::checkpoint::vkey`]).
pub fn keygen_with(prefix: &Path, replace: bool, origin: Option<&str>) -> Result<String> {
    if let Some(why) = origin.and_then(crate::format::checkpoint::name_problem) {
        return Err(Error::invalid(
            Param::Origin,
            text![format!("the origin {why}")],
        ));
    }
    let mut seed = [0u8; 32];
    crate::base::rng::os_random(&mut seed)?;
    let sk = SigningKey::from_bytes(&seed);
    let vk = sk.verifying_key();
    let secret = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    let verifier = prefix.with_extension("vkey");
    if !replace {
        for p in [&secret, &public]
            .into_iter()
            .chain(origin.map(|_| &verifier))
        {
            if p.exists() {
                return Err(Error::usage(text![
                    format!("{} exists; refusing to overwrite a key (", p.display()),
                    Param::Force,
                    " replaces it)"
                ]));
            }
        }
    }
    let put = |path: &Path, bytes: &[u8], is_secret: bool| -> Result<()> {
        if !replace {
            return write_new(path, bytes, is_secret);
        }
        let tmp = path.with_extension(format!(
            "{}.{}.tmp",
            path.extension().and_then(|e| e.to_str()).unwrap_or(""),
            crate::base::rng::random_uuid().simple()
        ));
        write_new(&tmp, bytes, is_secret)
            .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e)))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
    };
    put(
        &secret,
        format!("{SECRET_TAG}{}\n", B64.encode(seed)).as_bytes(),
        true,
    )?;
    put(
        &public,
        format!("{PUBLIC_TAG}{}\n", B64.encode(vk.as_bytes())).as_bytes(),
        false,
    )?;
    if let Some(o) = origin {
        let v = crate::format::checkpoint::vkey(o, vk.as_bytes());
        put(&verifier, format!("{v}\n").as_bytes(), false)?;
    }
    Ok(key_id(&vk))
}

/// Write a new key file: the secret key 0600, the public one 0644, whatever the umask
/// (set on the open file, which the umask does not touch: under `umask 000` the public
/// key was 0666, writable by anyone).
fn write_new(path: &Path, bytes: &[u8], secret: bool) -> Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    let mode = if secret { 0o600 } else { 0o644 };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = o.open(path).map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(path, e))?;
    }
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(path, e))
}

fn read_tagged(path: &Path, tag: &str, what: &str) -> Result<[u8; 32]> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    // Never echo the file's content: it may be a secret key given in the wrong place.
    text.trim()
        .strip_prefix(tag)
        .and_then(|b| B64.decode(b).ok())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| {
            Error::Signature(format!(
                "{} is not a {what} made by `lineage keygen`",
                path.display()
            ))
        })
}

/// Refuse a secret key file that others can read (any group or other permission bit, as
/// ssh refuses one) unless `allow_readable`, or that lies inside the local store at
/// `store_root` (whatever can read or copy the store, a reader, a replica, would have it).
pub fn check_signing_key_file(
    path: &Path,
    store_root: Option<&Path>,
    allow_readable: bool,
) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if let Some(root) = store_root {
        let (key, root) = (std::fs::canonicalize(path), std::fs::canonicalize(root));
        if let (Ok(key), Ok(root)) = (key, root) {
            if key.starts_with(&root) {
                return Err(Error::Signature(format!(
                    "the signing key {} is inside the store {}: anyone who can read or copy the store would have it; keep it outside the store",
                    path.display(),
                    root.display()
                )));
            }
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 && !allow_readable {
            return Err(Error::usage(text![
                format!(
                    "the signing key {} is accessible by others (mode {mode:04o}): `chmod 600` it (as `lineage keygen` makes it), or pass ",
                    path.display()
                ),
                Param::AllowReadableKey
            ]));
        }
    }
    #[cfg(not(unix))]
    let _ = (meta, allow_readable);
    Ok(())
}

/// Read a secret key file made by [`keygen`].
pub fn read_signing_key(path: &Path) -> Result<SigningKey> {
    Ok(SigningKey::from_bytes(&read_tagged(
        path,
        SECRET_TAG,
        "secret key",
    )?))
}

/// Read a public key file made by [`keygen`].
pub fn read_public_key(path: &Path) -> Result<VerifyingKey> {
    let b = read_tagged(path, PUBLIC_TAG, "public key")?;
    VerifyingKey::from_bytes(&b).map_err(|_| {
        Error::Signature(format!(
            "{} does not hold a valid Ed25519 key",
            path.display()
        ))
    })
}

//! Every signed seal is also a C2SP checkpoint ([`crate::format::checkpoint`]): made and
//! signed with the seal's key when the seal is made, carried in the seal
//! ([`Seal::checkpoint`]), and published create-only at
//! [`crate::format::keys::checkpoint_key`] when the seal is completed, so that any
//! completing sealer writes the same bytes and a tlog client needs nothing of ours.
//!
//! The tree is the seal's own: RFC 6962 over the sealed pointers' sha256 digests (leaf
//! `sha256(0x00 || digest)`, node `sha256(0x01 || left || right)`), so the checkpoint's
//! root is the seal's `root`, in base64.

use bytes::Bytes;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::checkpoint::{self as cp, default_origin, name_problem, UNIDENTIFIED_ORIGIN};
use crate::format::keys;
use crate::history::merkle;
use crate::history::seal::Seal;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;

/// The origin of a store's checkpoints: `given` (checked), else the default derived from
/// the store's identity ([`default_origin`]).
pub async fn origin(store: &dyn AtomicPublisher, given: Option<&str>) -> Result<String> {
    if let Some(o) = given {
        if let Some(why) = name_problem(o) {
            return Err(Error::invalid(
                Param::Origin,
                text![format!("the origin {why}")],
            ));
        }
        return Ok(o.to_string());
    }
    Ok(crate::history::identity::read_identity(store)
        .await?
        .map_or_else(
            || UNIDENTIFIED_ORIGIN.to_string(),
            |i| default_origin(&i.store_id),
        ))
}

/// The checkpoint of `seal` under `origin`, signed with `key`.
pub fn sign(origin: &str, seal: &Seal, key: &SigningKey) -> Result<String> {
    let root = merkle::parse_hash(&seal.root).ok_or_else(|| Error::internal("bad root"))?;
    let body = cp::body(origin, seal.tree_size, &root);
    let pk = key.verifying_key().to_bytes();
    let sig = key.sign(body.as_bytes());
    let line = cp::signature_line(origin, cp::key_id(origin, &pk), &sig.to_bytes());
    Ok(cp::note(&body, &[line]))
}

/// Check a checkpoint against `seal`: it parses, states the seal's tree size and root,
/// and carries a valid signature by `key` under its origin (other signatures, e.g.
/// witnesses' cosignatures, are ignored, as signed-note requires). `Err` says why not.
pub fn check(note: &str, seal: &Seal, key: &VerifyingKey) -> std::result::Result<(), String> {
    let c = cp::parse(note)?;
    if c.tree_size != seal.tree_size || hex::encode(c.root) != seal.root.to_lowercase() {
        return Err(format!(
            "states tree size {} and root {}, the seal {} and {}",
            c.tree_size,
            hex::encode(c.root),
            seal.tree_size,
            seal.root
        ));
    }
    check_signature(&c, key)
}

/// Whether `c` carries a valid Ed25519 signature by `key` named as its origin.
pub fn check_signature(c: &cp::Checkpoint, key: &VerifyingKey) -> std::result::Result<(), String> {
    let id = cp::key_id(&c.origin, key.as_bytes());
    let ours: Vec<&cp::NoteSignature> = c
        .signatures
        .iter()
        .filter(|s| s.name == c.origin && s.id == id)
        .collect();
    if ours.is_empty() {
        return Err(format!(
            "no signature by key {} under the origin {}",
            crate::history::signing::key_id(key),
            c.origin
        ));
    }
    for s in ours {
        let sig = Signature::from_slice(&s.signature).map_err(|_| "a malformed signature")?;
        key.verify(c.body.as_bytes(), &sig)
            .map_err(|_| "the signature does not verify (the checkpoint was changed)")?;
    }
    Ok(())
}

/// Publish seal `seq`'s checkpoint (when it carries one), create-only; an object already
/// there with other bytes is a conflict (`verify` names it).
pub async fn publish(store: &dyn AtomicPublisher, seq: u64, seal: &Seal) -> Result<()> {
    let Some(note) = &seal.checkpoint else {
        return Ok(());
    };
    let want = Bytes::from(note.clone().into_bytes());
    let same = want.clone();
    publish_checked(store, &keys::checkpoint_key(seq), want, |have| {
        if have == same.as_ref() {
            Ok(())
        } else {
            Err("holds another checkpoint than the seal carries; run `lineage verify`".into())
        }
    })
    .await
    .map(|_| ())
}

//! Every signed seal is also a C2SP checkpoint (issue 36 item 1), checked by an
//! implementation nobody here wrote: cloudflare/azul's `signed_note` and `tlog_tiles`
//! (ports of Go's `x/mod/sumdb/note` and `tlog`). A changed, missing or planted
//! checkpoint is refused by them and named by `verify`.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::checkpoint as cp;
use lineage_store::internal::keys;
use lineage_store::{
    keygen, read_signing_key, seal_with, AtomicPublisher, MemoryPublisher, ProblemKind, Seal,
    SealOptions, SystemClock,
};
use signed_note::{Note, StandardVerifier, VerifierList};
use tlog_tiles::{record_hash, Checkpoint, Hash};

use crate::support::audit::{append, of_kind, verify_later};
use crate::support::{lineage, ndjson, text};

/// RFC 6962's tree hash over leaf data, from the independent crate's hash functions.
fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Hash(sha256(&[])),
        1 => leaves[0],
        n => {
            let k = prev_pow2(n);
            tlog_tiles::node_hash(mth(&leaves[..k]), mth(&leaves[k..]))
        }
    }
}

fn prev_pow2(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

fn sha256(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

/// The seals of a store, parsed.
async fn seals(mem: &MemoryPublisher) -> Vec<Seal> {
    let mut out = Vec::new();
    for o in mem.list(keys::SEALS_PREFIX).await.unwrap() {
        let b = mem.get(&o.key).await.unwrap().unwrap();
        out.push(Seal::from_bytes(&o.key, &b).unwrap());
    }
    out
}

/// A store with `n` signed seals; returns it, the verifier key and the origin.
async fn signed_store(n: u64, origin: Option<&str>) -> (Arc<MemoryPublisher>, String) {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    keygen(&prefix).unwrap();
    let key = read_signing_key(&prefix.with_extension("key")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    let opts = SealOptions {
        origin: origin.map(str::to_string),
        ..SealOptions::default()
    };
    let mut vkey = String::new();
    for seed in 1..=n {
        append(mem.clone(), 7 * seed as usize, 3, seed).await;
        let s = seal_with(mem.as_ref(), &SystemClock, Some(&key), &opts)
            .await
            .unwrap();
        vkey = s.vkey.unwrap();
    }
    (mem, vkey)
}

#[tokio::test]
async fn every_signed_seal_is_a_checkpoint_the_independent_verifier_accepts() {
    let (mem, vkey) = signed_store(4, None).await;
    let id = lineage_store::internal::identity::StoreIdentity::from_bytes(
        keys::IDENTITY_KEY,
        &mem.get(keys::IDENTITY_KEY).await.unwrap().unwrap(),
    )
    .unwrap();
    let origin = format!("lineage-store/{}", id.store_id);
    assert!(vkey.starts_with(&format!("{origin}+")), "{vkey}");
    let verifiers = VerifierList::new(vec![Box::new(StandardVerifier::new(&vkey).unwrap())]);
    let mut leaves: Vec<Hash> = Vec::new();
    let all = seals(&mem).await;
    assert_eq!(all.len(), 4);
    for s in &all {
        for e in &s.entries {
            leaves.push(record_hash(&hex::decode(&e.sha256).unwrap()));
        }
        let bytes = mem
            .get(&keys::checkpoint_key(s.seq))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no checkpoint of seal {}", s.seq));
        assert_eq!(
            Some(std::str::from_utf8(&bytes).unwrap()),
            s.checkpoint.as_deref()
        );
        let note = Note::from_bytes(&bytes).unwrap();
        let (ok, unknown) = note.verify(&verifiers).unwrap();
        assert_eq!((ok.len(), unknown.len()), (1, 0));
        let c = Checkpoint::from_bytes(note.text()).unwrap();
        assert_eq!(c.origin(), origin);
        assert_eq!(c.size(), s.tree_size);
        assert_eq!(hex::encode(c.hash().0), s.root);
        // The root is RFC 6962's over the pointer digests, recomputed independently.
        assert_eq!(c.size(), leaves.len() as u64);
        assert_eq!(*c.hash(), mth(&leaves), "seal {}", s.seq);
    }
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

#[tokio::test]
async fn a_changed_checkpoint_is_refused_by_the_independent_verifier_and_named_by_verify() {
    let (mem, vkey) = signed_store(3, Some("example.org/lineage/test")).await;
    assert!(vkey.starts_with("example.org/lineage/test+"), "{vkey}");
    let verifiers = VerifierList::new(vec![Box::new(StandardVerifier::new(&vkey).unwrap())]);
    let k2 = keys::checkpoint_key(2);
    let good = String::from_utf8(mem.get(&k2).await.unwrap().unwrap().to_vec()).unwrap();
    let c = cp::parse(&good).unwrap();
    // Another tree size under the same signature.
    let forged = good.replacen(
        &format!("\n{}\n", c.tree_size),
        &format!("\n{}\n", c.tree_size + 1),
        1,
    );
    assert_ne!(forged, good);
    assert!(Note::from_bytes(forged.as_bytes())
        .unwrap()
        .verify(&verifiers)
        .is_err());
    mem.tamper_put(&k2, Bytes::from(forged));
    // Seal 3's checkpoint missing, one planted for a seal that does not exist.
    let k3 = keys::checkpoint_key(3);
    assert!(mem.tamper_remove(&k3));
    let k9 = keys::checkpoint_key(9);
    mem.tamper_put(&k9, Bytes::from(good));
    let r = verify_later(mem.as_ref()).await;
    let mut got = of_kind(&r, ProblemKind::BadCheckpoint);
    got.sort();
    assert_eq!(got.len(), 3, "{:#?}", r.problems);
    assert_eq!(got[0].0, k2);
    assert!(got[0].1.contains("was changed"), "{}", got[0].1);
    assert_eq!(got[1].0, k3);
    assert!(got[1].1.starts_with("missing"), "{}", got[1].1);
    assert_eq!(got[2].0, k9);
    assert!(got[2].1.contains("not in the store"), "{}", got[2].1);
    assert_eq!(r.problems.len(), 3, "{:#?}", r.problems);
}

#[tokio::test]
async fn a_seal_whose_carried_checkpoint_is_not_its_own_is_named() {
    let (mem, _) = signed_store(2, None).await;
    // The newest seal's checkpoint with one bit of its signature flipped: the seal's own
    // signature does not cover the checkpoint field, so the check of the checkpoint is
    // what catches it.
    let k = keys::seal_key(2);
    let mut s = Seal::from_bytes(&k, &mem.get(&k).await.unwrap().unwrap()).unwrap();
    let c = cp::parse(s.checkpoint.as_deref().unwrap()).unwrap();
    let mut sig = c.signatures[0].signature.clone();
    sig[10] ^= 1;
    let line = cp::signature_line(&c.signatures[0].name, c.signatures[0].id, &sig);
    s.checkpoint = Some(cp::note(&c.body, &[line]));
    mem.tamper_put(&k, Bytes::from(s.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    let named = of_kind(&r, ProblemKind::BadCheckpoint);
    assert!(
        named
            .iter()
            .any(|(key, why)| *key == k && why.contains("signature does not verify")),
        "{:#?}",
        r.problems
    );
    // The published object is the good one, so it no longer matches its seal either.
    assert!(
        named.iter().any(|(key, _)| *key == keys::checkpoint_key(2)),
        "{:#?}",
        r.problems
    );
}

#[tokio::test]
async fn unsigned_seals_carry_no_checkpoint() {
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 10, 5, 1).await;
    let s = seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert_eq!(s.vkey, None);
    assert!(mem.list(keys::CHECKPOINTS_PREFIX).await.unwrap().is_empty());
    // (The C2SP tiles and entry bundles are written all the same.)
    assert!(!mem.list(keys::TLOG_TILES_PREFIX).await.unwrap().is_empty());
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

#[test]
fn keygen_writes_the_vkey_that_the_seal_cli_names_and_the_verifier_reads() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    let prefix = dir.path().join("k");
    let prefix = prefix.to_str().unwrap();
    let o = lineage(
        &["keygen", "--out", prefix, "--origin", "example.org/x"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let vkey = std::fs::read_to_string(format!("{prefix}.vkey")).unwrap();
    let vkey = vkey.trim();
    StandardVerifier::new(vkey).unwrap();
    let o = lineage(
        &["append", "--store", s],
        Some(ndjson("run-a", 5, "a").as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let key = format!("{prefix}.key");
    let args = [
        "seal",
        "--store",
        s,
        "--signing-key",
        &key,
        "--origin",
        "example.org/x",
    ];
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let line = format!(
        "checkpoint {} (verifier key {vkey})",
        keys::checkpoint_key(1)
    );
    assert!(out.lines().any(|l| l == line), "{out}");
    let note = std::fs::read(std::path::Path::new(s).join(keys::checkpoint_key(1))).unwrap();
    let v = VerifierList::new(vec![Box::new(StandardVerifier::new(vkey).unwrap())]);
    Note::from_bytes(&note).unwrap().verify(&v).unwrap();
    // An origin a signed note cannot carry is refused, naming the flag.
    let o = lineage(
        &["keygen", "--out", &format!("{prefix}2"), "--origin", "a+b"],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("--origin") && err.contains('+'), "{err}");
}

//! Seals: concurrent sealers, Ed25519 signatures, inclusion proofs checked offline.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use ed25519_dalek::{Signer, SigningKey};
use lineage_store::internal::chain;
use lineage_store::internal::keys::seal_key;
use lineage_store::keygen;
use lineage_store::prove;
use lineage_store::read_public_key;
use lineage_store::read_signing_key;
use lineage_store::seal;
use lineage_store::verify_proof;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::ProblemKind as K;
use lineage_store::ProveAgainst;
use lineage_store::Seal;
use lineage_store::SystemClock;
use lineage_store::VerifyOptions;

use crate::support::audit::{append, assert_kinds, later, verify_later};

fn keys(dir: &std::path::Path, name: &str) -> (SigningKey, ed25519_dalek::VerifyingKey) {
    let prefix = dir.join(name);
    keygen(&prefix).unwrap();
    (
        read_signing_key(&prefix.with_extension("key")).unwrap(),
        read_public_key(&prefix.with_extension("pub")).unwrap(),
    )
}

#[tokio::test]
async fn concurrent_sealers_each_get_their_own_sequence_number() {
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 90, 30, 1).await;
    let sealers: Vec<_> = (0..6)
        .map(|_| {
            let m = mem.clone();
            // Heartbeat seals: every sealer publishes one, so they race for numbers.
            let beat = lineage_store::SealOptions {
                allow_empty: true,
                ..lineage_store::SealOptions::default()
            };
            tokio::spawn(async move {
                lineage_store::seal_with(m.as_ref(), &SystemClock, None, &beat)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut seqs = Vec::new();
    for s in sealers {
        seqs.push(s.await.unwrap().seq);
    }
    seqs.sort();
    assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.seals, 6);
    assert_eq!(r.unsealed_commits, 0);
}

#[tokio::test]
async fn a_seal_records_its_predecessor_and_only_new_commits_in_commit_order() {
    let mem = Arc::new(MemoryPublisher::new());
    let first = append(mem.clone(), 60, 30, 1).await;
    let s1 = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let second = append(mem.clone(), 60, 30, 2).await;
    let s2 = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!(
        (s1.added, s1.tree_size),
        (first.len() as u64, first.len() as u64)
    );
    assert_eq!(s2.added, second.len() as u64);
    assert_eq!(s2.tree_size, (first.len() + second.len()) as u64);
    let b2 = mem.get(&seal_key(2)).await.unwrap().unwrap();
    let parsed = Seal::from_bytes("2", &b2).unwrap();
    assert_eq!(parsed.prev_sha256.as_deref(), Some(s1.head.as_str()));
    // Commit-time order: committed_utc, then commit id (lineage-seal/2; seal/1 ordered by
    // commit id alone, which is not commit order for keyed or concurrent commits).
    let mut by_time: Vec<(String, String)> = second
        .iter()
        .map(|p| (p.committed_utc.clone(), p.commit_id.clone()))
        .collect();
    by_time.sort();
    let ids: Vec<String> = by_time.into_iter().map(|(_, id)| id).collect();
    let sealed: Vec<String> = parsed
        .entries
        .iter()
        .map(|e| {
            e.key
                .rsplit('/')
                .next()
                .unwrap()
                .trim_end_matches(".json")
                .to_string()
        })
        .collect();
    assert_eq!(sealed, ids);
}

#[tokio::test]
async fn signatures_are_checked_against_the_trusted_key() {
    let dir = tempfile::tempdir().unwrap();
    let (sk, pk) = keys(dir.path(), "owner");
    let (other_sk, other_pk) = keys(dir.path(), "other");
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 60, 30, 1).await;
    seal(mem.as_ref(), &SystemClock, Some(&sk)).await.unwrap();
    append(mem.clone(), 60, 30, 2).await;
    seal(mem.as_ref(), &SystemClock, Some(&sk)).await.unwrap();
    let with = |k| VerifyOptions {
        public_keys: vec![k],
        ..later()
    };
    let r = verify_with(mem.as_ref(), &with(pk)).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.signed_seals, 2);

    // The wrong trusted key: every seal is named.
    let r = verify_with(mem.as_ref(), &with(other_pk)).await.unwrap();
    assert_kinds(&r, &[K::BadSignature, K::BadSignature]);
    assert!(
        r.problems[0].detail.contains("which is not a key given"),
        "{:#?}",
        r.problems
    );

    // A forged signature (flipped bit) on seal 2.
    let orig = mem.get(&seal_key(2)).await.unwrap().unwrap();
    let mut s = Seal::from_bytes("2", &orig).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut sig = b64.decode(s.signature.as_ref().unwrap()).unwrap();
    sig[5] ^= 1;
    s.signature = Some(b64.encode(sig));
    mem.tamper_put(&seal_key(2), Bytes::from(s.to_bytes().unwrap()));
    let r = verify_with(mem.as_ref(), &with(pk)).await.unwrap();
    assert_kinds(&r, &[K::BadSignature]);
    assert_eq!(r.problems[0].key, seal_key(2));
    // Even without a trusted key, the broken signature is seen (integrity, not authorship).
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::BadSignature]);

    // Re-signed by an attacker's key after an edit: only the trusted key catches the author.
    let mut s = Seal::from_bytes("2", &orig).unwrap();
    s.sealed_utc = "2030-01-01T00:00:00.000000Z".into();
    s.public_key = Some(b64.encode(other_sk.verifying_key().as_bytes()));
    s.key_id = Some(lineage_store::key_id(&other_sk.verifying_key()));
    s.signature = None;
    s.signature = Some(b64.encode(other_sk.sign(&s.signed_message().unwrap()).to_bytes()));
    // (The owner's C2SP checkpoint is not the attacker's key's: dropped with its object,
    // else `bad_checkpoint` names it too.)
    s.checkpoint = None;
    mem.tamper_remove(&lineage_store::internal::keys::checkpoint_key(2));
    mem.tamper_put(&seal_key(2), Bytes::from(s.to_bytes().unwrap()));
    let r = verify_with(mem.as_ref(), &with(pk)).await.unwrap();
    assert_kinds(&r, &[K::BadSignature]);
    assert!(
        r.problems[0].detail.contains("which is not a key given"),
        "{:#?}",
        r.problems
    );

    // Unsigned seals fail when a key is required.
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 30, 30, 3).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let r = verify_with(mem.as_ref(), &with(pk)).await.unwrap();
    assert_kinds(&r, &[K::BadSignature]);
    assert!(r.problems[0].detail.contains("not signed"));
}

#[tokio::test]
async fn key_files_refuse_overwrite_and_mixups() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    keygen(&prefix).unwrap();
    let again = keygen(&prefix).unwrap_err().to_string();
    assert!(again.contains("refusing to overwrite"), "{again}");
    let mixed = read_public_key(&prefix.with_extension("key"))
        .unwrap_err()
        .to_string();
    assert!(mixed.contains("is not a public key"), "{mixed}");
    // The error never echoes the file (it may be a secret in the wrong place).
    let secret = std::fs::read_to_string(prefix.with_extension("key")).unwrap();
    assert!(!mixed.contains(secret.trim()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(prefix.with_extension("key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn inclusion_proofs_verify_offline_and_fail_on_any_change() {
    let dir = tempfile::tempdir().unwrap();
    let (sk, pk) = keys(dir.path(), "owner");
    let (_, other_pk) = keys(dir.path(), "other");
    let mem = Arc::new(MemoryPublisher::new());
    let mut ptrs = append(mem.clone(), 150, 20, 1).await;
    let s1 = seal(mem.as_ref(), &SystemClock, Some(&sk)).await.unwrap();
    ptrs.extend(append(mem.clone(), 90, 20, 2).await);
    let s2 = seal(mem.as_ref(), &SystemClock, Some(&sk)).await.unwrap();
    // Every commit proves against the newest head.
    for p in &ptrs {
        let proof = prove(mem.as_ref(), &p.commit_id, &ProveAgainst::Newest)
            .await
            .unwrap();
        let ok = verify_proof(&proof, &s2.head, Some(&pk), None)
            .unwrap()
            .unwrap();
        assert_eq!(
            (ok.commit_id.as_str(), ok.seal_seq),
            (p.commit_id.as_str(), 2)
        );
        assert_eq!(ok.part_sha256, p.sha256);
    }
    // An old head the auditor kept: prove against it.
    let p = &ptrs[0];
    let old = prove(
        mem.as_ref(),
        &p.commit_id,
        &ProveAgainst::Head(s1.head.clone()),
    )
    .await
    .unwrap();
    assert!(verify_proof(&old, &s1.head, Some(&pk), None)
        .unwrap()
        .is_ok());
    let later_commit = &ptrs[ptrs.len() - 1];
    let err = prove(mem.as_ref(), &later_commit.commit_id, &ProveAgainst::Seq(1))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("prove against a newer seal"), "{err}");

    let proof = prove(mem.as_ref(), &p.commit_id, &ProveAgainst::Newest)
        .await
        .unwrap();
    let fails = |pr: &lineage_store::Proof, head: &str, k| {
        verify_proof(pr, head, k, None).unwrap().unwrap_err()
    };
    assert!(fails(&proof, &s1.head, Some(&pk)).contains("not the head digest"));
    assert!(fails(&proof, &s2.head, Some(&other_pk)).contains("not by the trusted key"));
    let mut bad = proof.clone();
    bad.path[0] = hex::encode([7u8; 32]);
    assert!(fails(&bad, &s2.head, Some(&pk)).contains("does not lead"));
    let mut bad = proof.clone();
    bad.pointer = bad.pointer.replace(&p.sha256, &"0".repeat(64));
    assert!(fails(&bad, &s2.head, Some(&pk)).contains("does not lead"));
    let mut bad = proof.clone();
    bad.leaf_index += 1;
    assert!(fails(&bad, &s2.head, Some(&pk)).contains("does not lead"));

    // The part file itself: a good copy passes, one changed byte fails.
    let part = dir.path().join("part.parquet");
    let mut bytes = mem.get(&p.part_path).await.unwrap().unwrap().to_vec();
    std::fs::write(&part, &bytes).unwrap();
    let ok = verify_proof(&proof, &s2.head, Some(&pk), Some(&part))
        .unwrap()
        .unwrap();
    assert!(ok.part_file_checked);
    bytes[20] ^= 1;
    std::fs::write(&part, &bytes).unwrap();
    let why = verify_proof(&proof, &s2.head, Some(&pk), Some(&part))
        .unwrap()
        .unwrap_err();
    assert!(why.contains(&p.sha256), "{why}");
}

#[tokio::test]
async fn an_unsealed_or_unknown_commit_has_no_proof() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 30, 30, 1).await;
    let e = prove(mem.as_ref(), &ptrs[0].commit_id, &ProveAgainst::Newest)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no seals yet"), "{e}");
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let more = append(mem.clone(), 30, 30, 2).await;
    let e = prove(mem.as_ref(), &more[0].commit_id, &ProveAgainst::Newest)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("after the next `lineage seal`"), "{e}");
    let e = prove(mem.as_ref(), "not-a-commit", &ProveAgainst::Newest)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a commit id"), "{e}");
}

#[tokio::test]
async fn sealing_leaves_out_a_pointer_that_contradicts_its_key_and_seals_the_rest() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 60, 30, 1).await;
    let key = lineage_store::internal::keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    let mut p = ptrs[0].clone();
    p.commit_id = ptrs[1].commit_id.clone();
    mem.tamper_put(&key, Bytes::from(p.to_bytes().unwrap()));
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!(s.not_sealed.len(), 1, "{:?}", s.not_sealed);
    assert_eq!(s.not_sealed[0].key, key);
    assert!(
        s.not_sealed[0].reason.contains("contradicts its key"),
        "{:?}",
        s.not_sealed
    );
    let c = chain::walk(mem.as_ref(), None).await.unwrap();
    assert_eq!(c.seals.len(), 1);
    assert_eq!(s.added, ptrs.len() as u64 - 1);
}

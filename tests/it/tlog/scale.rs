//! The scale (issue 36, tests): a store of 10,000+ commits over 24 signed seals,
//! inclusion of random leaves and consistency between random seal pairs, proven and checked
//! by a tlog client nobody here wrote (`tlog_tiles`, a port of Go's `sumdb/tlog`) reading
//! only the tiles and entry bundles under the store's `_lineage/tlog/` prefix, against the
//! checkpoints `signed_note` checks with the verifier key. Each leaf checked is also the
//! digest of the commit's pointer, found by its locator.
//!
//! The commits are made the fast way (the store is the point, not the writer): one real
//! append, then pointers of the same part under new commit ids, published with their index
//! entries as a writer publishes them; the sealer seals them as any other. Debug build:
//! 44 s alone on the 2-core test machine at load average 17.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::{index, keys, merkle};
use lineage_store::{
    keygen, read_signing_key, seal_with, AtomicPublisher, MemoryPublisher, Pointer, SealOptions,
    SystemClock,
};
use sha2::{Digest, Sha256};
use signed_note::{Note, StandardVerifier, VerifierList};
use tlog_tiles::{
    check_record, check_tree, prove_record, prove_tree, record_hash, Checkpoint, TileHashReader,
};

use super::tiles::{root_other, Prefix, Rng};
use crate::support::audit::append;

const SEALS: u64 = 24;
const PER_SEAL: u64 = 420;

/// `n` commits of `template`'s part under new commit ids (`next` counts them), each pointer
/// and index entry published as a writer publishes them.
async fn commits(
    mem: &MemoryPublisher,
    template: &Pointer,
    next: &mut u64,
    n: u64,
) -> Vec<Pointer> {
    let mut out = Vec::new();
    for _ in 0..n {
        *next += 1;
        let commit_id = format!("00000000-0000-7000-8000-{:012x}", *next);
        let p = Pointer {
            part_path: keys::part_key(&template.run_id, &template.target_crs, &commit_id),
            commit_id,
            committed_utc: lineage_store::internal::time::rfc3339(chrono::Utc::now()),
            ..template.clone()
        };
        let key = keys::pointer_key(&p.run_id, &p.commit_id);
        mem.put_create(&key, Bytes::from(p.to_bytes().unwrap()))
            .await
            .unwrap();
        index::publish_entry(mem, &p).await;
        out.push(p);
    }
    out
}

#[tokio::test]
async fn ten_thousand_commits_over_24_seals_are_proven_by_an_independent_tlog_client() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    keygen(&prefix).unwrap();
    let key = read_signing_key(&prefix.with_extension("key")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    let template = append(mem.clone(), 1, 1, 1).await.remove(0);
    let mut pointers = HashMap::new();
    pointers.insert(template.commit_id.clone(), template.to_bytes().unwrap());
    let (mut next, mut vkey) = (0u64, String::new());
    let opts = SealOptions::default();
    for _ in 0..SEALS {
        for p in commits(&mem, &template, &mut next, PER_SEAL).await {
            pointers.insert(p.commit_id.clone(), p.to_bytes().unwrap());
        }
        let s = seal_with(mem.as_ref(), &SystemClock, Some(&key), &opts).await;
        vkey = s.unwrap().vkey.unwrap();
    }
    // Every seal's checkpoint, its signature checked by signed_note.
    let v = VerifierList::new(vec![Box::new(StandardVerifier::new(&vkey).unwrap())]);
    let mut heads = Vec::new();
    for seq in 1..=SEALS {
        let b = mem.get(&keys::checkpoint_key(seq)).await.unwrap().unwrap();
        let note = Note::from_bytes(&b).unwrap();
        note.verify(&v).unwrap();
        let c = Checkpoint::from_bytes(note.text()).unwrap();
        heads.push((c.size(), *c.hash()));
    }
    let (size, _) = *heads.last().unwrap();
    assert_eq!(size, SEALS * PER_SEAL + 1);
    assert!(size >= 10_000);

    // Which commit each leaf is, from the leaf locators.
    let mut leaf_of = HashMap::new();
    for o in mem.list(keys::LEAVES_PREFIX).await.unwrap() {
        if let keys::KeyKind::History(keys::HistoryKey::Leaf {
            commit_id,
            leaf_index,
            ..
        }) = keys::classify(&o.key)
        {
            leaf_of.insert(leaf_index, commit_id);
        }
    }
    assert_eq!(leaf_of.len() as u64, size);

    let p = Prefix::read(&mem).await;
    let mut rng = Rng(10_000);
    for _ in 0..300 {
        let (t, th) = heads[rng.range(0, heads.len())];
        let i = rng.below(t);
        let entry = p.entry(i, t);
        // The leaf is the digest of that commit's pointer.
        let pointer = &pointers[&leaf_of[&i]];
        assert_eq!(entry, Sha256::digest(pointer).to_vec(), "leaf {i}");
        assert_eq!(
            record_hash(&entry).0,
            merkle::leaf_hash(&Sha256::digest(pointer))
        );
        let r = TileHashReader::new(t, th, &p);
        let proof = prove_record(t, i, &r).unwrap();
        check_record(&proof, t, th, i, record_hash(&entry)).unwrap();
        assert!(check_record(&proof, t, th, i, record_hash(b"other")).is_err());
    }
    for _ in 0..200 {
        let a = rng.range(0, heads.len());
        let b = rng.range(a, heads.len());
        let ((n, nh), (t, th)) = (heads[a], heads[b]);
        let r = TileHashReader::new(t, th, &p);
        let proof = prove_tree(t, n, &r).unwrap();
        check_tree(&proof, t, th, n, nh).unwrap();
        if n < t {
            assert!(check_tree(&proof, t, th, n, root_other(nh)).is_err());
        }
    }
}

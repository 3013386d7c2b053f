//! `verify --expect-head H --trust-expected-head` (issue 36 item 4): what the seal of H
//! covers is shown by an RFC 9162 consistency proof from the hash tiles instead of read
//! again; only the seals from it on and the commits after it are read (counted through
//! the metering wrapper: far fewer reads than a full verify). A rewritten expected-head
//! seal, a rewritten seal before it and a changed tile are still caught; the verdict says
//! what was checked by proof and what by reading.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::keys::{self, seal_key};
use lineage_store::internal::metered::MeteredPublisher;
use lineage_store::{
    seal, verify_with, AtomicPublisher, MemoryPublisher, Pointer, ProblemKind as K, SystemClock,
    VerifyOptions,
};

use crate::support::audit::{append, later, of_kind};
use crate::support::{lineage, ndjson, text};

/// Seal 1 over 300 commits (a full tile), seal 2 (the head the auditor keeps) and seals
/// 3-4 over 30 commits each, then commits not sealed. Returns the store, the head of
/// seal 2, the commits sealed by it and those after it.
async fn store() -> (Arc<MemoryPublisher>, String, Vec<Pointer>, Vec<Pointer>) {
    let mem = Arc::new(MemoryPublisher::new());
    let mut old = append(mem.clone(), 600, 2, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    old.extend(append(mem.clone(), 60, 2, 2).await);
    let head = seal(mem.as_ref(), &SystemClock, None).await.unwrap().head;
    let mut new = Vec::new();
    for seed in 3..=4 {
        new.extend(append(mem.clone(), 60, 2, seed).await);
        seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    }
    new.extend(append(mem.clone(), 20, 2, 5).await);
    (mem, head, old, new)
}

fn trusting(head: &str) -> VerifyOptions {
    VerifyOptions {
        expect_head: Some(head.to_string()),
        trust_expected_head: true,
        ..later()
    }
}

#[tokio::test]
async fn the_expected_head_is_taken_on_a_consistency_proof_with_far_fewer_reads() {
    let (mem, head, old, new) = store().await;
    let metered = MeteredPublisher::new(mem.clone(), None);
    let r = verify_with(&metered, &trusting(&head)).await.unwrap();
    let trusted_reads = metered.snapshot();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.expected_head_seq, Some(2));
    let t = r.trusted_head.clone().expect("what was taken on proof");
    assert_eq!((t.seq, t.newest_seq), (2, 4));
    assert_eq!(t.tree_size, old.len() as u64);
    assert_eq!(
        t.newest_tree_size + r.unsealed_commits,
        (old.len() + new.len()) as u64
    );
    assert!(t.consistent && t.proof_hashes > 0, "{t:?}");
    // Read: the commits after the head only (sealed after it, and not sealed yet).
    assert_eq!(r.commits, new.len() as u64);
    assert_eq!(r.since_seal, Some(2));

    let metered = MeteredPublisher::new(mem.clone(), None);
    let opts = VerifyOptions {
        expect_head: Some(head.clone()),
        ..later()
    };
    let full = verify_with(&metered, &opts).await.unwrap();
    let full_reads = metered.snapshot();
    assert!(full.is_clean(), "{:#?}", full.problems);
    assert_eq!(full.commits, (old.len() + new.len()) as u64);
    // Each commit costs a full verify a pointer and a part read; the trusting one reads
    // those of the 70 newer commits, the seals 1-4 and a few tiles.
    let reads = |s: &lineage_store::internal::metered::Snapshot| s.gets + s.range_gets;
    assert!(
        reads(&trusted_reads) * 3 < reads(&full_reads),
        "trusted {trusted_reads:?}, full {full_reads:?}"
    );
    assert!(
        trusted_reads.bytes_read * 2 < full_reads.bytes_read,
        "trusted {trusted_reads:?}, full {full_reads:?}"
    );
}

/// `key` replaced by `change(bytes)` while `check` runs, then put back.
async fn with_tampered<F, C>(mem: &MemoryPublisher, key: &str, change: F, check: C)
where
    F: FnOnce(Vec<u8>) -> Vec<u8>,
    C: AsyncFnOnce(),
{
    let original = mem.get(key).await.unwrap().unwrap();
    mem.tamper_put(key, Bytes::from(change(original.to_vec())));
    check().await;
    mem.tamper_put(key, original);
}

fn sealed_earlier(b: Vec<u8>) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    v["sealed_utc"] = serde_json::json!("2020-01-01T00:00:00Z");
    serde_json::to_vec(&v).unwrap()
}

#[tokio::test]
async fn a_rewritten_seal_or_tile_is_still_caught() {
    let (mem, head, _, new) = store().await;
    let verify = async || verify_with(mem.as_ref(), &trusting(&head)).await.unwrap();
    // The expected head's own seal rewritten: no seal has the digest, so the whole store
    // is verified, which names the head as not found and the broken link after it.
    with_tampered(&mem, &seal_key(2), sealed_earlier, async || {
        let r = verify().await;
        assert_eq!(of_kind(&r, K::HeadNotFound).len(), 1, "{:#?}", r.problems);
        assert!(
            !of_kind(&r, K::SealChainBroken).is_empty(),
            "{:#?}",
            r.problems
        );
        assert!(r.trusted_head.is_none() && r.since_seal.is_none());
    })
    .await;
    // The seal before it rewritten: the expected head's link to it is read and broken.
    with_tampered(&mem, &seal_key(1), sealed_earlier, async || {
        let r = verify().await;
        let broken = of_kind(&r, K::SealChainBroken);
        assert_eq!(broken.len(), 1, "{:#?}", r.problems);
        assert_eq!(broken[0].0, seal_key(1));
        assert!(broken[0].1.contains("edited or replaced"), "{broken:?}");
    })
    .await;
    // The hash of the first 256 commits (the level-1 tile) changed: the consistency proof
    // no longer leads from the expected head's root to the newest.
    let flip = |mut b: Vec<u8>| {
        b[0] ^= 1;
        b
    };
    with_tampered(&mem, &keys::tile_key(1, 0, 1), flip, async || {
        let r = verify().await;
        let t = r.trusted_head.clone().unwrap();
        assert!(!t.consistent, "{t:?}");
        let bad = of_kind(&r, K::BadTile);
        assert!(
            bad.iter().any(|(k, d)| k == keys::TILES_PREFIX
                && d.contains("consistency proof")
                && d.contains("seal 2")),
            "{bad:#?}"
        );
    })
    .await;
    // A commit sealed after the head with its pointer changed is read, and named.
    let p = &new[0];
    let key = keys::pointer_key(&p.run_id, &p.commit_id);
    let changed = Pointer {
        row_count: p.row_count + 1,
        ..p.clone()
    };
    with_tampered(
        &mem,
        &key,
        |_| changed.to_bytes().unwrap(),
        async || {
            let r = verify().await;
            assert!(r.problems.iter().any(|x| x.key == key), "{:#?}", r.problems);
        },
    )
    .await;
    let r = verify().await;
    assert!(r.is_clean(), "restored: {:#?}", r.problems);
}

#[test]
fn the_cli_says_what_was_checked_by_proof_and_what_by_reading() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s").to_str().unwrap().to_string();
    let mut heads = Vec::new();
    for i in 0..3 {
        let input = ndjson(&format!("run-{i}"), 20, &format!("t{i}"));
        let o = lineage(
            &["append", "--store", &s, "--batch-rows", "5"],
            Some(input.as_bytes()),
        );
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        let o = lineage(&["seal", "--store", &s, "--json"], None);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        heads.push(v["head"].as_str().unwrap().to_string());
    }
    let args = [
        "verify",
        "--store",
        &s,
        "--expect-head",
        &heads[0],
        "--trust-expected-head",
        "--grace",
        "0s",
    ];
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        out.contains("checked by proof: seal 1's tree of 4 commits (the expected head) is extended by seal 3's tree of 12"),
        "{out}"
    );
    assert!(
        out.contains("checked by reading: seals 1-3 and the commits sealed after seal 1"),
        "{out}"
    );
    assert!(
        out.contains("not read (trusted with the expected head): the 4 commits"),
        "{out}"
    );
    // Without a head to trust, and with --since-seal: refused.
    let o = lineage(&["verify", "--store", &s, "--trust-expected-head"], None);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    let mut both = args.to_vec();
    both.push("--since-seal");
    let o = lineage(&both, None);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

//! `verify --shard i/n` and `verify merge`: the shards list disjoint parts of the store that
//! together are all of it, each problem is found by exactly one shard, and the merged
//! report is the full verify's.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::keys;
use lineage_store::internal::metered::MeteredPublisher;
use lineage_store::internal::shard::merge;
use lineage_store::internal::shard::Scope;
use lineage_store::seal;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::ProblemKind as K;
use lineage_store::Report;
use lineage_store::ShardSpec;
use lineage_store::SystemClock;
use lineage_store::VerifyOptions;

use crate::support::audit::{append, later};

/// Six appends of two runs each (twelve runs), five sealed, the last not.
async fn store() -> (Arc<MemoryPublisher>, Vec<Pointer>) {
    let mem = Arc::new(MemoryPublisher::new());
    let mut all = Vec::new();
    for seed in 1..=6 {
        all.extend(append(mem.clone(), 80, 10, seed).await);
        if seed < 6 {
            seal(mem.as_ref(), &SystemClock, None).await.unwrap();
        }
    }
    (mem, all)
}

fn shard(i: u32, n: u32) -> VerifyOptions {
    VerifyOptions {
        shard: Some(ShardSpec { index: i, count: n }),
        plan_seal: Some(5),
        ..later()
    }
}

async fn shards(store: &dyn AtomicPublisher, n: u32) -> Vec<Report> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(verify_with(store, &shard(i, n)).await.unwrap());
    }
    v
}

fn counters(r: &Report) -> [u64; 8] {
    [
        r.commits,
        r.parts_ok,
        r.parts_hashed,
        r.rows,
        r.bytes_hashed,
        r.sealed_commits,
        r.unsealed_commits,
        r.seals,
    ]
}

#[tokio::test]
async fn shards_split_the_listing_and_merge_into_the_full_verify() {
    let (mem, all) = store().await;
    let full = verify_with(mem.as_ref(), &later()).await.unwrap();
    assert!(full.is_clean(), "{:#?}", full.problems);
    assert_eq!(full.commits, all.len() as u64);
    mem.tamper_put("zz-foreign/x", Bytes::from_static(b"?"));
    mem.tamper_put("_lineage/zz", Bytes::from_static(b"?"));
    let everything: Vec<String> = mem
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let chain = lineage_store::internal::chain::walk(mem.as_ref(), None)
        .await
        .unwrap();
    for n in [1, 2, 3, 5] {
        // The shards' listings are disjoint and together the whole store.
        let mut seen: Vec<String> = Vec::new();
        for i in 0..n {
            let scope = Scope::of(&shard(i, n), &chain).unwrap().unwrap();
            seen.extend(
                scope
                    .list(mem.as_ref())
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|o| o.key),
            );
        }
        seen.sort();
        assert_eq!(seen, everything, "{n} shards");
    }
    assert!(mem.tamper_remove("zz-foreign/x") && mem.tamper_remove("_lineage/zz"));
    let m = MeteredPublisher::new(mem.clone(), None);
    for n in [1, 2, 3, 5] {
        m.reset();
        let parts = shards(&m, n).await;
        let busy = parts.iter().filter(|r| r.commits > 0).count();
        assert!(n == 1 || busy >= 2, "{n} shards: work split over {busy}");
        let merged = merge(parts).unwrap();
        assert!(merged.is_clean(), "{:#?}", merged.problems);
        assert_eq!(counters(&merged), counters(&full), "{n} shards");
        assert_eq!(merged.merged.as_ref().unwrap().shards, n);
    }
}

#[tokio::test]
async fn each_problem_is_found_by_one_shard_and_merged_once() {
    let (mem, all) = store().await;
    // A sealed part changed, an unsealed one truncated, a foreign file, a locator removed.
    let sealed = &all[3];
    let mut b = mem.get(&sealed.part_path).await.unwrap().unwrap().to_vec();
    b[30] ^= 1;
    mem.tamper_put(&sealed.part_path, Bytes::from(b));
    let unsealed = all.last().unwrap();
    let mut b = mem
        .get(&unsealed.part_path)
        .await
        .unwrap()
        .unwrap()
        .to_vec();
    b.pop();
    mem.tamper_put(&unsealed.part_path, Bytes::from(b));
    mem.tamper_put("notes.txt", Bytes::from_static(b"hello"));
    let loc = mem
        .list(&keys::leaf_prefix(&all[0].commit_id))
        .await
        .unwrap()[0]
        .key
        .clone();
    assert!(mem.tamper_remove(&loc));
    let full = verify_with(mem.as_ref(), &later()).await.unwrap();
    let named = |r: &Report| {
        let mut v: Vec<(K, String)> = r.problems.iter().map(|p| (p.kind, p.key.clone())).collect();
        v.sort();
        v
    };
    assert_eq!(full.problems.len(), 4, "{:#?}", full.problems);
    for n in [2, 4] {
        let parts = shards(mem.as_ref(), n).await;
        let mut found: Vec<(K, String)> = parts.iter().flat_map(named).collect();
        found.sort();
        assert_eq!(found, named(&full), "{n} shards: each problem once");
        let merged = merge(parts).unwrap();
        assert_eq!(named(&merged), named(&full));
        assert_eq!(merged.summary, full.summary);
    }
}

#[tokio::test]
async fn merge_refuses_an_incomplete_or_mixed_set() {
    let (mem, _) = store().await;
    let two = shards(mem.as_ref(), 2).await;
    let e = merge(vec![two[0].clone()]).unwrap_err();
    assert!(e.to_string().contains("shards 1 of 2 are missing"), "{e}");
    let e = merge(vec![two[0].clone(), two[0].clone()]).unwrap_err();
    assert!(e.to_string().contains("given twice"), "{e}");
    let three = shards(mem.as_ref(), 3).await;
    let e = merge(vec![two[0].clone(), three[1].clone()]).unwrap_err();
    assert!(e.to_string().contains("same --plan-seal"), "{e}");
    // A seal between two shards' starts changes the plan unless it is pinned.
    let free = |i| VerifyOptions {
        shard: Some(ShardSpec { index: i, count: 2 }),
        ..later()
    };
    let a = verify_with(mem.as_ref(), &free(0)).await.unwrap();
    append(mem.clone(), 40, 10, 9).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let b = verify_with(mem.as_ref(), &free(1)).await.unwrap();
    assert!(merge(vec![a, b]).is_err());
    let full = verify_with(mem.as_ref(), &later()).await.unwrap();
    let e = merge(vec![full]).unwrap_err();
    assert!(e.to_string().contains("not a shard report"), "{e}");
}

//! `repair` adopts genuine orphans only; `sweep` removes stale temps only. POSIX and memory.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{Duration, Utc};
use lineage_store::internal::keys;
use lineage_store::parse_duration;
use lineage_store::repair;
use lineage_store::sweep;
use lineage_store::Adoption;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind as K;

use crate::support::audit::{append, assert_kinds, verify_later};

fn day_later() -> chrono::DateTime<Utc> {
    Utc::now() + Duration::days(1)
}

#[tokio::test]
async fn repair_adopts_an_orphan_with_the_pointer_the_writer_would_have_written() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 90, 30, 1).await;
    let lost = &ptrs[1];
    let pkey = keys::pointer_key(&lost.run_id, &lost.commit_id);
    // As if the process died between part and pointer (so before the index entry too).
    assert!(mem.tamper_remove(&pkey));
    assert!(mem.tamper_remove(&lineage_store::internal::index::key_of(lost).unwrap()));

    let named = Adoption::parts([lost.part_path.clone()]);
    // Within the grace period nothing is touched: the writer may still be publishing.
    let r = repair(
        mem.as_ref(),
        Utc::now(),
        Duration::minutes(15),
        &named,
        false,
    )
    .await
    .unwrap();
    assert_eq!((r.adopted.len(), r.in_flight), (0, 1));
    assert_eq!(r.refused.len(), 1, "{r:?}");
    assert!(r.refused[0].1.contains("within the grace period"), "{r:?}");
    assert!(mem.get(&pkey).await.unwrap().is_none());

    // Past it, an orphan not named is listed, not adopted.
    let r = repair(
        mem.as_ref(),
        day_later(),
        Duration::minutes(15),
        &Adoption::none(),
        false,
    )
    .await
    .unwrap();
    assert!(r.adopted.is_empty() && r.refused.is_empty(), "{r:?}");
    assert_eq!(r.orphans.len(), 1, "{r:?}");
    assert_eq!(r.orphans[0].0, lost.part_path);
    assert!(r.orphans[0].1.contains("not adopted"), "{r:?}");
    assert!(!r.is_complete());
    assert!(mem.get(&pkey).await.unwrap().is_none());

    let dry = repair(
        mem.as_ref(),
        day_later(),
        Duration::minutes(15),
        &named,
        true,
    )
    .await
    .unwrap();
    assert_eq!(dry.adopted, vec![pkey.clone()]);
    assert!(mem.get(&pkey).await.unwrap().is_none());

    let r = repair(
        mem.as_ref(),
        day_later(),
        Duration::minutes(15),
        &named,
        false,
    )
    .await
    .unwrap();
    assert_eq!(r.adopted, vec![pkey.clone()]);
    assert!(r.refused.is_empty() && r.orphans.is_empty());
    let adopted = Pointer::from_bytes(&pkey, &mem.get(&pkey).await.unwrap().unwrap()).unwrap();
    assert!(adopted.adopted);
    // Everything the part itself can tell matches the lost pointer exactly.
    let mut expect = lost.clone();
    expect.adopted = true;
    // Not the tail digest (issue 35): repair reads the orphan once; feature lookups read
    // an adopted part whole.
    expect.tail_offset = None;
    expect.tail_sha256 = None;
    expect.committed_utc = adopted.committed_utc.clone();
    assert_eq!(adopted, expect);
    // Adopted and never anchored: a problem until the auditor accepts it.
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::AdoptedCommit]);
    assert_eq!(r.adopted_commits.len(), 1);
    assert_eq!(r.adopted_commits[0].commit_id, lost.commit_id);

    // Running it again changes nothing; naming the part again is refused: it has a pointer.
    let r = repair(
        mem.as_ref(),
        day_later(),
        Duration::minutes(15),
        &Adoption::none(),
        false,
    )
    .await
    .unwrap();
    assert!(r.adopted.is_empty() && r.refused.is_empty() && r.orphans.is_empty());
    let r = repair(
        mem.as_ref(),
        day_later(),
        Duration::minutes(15),
        &named,
        false,
    )
    .await
    .unwrap();
    assert!(r.adopted.is_empty(), "{r:?}");
    assert_eq!(r.refused.len(), 1, "{r:?}");
    assert!(r.refused[0].1.contains("not an orphan"), "{r:?}");
}

#[tokio::test]
async fn repair_refuses_parts_that_do_not_match_the_contract_or_their_path() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 90, 30, 1).await;
    let a = &ptrs[0];
    let b = ptrs.iter().find(|p| p.target_crs != a.target_crs).unwrap();
    // A genuine part copied under another commit's name in another partition: its footer
    // commit id and its target_crs values contradict the path.
    let fake = keys::part_key(
        &b.run_id,
        &b.target_crs,
        "0190a000-0000-7000-8000-00000000cafe",
    );
    mem.tamper_put(&fake, mem.get(&a.part_path).await.unwrap().unwrap());
    // Not Parquet at all.
    let junk = keys::part_key(
        &a.run_id,
        &a.target_crs,
        "0190a000-0000-7000-8000-00000000dead",
    );
    mem.tamper_put(&junk, Bytes::from_static(b"definitely not parquet"));
    let before = mem.list("").await.unwrap();
    let named = Adoption::parts([fake.clone(), junk.clone()]);
    let r = repair(
        mem.as_ref(),
        day_later(),
        Duration::minutes(15),
        &named,
        false,
    )
    .await
    .unwrap();
    assert!(r.adopted.is_empty());
    let mut refused = r.refused.clone();
    refused.sort();
    assert_eq!(refused.len(), 2);
    let why_fake = &refused.iter().find(|(k, _)| k == &fake).unwrap().1;
    assert!(why_fake.contains("footer commit id"), "{why_fake}");
    assert!(why_fake.contains("target_crs values"), "{why_fake}");
    let why_junk = &refused.iter().find(|(k, _)| k == &junk).unwrap().1;
    assert!(
        why_junk.contains("too short") || why_junk.contains("PAR1"),
        "{why_junk}"
    );
    assert_eq!(mem.list("").await.unwrap(), before, "nothing written");
}

#[test]
fn durations_parse_or_explain() {
    assert_eq!(parse_duration("90s").unwrap(), Duration::seconds(90));
    assert_eq!(parse_duration("15m").unwrap(), Duration::minutes(15));
    assert_eq!(parse_duration("2d").unwrap(), Duration::days(2));
    for bad in ["", "h", "1w", "-", "1.5h", "99999999999999999d"] {
        let e = parse_duration(bad).unwrap_err().to_string();
        assert!(e.contains("expected a whole number"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn sweep_removes_only_stale_temps_on_posix() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(PosixPublisher::new(dir.path()));
    let ptrs = append(store.clone(), 60, 30, 1).await;
    let part_dir = dir
        .path()
        .join(keys::partition_dir(&ptrs[0].run_id, &ptrs[0].target_crs));
    let stale = part_dir.join(".part-x.parquet.0123456789ab.tmp");
    std::fs::write(&stale, b"half a part").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let fresh = part_dir.join(".part-y.parquet.ba9876543210.tmp");
    std::fs::write(&fresh, b"in flight").unwrap();
    // A file that looks old but is not a temp is never touched.
    let foreign = part_dir.join("notes.txt");
    std::fs::write(&foreign, b"keep me").unwrap();

    let r = verify_later(store.as_ref()).await;
    assert_kinds(&r, &[K::ForeignObject, K::StaleTemp, K::StaleTemp]);

    let e = sweep(store.as_ref(), Utc::now(), Duration::seconds(5), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 60s"), "{e}");
    let dry = sweep(store.as_ref(), Utc::now(), Duration::hours(1), true)
        .await
        .unwrap();
    assert_eq!(dry.removed.len(), 1);
    assert!(stale.exists());
    let r = sweep(store.as_ref(), Utc::now(), Duration::hours(1), false)
        .await
        .unwrap();
    assert_eq!(r.removed.len(), 1);
    assert!(r.removed[0].ends_with(".part-x.parquet.0123456789ab.tmp"));
    assert_eq!((r.bytes, r.kept), (11, 1));
    assert!(!stale.exists() && fresh.exists() && foreign.exists());
    // Parts and pointers are untouched.
    let r = verify_later(store.as_ref()).await;
    assert_kinds(&r, &[K::ForeignObject, K::StaleTemp]);
    assert_eq!(r.parts_ok, ptrs.len() as u64);
}

#[tokio::test]
async fn posix_tampering_is_detected_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(PosixPublisher::new(dir.path()));
    let ptrs = append(store.clone(), 90, 30, 1).await;
    lineage_store::seal(store.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    assert!(verify_later(store.as_ref()).await.is_clean());
    // Flip one byte in place (same size, same mtime games do not matter).
    let p0 = dir.path().join(&ptrs[0].part_path);
    let mut b = std::fs::read(&p0).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x80;
    std::fs::write(&p0, &b).unwrap();
    // Truncate another.
    let p1 = dir.path().join(&ptrs[1].part_path);
    let len = std::fs::metadata(&p1).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&p1)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    // Delete a pointer and its part together.
    let k2 = keys::pointer_key(&ptrs[2].run_id, &ptrs[2].commit_id);
    std::fs::remove_file(dir.path().join(&k2)).unwrap();
    std::fs::remove_file(dir.path().join(&ptrs[2].part_path)).unwrap();
    let r = verify_later(store.as_ref()).await;
    let named: Vec<(K, String)> = r.problems.iter().map(|p| (p.kind, p.key.clone())).collect();
    assert!(
        named.contains(&(K::SizeMismatch, ptrs[1].part_path.clone())),
        "{named:?}"
    );
    assert!(
        named.contains(&(K::SealedPointerMissing, k2.clone())),
        "{named:?}"
    );
    assert!(
        named
            .iter()
            .any(|(k, key)| *k == K::DigestMismatch && key == &ptrs[0].part_path),
        "{named:?}"
    );
    assert!(named
        .iter()
        .all(|(_, key)| [&ptrs[0].part_path, &ptrs[1].part_path, &k2].contains(&key)));
}

//! The tamper matrix on the memory store: each case is detected, by kind, naming the object.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::keys;
use lineage_store::internal::keys::seal_key;
use lineage_store::seal;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::DigestCheck;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::ProblemKind as K;
use lineage_store::Seal;
use lineage_store::SystemClock;
use lineage_store::VerifyOptions;

use crate::support::audit::{self, append, assert_kinds, of_kind, verify_later};

/// A store of three appends, each followed by a seal (seals 1, 2, 3).
async fn sealed_store() -> (Arc<MemoryPublisher>, Vec<Pointer>) {
    let mem = Arc::new(MemoryPublisher::new());
    let store: Arc<dyn AtomicPublisher> = mem.clone();
    let mut all = Vec::new();
    for seed in 1..=3 {
        all.extend(append(store.clone(), 120, 30, seed).await);
        seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    }
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.seals, 3);
    assert_eq!(r.sealed_commits, all.len() as u64);
    (mem, all)
}

async fn get(mem: &MemoryPublisher, key: &str) -> Vec<u8> {
    mem.get(key).await.unwrap().unwrap().to_vec()
}

#[tokio::test]
async fn a_flipped_byte_in_a_part_is_a_digest_mismatch_of_that_part() {
    let (mem, ptrs) = sealed_store().await;
    let key = &ptrs[4].part_path;
    let mut b = get(&mem, key).await;
    b[10] ^= 0x01; // inside the first data page
    mem.tamper_put(key, Bytes::from(b));
    let r = verify_later(mem.as_ref()).await;
    assert!(
        r.problems.iter().all(|p| &p.key == key),
        "{:#?}",
        r.problems
    );
    let d = of_kind(&r, K::DigestMismatch);
    assert_eq!(d.len(), 1);
    // By default the part is checked against the fastest recorded digest (BLAKE3)...
    let b3 = ptrs[4].blake3.as_deref().unwrap();
    assert!(
        d[0].1.starts_with("blake3 ") && d[0].1.contains(b3),
        "{}",
        d[0].1
    );
    assert!(!d[0].1.contains(&ptrs[4].sha256), "{}", d[0].1);
    assert_eq!(
        (r.parts_blake3_checked, r.parts_sha256_checked),
        (r.parts_hashed, 0)
    );
    // ...and under `--digest all` against both, each named.
    let all = VerifyOptions {
        digest: DigestCheck::All,
        ..audit::later()
    };
    let r = verify_with(mem.as_ref(), &all).await.unwrap();
    let d = of_kind(&r, K::DigestMismatch);
    assert_eq!(d.len(), 1);
    assert!(
        d[0].1.contains(&ptrs[4].sha256) && d[0].1.contains(b3),
        "{}",
        d[0].1
    );
    assert_eq!(r.parts_sha256_checked, r.parts_hashed);
    assert_eq!(r.parts_blake3_checked, r.parts_hashed);
}

/// The choice `--digest` makes, pinned: before a seal covers a pointer, a sha256 field
/// edited alone (the part untouched) is caught only by `--digest all`; an edited BLAKE3
/// field by either; once sealed, both by the seal. A pointer without a BLAKE3 (written
/// before it existed, or stripped) is checked by its sha256, so stripping it hides nothing.
#[tokio::test]
async fn each_recorded_digest_is_checked_as_the_digest_option_says() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 60, 30, 4).await;
    let all = VerifyOptions {
        digest: DigestCheck::All,
        ..audit::later()
    };
    let edit = |i: usize, f: &dyn Fn(&mut Pointer)| {
        let mut p = ptrs[i].clone();
        f(&mut p);
        let pkey = keys::pointer_key(&p.run_id, &p.commit_id);
        mem.tamper_put(&pkey, Bytes::from(p.to_bytes().unwrap()));
    };
    edit(0, &|p| p.sha256 = "0".repeat(64));
    edit(1, &|p| p.blake3 = Some("1".repeat(64)));
    // Pointer 2 loses its BLAKE3 and its part a byte: sha256 still names the part.
    edit(2, &|p| p.blake3 = None);
    let mut b = get(&mem, &ptrs[2].part_path).await;
    b[10] ^= 0x01;
    mem.tamper_put(&ptrs[2].part_path, Bytes::from(b));

    let r = verify_later(mem.as_ref()).await;
    let d = of_kind(&r, K::DigestMismatch);
    let mut keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort();
    let mut want = [ptrs[1].part_path.as_str(), ptrs[2].part_path.as_str()];
    want.sort();
    assert_eq!(keys, want, "{d:#?}");
    let by = |k: &str| d.iter().find(|(x, _)| x == k).unwrap().1.clone();
    assert!(by(&ptrs[1].part_path).contains(&"1".repeat(64)));
    assert!(by(&ptrs[2].part_path).starts_with("sha256 "));
    assert_eq!(r.parts_sha256_checked, 0, "only the clean parts count");

    let r = verify_with(mem.as_ref(), &all).await.unwrap();
    let d = of_kind(&r, K::DigestMismatch);
    let mut keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort();
    let mut want = [
        ptrs[0].part_path.as_str(),
        ptrs[1].part_path.as_str(),
        ptrs[2].part_path.as_str(),
    ];
    want.sort();
    assert_eq!(keys, want, "{d:#?}");
    let zero = d.iter().find(|(k, _)| k == &ptrs[0].part_path).unwrap();
    assert!(
        zero.1.contains(&"0".repeat(64)) && zero.1.starts_with("sha256 "),
        "{}",
        zero.1
    );
}

#[tokio::test]
async fn a_truncated_part_is_a_size_mismatch() {
    let (mem, ptrs) = sealed_store().await;
    let key = &ptrs[0].part_path;
    let b = get(&mem, key).await;
    mem.tamper_put(key, Bytes::from(b[..b.len() - 100].to_vec()));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::SizeMismatch]);
    assert_eq!(r.problems[0].key, *key);
    assert!(r.problems[0]
        .detail
        .contains(&format!("records {}", ptrs[0].size_bytes)));
}

#[tokio::test]
async fn a_deleted_part_is_missing() {
    let (mem, ptrs) = sealed_store().await;
    assert!(mem.tamper_remove(&ptrs[2].part_path));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::MissingPart]);
    assert_eq!(r.problems[0].key, ptrs[2].part_path);
}

#[tokio::test]
async fn a_deleted_pointer_is_named_by_the_seal_and_its_part_is_no_orphan_to_adopt() {
    let (mem, ptrs) = sealed_store().await;
    let pkey = keys::pointer_key(&ptrs[3].run_id, &ptrs[3].commit_id);
    assert!(mem.tamper_remove(&pkey));
    let r = verify_later(mem.as_ref()).await;
    // The seal proves the commit had a pointer: adopting its part would write another.
    assert_kinds(&r, &[K::SealedPointerMissing]);
    let (key, detail) = &of_kind(&r, K::SealedPointerMissing)[0];
    assert_eq!(key, &pkey);
    assert!(detail.contains("lineage repair --from"), "{detail}");
}

#[tokio::test]
async fn a_part_and_its_pointer_deleted_together_are_caught_by_the_seal() {
    let (mem, ptrs) = sealed_store().await;
    let pkey = keys::pointer_key(&ptrs[1].run_id, &ptrs[1].commit_id);
    assert!(mem.tamper_remove(&pkey));
    assert!(mem.tamper_remove(&ptrs[1].part_path));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::SealedPointerMissing]);
    assert_eq!(r.problems[0].key, pkey);
}

#[tokio::test]
async fn an_edited_pointer_field_is_detected_sealed_or_not() {
    let (mem, ptrs) = sealed_store().await;
    // Sealed: any field edit changes the pointer's digest, even one the part cannot
    // contradict (the tool version).
    let pkey = keys::pointer_key(&ptrs[5].run_id, &ptrs[5].commit_id);
    let mut p = ptrs[5].clone();
    p.tool_version = "lineage-store/9.9.9".into();
    mem.tamper_put(&pkey, Bytes::from(p.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::SealedPointerChanged]);
    assert_eq!(r.problems[0].key, pkey);
    // A field the part can contradict is named twice: by the seal and by the footer.
    let mut p = ptrs[5].clone();
    p.min_event_time_utc = "2020-01-01T00:00:00.000000Z".into();
    mem.tamper_put(&pkey, Bytes::from(p.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::FooterMismatch, K::SealedPointerChanged]);
    assert_eq!(of_kind(&r, K::SealedPointerChanged)[0].0, pkey);
    let f = &of_kind(&r, K::FooterMismatch)[0];
    assert_eq!(f.0, ptrs[5].part_path);
    assert!(f.1.contains("2020-01-01"), "{}", f.1);

    // Not sealed yet: a row count that contradicts the footer is still caught.
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 60, 30, 9).await;
    let pkey = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    let mut p = ptrs[0].clone();
    p.row_count += 1;
    mem.tamper_put(&pkey, Bytes::from(p.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::FooterMismatch]);
    assert_eq!(r.problems[0].key, ptrs[0].part_path);
    assert!(
        r.problems[0].detail.contains("rows"),
        "{}",
        r.problems[0].detail
    );

    // Not sealed yet: sequence and time ranges are checked against the part's columns.
    let pkey = keys::pointer_key(&ptrs[1].run_id, &ptrs[1].commit_id);
    let mut p = ptrs[1].clone();
    p.last_sequence += 1000;
    p.max_event_time_utc = "2031-01-01T00:00:00.000000Z".into();
    mem.tamper_put(&pkey, Bytes::from(p.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    let f = of_kind(&r, K::FooterMismatch);
    let mine = f.iter().find(|(k, _)| k == &ptrs[1].part_path).unwrap();
    assert!(
        mine.1.contains("sequence") && mine.1.contains("2031-01-01"),
        "{}",
        mine.1
    );
}

#[tokio::test]
async fn an_unparseable_pointer_is_corrupt() {
    let (mem, ptrs) = sealed_store().await;
    let pkey = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    mem.tamper_put(&pkey, Bytes::from_static(b"{not json"));
    let r = verify_later(mem.as_ref()).await;
    // The part is not reported as an orphan: its pointer key exists, and is the problem.
    assert_kinds(&r, &[K::CorruptPointer, K::SealedPointerChanged]);
    assert_eq!(of_kind(&r, K::CorruptPointer)[0].0, pkey);
}

/// A valid Parquet file that is not a lineage part.
fn foreign_parquet() -> Vec<u8> {
    use arrow_array::{Int64Array, RecordBatch};
    let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1, 2, 3])) as _)])
        .unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.into_inner().unwrap()
}

#[tokio::test]
async fn a_foreign_parquet_file_in_a_partition_is_named() {
    let (mem, ptrs) = sealed_store().await;
    let dir = keys::partition_dir(&ptrs[0].run_id, &ptrs[0].target_crs);
    let plain = format!("{dir}/data.parquet");
    mem.tamper_put(&plain, Bytes::from(foreign_parquet()));
    // Under a part's name: not a part of this store, whatever its age.
    let disguised = format!("{dir}/part-0190a000-0000-7000-8000-00000000beef.parquet");
    mem.tamper_put(&disguised, Bytes::from(foreign_parquet()));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::ForeignObject, K::MalformedPart]);
    assert_eq!(of_kind(&r, K::ForeignObject)[0].0, plain);
    let o = &of_kind(&r, K::MalformedPart)[0];
    assert_eq!(o.0, disguised);
    assert!(o.1.contains("not a part of this store"), "{}", o.1);
}

#[tokio::test]
async fn a_part_replaced_by_another_valid_part_is_named() {
    let (mem, ptrs) = sealed_store().await;
    // Another commit's genuine part: valid Parquet, valid contract, wrong place.
    let victim = &ptrs[0];
    let donor = &ptrs[1];
    mem.tamper_put(
        &victim.part_path,
        Bytes::from(get(&mem, &donor.part_path).await),
    );
    let r = verify_later(mem.as_ref()).await;
    assert!(!r.is_clean());
    assert!(
        r.problems.iter().all(|p| p.key == victim.part_path),
        "{:#?}",
        r.problems
    );
    // Same size by chance or not, the part no longer matches its pointer.
    assert!(r
        .problems
        .iter()
        .any(|p| matches!(p.kind, K::SizeMismatch | K::DigestMismatch)));
}

#[tokio::test]
async fn a_deleted_middle_seal_is_named() {
    let (mem, _) = sealed_store().await;
    assert!(mem.tamper_remove(&seal_key(2)));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::SealMissing]);
    assert_eq!(r.problems[0].key, seal_key(2));
}

#[tokio::test]
async fn two_swapped_seals_are_named() {
    let (mem, _) = sealed_store().await;
    let (a, b) = (get(&mem, &seal_key(1)).await, get(&mem, &seal_key(2)).await);
    mem.tamper_put(&seal_key(1), Bytes::from(b));
    mem.tamper_put(&seal_key(2), Bytes::from(a));
    let r = verify_later(mem.as_ref()).await;
    let misplaced: Vec<String> = of_kind(&r, K::SealMisplaced)
        .into_iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(misplaced, vec![seal_key(1), seal_key(2)]);
}

#[tokio::test]
async fn an_edited_seal_is_named_by_its_root_and_its_successor() {
    let (mem, _) = sealed_store().await;
    let mut s = Seal::from_bytes("s", &get(&mem, &seal_key(2)).await).unwrap();
    s.entries.pop();
    mem.tamper_put(&seal_key(2), Bytes::from(s.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    assert!(of_kind(&r, K::SealRootMismatch)
        .iter()
        .any(|p| p.0 == seal_key(2)));
    assert_eq!(of_kind(&r, K::SealChainBroken)[0].0, seal_key(2));
}

#[tokio::test]
async fn cut_off_newest_seals_are_caught_only_with_an_expected_head() {
    let (mem, _) = sealed_store().await;
    let head = verify_later(mem.as_ref()).await.head.unwrap();
    assert!(mem.tamper_remove(&seal_key(3)));
    // What seal 3 added beside itself still shows the cut: its head marker, the locators
    // of the leaves it added and the tiles of its wider tree.
    let r = verify_later(mem.as_ref()).await;
    assert!(
        !of_kind(&r, K::BadHeadMarker).is_empty(),
        "{:#?}",
        r.problems
    );
    assert!(!of_kind(&r, K::BadLocator).is_empty(), "{:#?}", r.problems);
    assert!(!of_kind(&r, K::BadTile).is_empty(), "{:#?}", r.problems);
    // Someone who removes those too leaves a consistent chain: a chain alone cannot see
    // this (the docs say so); the commits seal 3 covered show up as not sealed.
    for p in &r.problems {
        assert!(mem.tamper_remove(&p.key), "{}", p.key);
    }
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert!(r.unsealed_commits > 0);
    let opts = VerifyOptions {
        expect_head: Some(head.clone()),
        ..audit::later()
    };
    let r = verify_with(mem.as_ref(), &opts).await.unwrap();
    assert_kinds(&r, &[K::HeadNotFound]);
    assert!(r.problems[0].detail.contains(&head));
}

#[tokio::test]
async fn an_older_expected_head_is_fine_once_newer_seals_exist() {
    let (mem, _) = sealed_store().await;
    let old = sha2_hex(&get(&mem, &seal_key(1)).await);
    let opts = VerifyOptions {
        expect_head: Some(old),
        ..audit::later()
    };
    assert!(verify_with(mem.as_ref(), &opts).await.unwrap().is_clean());
}

fn sha2_hex(b: &[u8]) -> String {
    lineage_store::internal::encode::sha256_hex(b)
}

#[tokio::test]
async fn stale_temps_are_reported_and_fresh_ones_are_in_flight() {
    let (mem, ptrs) = sealed_store().await;
    let dir = keys::partition_dir(&ptrs[0].run_id, &ptrs[0].target_crs);
    // Named as the POSIX publisher names the temp of a part it is publishing now.
    let part = "part-019b76da-a800-7000-8000-00000000abcd.parquet";
    let temp = format!("{dir}/{}", keys::temp_name(part));
    mem.tamper_put(&temp, Bytes::from_static(b"half"));
    let r = verify_later(mem.as_ref()).await;
    assert_kinds(&r, &[K::StaleTemp]);
    assert_eq!(r.problems[0].key, temp);
    let now = lineage_store::verify(mem.as_ref()).await.unwrap();
    assert!(now.is_clean(), "{:#?}", now.problems);
    assert_eq!(now.in_flight, 1);
    assert_eq!(now.in_flight_objects[0].key, temp);
    assert_eq!(now.summary, "clean except 1 object in flight");
}

//! `repair` never writes history the store's records contradict, never adopts a part of
//! another store, and restores what is missing from a replica or backup (`--from`);
//! `verify` never calls a part "in flight" when a seal or an index entry records its
//! pointer (issue 21, defects 2 and 3).

use std::sync::Arc;

use bytes::Bytes;
use chrono::{Duration, Utc};
use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::keys;
use lineage_store::{
    repair_with, seal, verify_with, Adoption, AtomicPublisher, MemoryPublisher, Pointer,
    ProblemKind, RepairOptions, SystemClock, VerifyOptions,
};

use crate::support::audit::{append, of_kind, verify_later};
use crate::support::{lineage, text};

fn later(dry_run: bool) -> RepairOptions {
    RepairOptions {
        now: Utc::now() + Duration::days(1),
        grace: Duration::seconds(1),
        dry_run,
        adopt: Adoption::none(),
        expect_head: None,
        writer_keys: Vec::new(),
    }
}

/// A byte-for-byte copy of every object (a backup).
async fn copy_of(src: &MemoryPublisher) -> Arc<MemoryPublisher> {
    let dst = Arc::new(MemoryPublisher::new());
    for o in src.list("").await.unwrap() {
        let b = src.get(&o.key).await.unwrap().unwrap();
        dst.put_create(&o.key, b).await.unwrap();
    }
    dst
}

async fn snapshot(s: &dyn AtomicPublisher) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for o in s.list("").await.unwrap() {
        out.push((
            o.key.clone(),
            sha256_hex(&s.get(&o.key).await.unwrap().unwrap()),
        ));
    }
    out
}

/// Three commits, sealed; then two more, not sealed.
async fn store() -> (Arc<MemoryPublisher>, Vec<Pointer>, Vec<Pointer>) {
    let mem = Arc::new(MemoryPublisher::new());
    let sealed = append(mem.clone(), 300, 100, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let unsealed = append(mem.clone(), 200, 100, 2).await;
    (mem, sealed, unsealed)
}

fn pkey(p: &Pointer) -> String {
    keys::pointer_key(&p.run_id, &p.commit_id)
}

#[tokio::test]
async fn a_deleted_sealed_pointer_is_never_adopted_and_is_restored_from_a_backup() {
    let (mem, sealed, _) = store().await;
    let backup = copy_of(&mem).await;
    let before = snapshot(mem.as_ref()).await;
    let gone = pkey(&sealed[0]);
    assert!(mem.tamper_remove(&gone));

    // verify, at once: the part is not "in flight", its pointer is missing.
    let now = verify_with(mem.as_ref(), &VerifyOptions::default())
        .await
        .unwrap();
    assert!(
        now.in_flight_objects
            .iter()
            .all(|f| f.key != sealed[0].part_path),
        "{:#?}",
        now.in_flight_objects
    );
    assert_eq!(
        of_kind(&now, ProblemKind::SealedPointerMissing).len(),
        1,
        "{:#?}",
        now.problems
    );
    // ... and a day later it is no orphan to adopt either.
    let r = verify_later(mem.as_ref()).await;
    assert!(
        of_kind(&r, ProblemKind::OrphanPart).is_empty(),
        "{:#?}",
        r.problems
    );

    // repair without a backup: adopts nothing, names what is missing and how to restore it.
    let out = repair_with(mem.as_ref(), None, &later(false))
        .await
        .unwrap();
    assert!(out.adopted.is_empty(), "{out:#?}");
    assert_eq!(out.missing.len(), 1, "{out:#?}");
    assert_eq!(out.missing[0].0, gone);
    assert!(out.missing[0].1.contains("seal 1 sealed it"), "{out:#?}");
    assert!(
        out.missing[0].1.contains("lineage repair --from"),
        "{out:#?}"
    );
    let r = verify_later(mem.as_ref()).await;
    assert!(
        of_kind(&r, ProblemKind::SealedPointerChanged).is_empty(),
        "{:#?}",
        r.problems
    );

    // With the backup: restored byte-identical, the store is as it was.
    let dry = repair_with(mem.as_ref(), Some(backup.as_ref()), &later(true))
        .await
        .unwrap();
    assert_eq!(dry.restored, vec![gone.clone()]);
    assert!(
        mem.get(&gone).await.unwrap().is_none(),
        "a dry run publishes nothing"
    );
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &later(false))
        .await
        .unwrap();
    assert_eq!(out.restored, vec![gone.clone()], "{out:#?}");
    assert!(out.is_complete(), "{out:#?}");
    assert_eq!(snapshot(mem.as_ref()).await, before);
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

#[tokio::test]
async fn a_pointer_an_index_entry_records_is_never_adopted_nor_in_flight() {
    let (mem, _, unsealed) = store().await;
    let backup = copy_of(&mem).await;
    let gone = pkey(&unsealed[0]);
    assert!(mem.tamper_remove(&gone));
    let now = verify_with(mem.as_ref(), &VerifyOptions::default())
        .await
        .unwrap();
    assert!(
        now.in_flight_objects
            .iter()
            .all(|f| f.key != unsealed[0].part_path),
        "{:#?}",
        now.in_flight_objects
    );
    let bad = of_kind(&now, ProblemKind::BadIndexEntry);
    assert!(
        bad.len() == 1 && bad[0].1.contains(&gone),
        "{:#?}",
        now.problems
    );
    let out = repair_with(mem.as_ref(), None, &later(false))
        .await
        .unwrap();
    assert!(out.adopted.is_empty(), "{out:#?}");
    assert!(out.missing[0].1.contains("index entry"), "{out:#?}");
    // A backup's pointer that disagrees with the part it names is not restored.
    let forged = copy_of(&backup).await;
    let mut p: Pointer =
        serde_json::from_slice(&forged.get(&gone).await.unwrap().unwrap()).unwrap();
    p.row_count += 1;
    forged.tamper_put(&gone, Bytes::from(p.to_bytes().unwrap()));
    let out = repair_with(mem.as_ref(), Some(forged.as_ref()), &later(false))
        .await
        .unwrap();
    assert!(
        out.restored.is_empty() && out.missing.len() == 1,
        "{out:#?}"
    );
    // The true one is.
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &later(false))
        .await
        .unwrap();
    assert_eq!(out.restored, vec![gone.clone()], "{out:#?}");
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

#[tokio::test]
async fn deleted_seals_and_parts_are_restored_checked_against_what_records_them() {
    let (mem, sealed, unsealed) = store().await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let backup = copy_of(&mem).await;
    let before = snapshot(mem.as_ref()).await;
    let seal1 = keys::seal_key(1);
    assert!(mem.tamper_remove(&seal1));
    assert!(mem.tamper_remove(&sealed[1].part_path));
    assert!(mem.tamper_remove(&unsealed[1].part_path));
    // A backup whose part has other bytes is refused, named.
    let bad = copy_of(&backup).await;
    bad.tamper_put(
        &sealed[1].part_path,
        Bytes::from_static(b"PAR1 not the part PAR1"),
    );
    let out = repair_with(mem.as_ref(), Some(bad.as_ref()), &later(true))
        .await
        .unwrap();
    assert!(
        out.missing
            .iter()
            .any(|(k, why)| k == &sealed[1].part_path && why.contains("other bytes")),
        "{out:#?}"
    );
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &later(false))
        .await
        .unwrap();
    assert!(out.is_complete(), "{out:#?}");
    let mut restored = out.restored.clone();
    restored.sort();
    let mut want = vec![
        seal1,
        sealed[1].part_path.clone(),
        unsealed[1].part_path.clone(),
    ];
    want.sort();
    assert_eq!(restored, want);
    assert_eq!(snapshot(mem.as_ref()).await, before);
}

#[tokio::test]
async fn a_part_of_another_store_is_never_adopted() {
    let (mem, _, _) = store().await;
    let other = Arc::new(MemoryPublisher::new());
    let theirs = append(other.clone(), 100, 100, 9).await;
    let planted = &theirs[0].part_path;
    mem.tamper_put(planted, other.get(planted).await.unwrap().unwrap());
    let out = repair_with(mem.as_ref(), None, &later(false))
        .await
        .unwrap();
    assert!(out.adopted.is_empty(), "{out:#?}");
    assert_eq!(out.refused.len(), 1, "{out:#?}");
    assert!(
        out.refused[0].1.contains("written to another store"),
        "{out:#?}"
    );
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, ProblemKind::MalformedPart);
    assert!(
        bad.len() == 1 && bad[0].1.contains("another store"),
        "{:#?}",
        r.problems
    );
    // Nor through a backup of another store.
    let e = repair_with(mem.as_ref(), Some(other.as_ref()), &later(false))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("another store"), "{e}");
}

#[tokio::test]
async fn a_crash_orphan_of_this_store_is_still_adopted() {
    let (mem, _, unsealed) = store().await;
    let p = &unsealed[1];
    // A crash between part and pointer: no pointer, no index entry.
    assert!(mem.tamper_remove(&pkey(p)));
    for o in mem.list(keys::INDEX_PREFIX).await.unwrap() {
        if o.key.contains(&p.commit_id) {
            assert!(mem.tamper_remove(&o.key));
        }
    }
    // Listed, not adopted, until it is named.
    let out = repair_with(mem.as_ref(), None, &later(false))
        .await
        .unwrap();
    assert!(out.adopted.is_empty(), "{out:#?}");
    assert_eq!(out.orphans.len(), 1, "{out:#?}");
    assert_eq!(out.orphans[0].0, p.part_path);
    assert!(!out.is_complete());
    let named = RepairOptions {
        adopt: Adoption::parts([p.part_path.clone()]),
        ..later(false)
    };
    let out = repair_with(mem.as_ref(), None, &named).await.unwrap();
    assert_eq!(out.adopted, vec![pkey(p)], "{out:#?}");
    assert!(out.is_complete(), "{out:#?}");
}

#[test]
fn repair_through_the_cli_restores_a_deleted_sealed_pointer_from_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let o = lineage(
        &[
            "demo",
            "--store",
            s,
            "--events",
            "600",
            "--batch-rows",
            "200",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let backup = dir.path().join("backup");
    let b = backup.to_str().unwrap();
    let o = lineage(&["replicate", "--from", s, "--to", b], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let commits = store.join("_lineage/commits");
    let run = std::fs::read_dir(&commits)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let ptr = std::fs::read_dir(&run)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&ptr).unwrap();
    std::fs::remove_file(&ptr).unwrap();
    let o = lineage(&["repair", "--store", s, "--grace", "1s"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("missing: _lineage/commits/") && out.contains("0 adopted"),
        "{out}"
    );
    assert!(!out.contains("seal --rescan"), "{out}");
    let o = lineage(&["repair", "--store", s, "--from", b], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("1 restored"), "{out}");
    assert_eq!(std::fs::read(&ptr).unwrap(), bytes);
    let o = lineage(&["verify", "--store", s], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// Delta versions the log lacks are written again byte-identical, from the seals,
/// pointers and parts (with or without `--from`); one whose part is still missing is
/// reported, not written with other bytes.
#[tokio::test]
async fn deleted_delta_versions_are_rebuilt_byte_identical_once_their_parts_are_back() {
    let (mem, sealed, _) = store().await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap(); // seal 2
    append(mem.clone(), 100, 100, 3).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap(); // seal 3
    let backup = copy_of(&mem).await;
    let before = snapshot(mem.as_ref()).await;
    let (v0, v1, v2) = (
        lineage_store::internal::delta::version_key(0),
        lineage_store::internal::delta::version_key(1),
        lineage_store::internal::delta::version_key(2),
    );
    assert!(before.iter().any(|(k, _)| k == &v2), "{before:#?}");
    // A gap in the log (readers stop before it): versions 1 and 2 rebuilt.
    assert!(mem.tamper_remove(&v1));
    assert!(mem.tamper_remove(&v2));
    let r = verify_with(mem.as_ref(), &VerifyOptions::default())
        .await
        .unwrap();
    assert!(
        !of_kind(&r, ProblemKind::MissingDeltaVersion).is_empty(),
        "{r:#?}"
    );
    let dry = repair_with(mem.as_ref(), None, &later(true)).await.unwrap();
    assert_eq!(dry.restored, [v1.clone(), v2.clone()]);
    assert!(
        mem.get(&v1).await.unwrap().is_none(),
        "a dry run writes nothing"
    );
    let out = repair_with(mem.as_ref(), None, &later(false))
        .await
        .unwrap();
    assert!(out.is_complete(), "{out:#?}");
    assert_eq!(out.restored, [v1.clone(), v2.clone()]);
    assert_eq!(snapshot(mem.as_ref()).await, before, "byte-identical");
    let r = verify_with(mem.as_ref(), &VerifyOptions::default())
        .await
        .unwrap();
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    // Version 0 and a sealed part gone: without the part, version 1 (which seals it) cannot
    // be rebuilt as it was; it is named, not written. From the backup: all back.
    assert!(mem.tamper_remove(&v0));
    assert!(mem.tamper_remove(&v1));
    assert!(mem.tamper_remove(&sealed[0].part_path));
    let out = repair_with(mem.as_ref(), None, &later(false))
        .await
        .unwrap();
    assert_eq!(out.restored, std::slice::from_ref(&v0));
    let why = out
        .missing
        .iter()
        .find(|(k, _)| k == &v1)
        .map(|(_, w)| w.as_str())
        .unwrap_or_default();
    assert!(
        why.contains("cannot be rebuilt byte-identical") && why.contains(&sealed[0].part_path),
        "{out:#?}"
    );
    assert!(mem.get(&v1).await.unwrap().is_none());
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &later(false))
        .await
        .unwrap();
    assert!(out.is_complete(), "{out:#?}");
    assert_eq!(out.restored, [sealed[0].part_path.clone(), v1.clone()]);
    assert_eq!(snapshot(mem.as_ref()).await, before, "byte-identical");
}

/// The newest seals, which no later seal records: restored only against a head known
/// outside the store (`--expect-head`), each checked; a wrong head restores nothing.
#[tokio::test]
async fn the_newest_seals_are_restored_only_against_an_expected_head() {
    let (mem, _, _) = store().await; // seal 1
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    append(mem.clone(), 100, 100, 3).await;
    let s3 = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let backup = copy_of(&mem).await;
    let before = snapshot(mem.as_ref()).await;
    let head = s3.head.clone();
    let (k2, k3) = (keys::seal_key(2), keys::seal_key(3));
    assert!(mem.tamper_remove(&k3));
    assert!(mem.tamper_remove(&k2));
    // Nothing records seals 2 and 3: without a head they stay gone, silently so.
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &later(false))
        .await
        .unwrap();
    assert!(
        !out.restored.contains(&k2) && !out.restored.contains(&k3),
        "{out:#?}"
    );
    // A head that no seal of the backup has: nothing restored, named.
    let mut wrong = later(false);
    wrong.expect_head = Some("ab".repeat(32));
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &wrong)
        .await
        .unwrap();
    assert!(
        out.missing
            .iter()
            .any(|(k, why)| k == &k2 && why.contains("holds no seal after it")),
        "{out:#?}"
    );
    assert!(mem.get(&k2).await.unwrap().is_none());
    // A backup whose seal 2 was swapped: seal 3's prev_sha256 names it.
    let forged = copy_of(&backup).await;
    forged.tamper_put(&k2, Bytes::from_static(b"{\"not\": \"seal 2\"}"));
    let mut right = later(false);
    right.expect_head = Some(head.to_uppercase());
    let out = repair_with(mem.as_ref(), Some(forged.as_ref()), &right)
        .await
        .unwrap();
    assert!(
        out.missing
            .iter()
            .any(|(k, why)| k == &k2 && why.contains("the seal after it records")),
        "{out:#?}"
    );
    assert!(mem.get(&k2).await.unwrap().is_none());
    // The right head: seals 2 and 3 back, byte-identical, the store as it was.
    let out = repair_with(mem.as_ref(), Some(backup.as_ref()), &right)
        .await
        .unwrap();
    assert!(out.is_complete(), "{out:#?}");
    assert!(
        out.restored.contains(&k2) && out.restored.contains(&k3),
        "{out:#?}"
    );
    assert_eq!(snapshot(mem.as_ref()).await, before);
    let r = verify_with(
        mem.as_ref(),
        &VerifyOptions {
            expect_head: Some(head.clone()),
            ..VerifyOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
}

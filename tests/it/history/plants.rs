//! Issue 34 item 2: no single object a writer can plant on a create-only store stops
//! sealing. A corrupt pointer with an index entry is left out of the seal and named (by
//! `seal`, incremental and `--rescan`, and by `verify`); a foreign object under the next
//! seal's Delta version name is named by `seal` and `verify` while the seal chain goes on,
//! and the log heals once the object is gone; a version far ahead is named by `verify`.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::keys;
use lineage_store::internal::keys::seal_key;
use lineage_store::seal;
use lineage_store::seal_with;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::ProblemKind as K;
use lineage_store::SealOptions;
use lineage_store::SystemClock;

use crate::support::audit::{append, of_kind, verify_later};

const PLANTED_COMMIT: &str = "00000000-0000-4000-8000-00000000beef";

/// A 30-byte pointer that is not JSON, and an index entry naming it (committed now).
fn plant_corrupt_pointer(mem: &MemoryPublisher) -> String {
    let key = keys::pointer_key("run-planted", PLANTED_COMMIT);
    mem.tamper_put(&key, Bytes::from_static(b"{ this is no pointer at all }"));
    let entry = keys::index_key(chrono::Utc::now(), PLANTED_COMMIT, "run-planted");
    mem.tamper_put(&entry, Bytes::new());
    key
}

#[tokio::test]
async fn a_corrupt_pointer_is_left_out_and_named_and_the_rest_is_sealed() {
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 40, 10, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let planted = plant_corrupt_pointer(&mem);
    let new = append(mem.clone(), 30, 10, 2).await;

    // Incremental (from the index): the planted entry is read, refused and named.
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s.seq, s.added, s.full_scan), (2, new.len() as u64, false));
    assert_eq!(s.not_sealed.len(), 1, "{:?}", s.not_sealed);
    assert_eq!(s.not_sealed[0].key, planted);
    assert!(
        s.not_sealed[0].reason.contains("pointer"),
        "{:?}",
        s.not_sealed
    );

    // A full seal lists it among the pointers: the same.
    let more = append(mem.clone(), 20, 10, 3).await;
    let rescan = SealOptions {
        rescan: true,
        ..SealOptions::default()
    };
    let s = seal_with(mem.as_ref(), &SystemClock, None, &rescan)
        .await
        .unwrap();
    assert_eq!((s.seq, s.added, s.full_scan), (3, more.len() as u64, true));
    assert_eq!(
        s.not_sealed
            .iter()
            .map(|n| n.key.as_str())
            .collect::<Vec<_>>(),
        [planted.as_str()]
    );
    // Nothing new but the plant: nothing is published, and the plant is still named.
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert!(s.nothing_new);

    // verify names it; every real commit is sealed and clean.
    let r = verify_later(mem.as_ref()).await;
    assert!(
        r.problems.iter().any(|p| p.key == planted),
        "{:#?}",
        r.problems
    );
    assert!(
        r.problems.iter().all(|p| p.key.contains("run-planted")),
        "only the plant is named: {:#?}",
        r.problems
    );
    assert_eq!(r.unsealed_commits, 1, "the plant, never sealed");
}

/// A Delta commit of another writer, as a plant would be.
const FOREIGN_VERSION: &[u8] =
    b"{\"commitInfo\":{\"timestamp\":1,\"operation\":\"WRITE\",\"engineInfo\":\"someone else\"}}\n";

#[tokio::test]
async fn a_foreign_delta_version_does_not_stop_sealing_and_the_log_heals_without_it() {
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 40, 10, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let planted = keys::delta_version_key(2);
    mem.tamper_put(&planted, Bytes::from_static(FOREIGN_VERSION));

    // Seal 2 is published and complete (its head marker), its version is not ours.
    append(mem.clone(), 20, 10, 2).await;
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!(s.seq, 2);
    let c = s.delta_conflict.clone().expect("the conflict is named");
    assert_eq!((c.version, c.key.as_str()), (2, planted.as_str()));
    assert!(mem.get(&keys::head_key(2)).await.unwrap().is_some());

    // Seal 3 and 4 too: the chain goes on, the log stays at the plant (no version is
    // written on top of one that is not ours), and each seal names it.
    for (seq, seed) in [(3, 3), (4, 4)] {
        append(mem.clone(), 20, 10, seed).await;
        let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
        assert_eq!(s.seq, seq);
        assert_eq!(s.delta_conflict.map(|c| c.version), Some(2));
        assert!(mem
            .get(&keys::delta_version_key(seq))
            .await
            .unwrap()
            .is_none());
    }
    let r = verify_later(mem.as_ref()).await;
    let bad: Vec<String> = of_kind(&r, K::BadDeltaVersion)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(bad, std::slice::from_ref(&planted), "{:#?}", r.problems);
    assert!(
        r.problems
            .iter()
            .all(|p| p.key.starts_with(keys::DELTA_LOG_PREFIX)),
        "the seal chain is valid: {:#?}",
        r.problems
    );
    assert_eq!(r.unsealed_commits, 0);

    // Where the plant can be deleted: the next seal writes versions 2..=5 from the seals.
    assert!(mem.tamper_remove(&planted));
    append(mem.clone(), 20, 10, 5).await;
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s.seq, s.delta_conflict), (5, None));
    assert_eq!(
        lineage_store::delta_version(mem.as_ref()).await.unwrap(),
        Some(5)
    );
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
}

#[tokio::test]
async fn a_foreign_object_at_the_first_version_or_far_ahead_does_not_stop_sealing() {
    // Version 0 planted before the first seal.
    let mem = Arc::new(MemoryPublisher::new());
    mem.tamper_put(
        &keys::delta_version_key(0),
        Bytes::from_static(FOREIGN_VERSION),
    );
    append(mem.clone(), 20, 10, 1).await;
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!(s.seq, 1);
    assert_eq!(s.delta_conflict.map(|c| c.version), Some(0));
    append(mem.clone(), 20, 10, 2).await;
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s.seq, s.delta_conflict.map(|c| c.version)), (2, Some(0)));
    assert!(mem.get(&seal_key(2)).await.unwrap().is_some());

    // A version far ahead: sealing goes on; verify names the version engines trip on.
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 20, 10, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let far = keys::delta_version_key(1000);
    mem.tamper_put(&far, Bytes::from_static(FOREIGN_VERSION));
    append(mem.clone(), 20, 10, 2).await;
    let s = seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s.seq, s.delta_conflict), (2, None));
    let r = verify_later(mem.as_ref()).await;
    let bad: Vec<String> = of_kind(&r, K::BadDeltaVersion)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(bad, [far], "{:#?}", r.problems);
}

#[test]
fn seal_names_what_it_leaves_out_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    let input = dir.path().join("in.ndjson");
    let append = |tag: &str| {
        std::fs::write(&input, crate::support::ndjson("run-a", 5, tag)).unwrap();
        let o = lineage(&["append", "--store", s, "--input", input.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{:?}", crate::support::text(&o));
    };
    append("one");
    assert_eq!(lineage(&["seal", "--store", s]).status.code(), Some(0));
    let plant = |key: &str, bytes: &[u8]| {
        let p = store.join(key);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    let pointer = keys::pointer_key("run-planted", PLANTED_COMMIT);
    plant(&pointer, b"{ this is no pointer at all }");
    plant(
        &keys::index_key(chrono::Utc::now(), PLANTED_COMMIT, "run-planted"),
        b"",
    );
    plant(&keys::delta_version_key(2), FOREIGN_VERSION);
    // A symlink under another pointer's name, with its index entry.
    let link_commit = "00000000-0000-4000-8000-00000000cafe";
    let link = keys::pointer_key("run-planted", link_commit);
    std::os::unix::fs::symlink("/etc/hostname", store.join(&link)).unwrap();
    plant(
        &keys::index_key(chrono::Utc::now(), link_commit, "run-planted"),
        b"",
    );
    append("two");
    for args in [
        &["seal", "--store", s][..],
        &["seal", "--store", s, "--rescan", "--allow-empty"],
    ] {
        let o = lineage(args);
        let (out, err) = crate::support::text(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {out}{err}");
        assert!(out.contains(&format!("not sealed: {pointer}: ")), "{out}");
        assert!(out.contains(&format!("not sealed: {link}: ")), "{out}");
        assert!(
            out.contains(&format!(
                "Delta log: version 2 ({}) is not ours",
                keys::delta_version_key(2)
            )),
            "{out}"
        );
    }
    // `verify` names every plant, the symlink under a pointer's name (with an index entry
    // naming it) included, instead of stopping at it (it exited 3 there).
    let o = lineage(&["verify", "--store", s]);
    let (out, err) = crate::support::text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains(&pointer) && out.contains(&keys::delta_version_key(2)),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("symlink") && l.contains(&link)),
        "{out}"
    );
}

fn lineage(args: &[&str]) -> std::process::Output {
    crate::support::lineage(args, None)
}

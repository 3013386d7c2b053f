//! Seals with nothing new, and signatures that start later and rotate (issue 21, defects 6
//! and 7).

use std::sync::Arc;

use lineage_store::internal::keys;
use lineage_store::{
    keygen, read_signing_key, seal_with, AtomicPublisher, MemoryPublisher, ProblemKind,
    SealOptions, SystemClock, VerifyOptions,
};

use crate::support::audit::{append, of_kind};
use crate::support::{lineage, ndjson, text};

#[tokio::test]
async fn a_seal_with_nothing_new_publishes_nothing_unless_allowed() {
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 100, 50, 1).await;
    let first = seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert!(!first.nothing_new);
    let before = mem.list("").await.unwrap().len();
    let again = seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert!(again.nothing_new);
    assert_eq!((again.seq, &again.head, again.added), (1, &first.head, 0));
    assert_eq!(
        mem.list("").await.unwrap().len(),
        before,
        "nothing published"
    );
    let beat = SealOptions {
        allow_empty: true,
        ..SealOptions::default()
    };
    let heartbeat = seal_with(mem.as_ref(), &SystemClock, None, &beat)
        .await
        .unwrap();
    assert_eq!(
        (heartbeat.seq, heartbeat.added, heartbeat.nothing_new),
        (2, 0, false)
    );
}

fn seal_cli(store: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["seal", "--store", store];
    args.extend_from_slice(extra);
    lineage(&args, None)
}

fn add(store: &str, tag: &str) {
    let o = lineage(
        &["append", "--store", store],
        Some(ndjson("run-a", 5, tag).as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn seal_through_the_cli_says_nothing_new_and_allow_empty_keeps_heartbeats() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    add(s, "a");
    let o = seal_cli(s, &[]);
    let head = text(&o)
        .0
        .lines()
        .find_map(|l| l.strip_prefix("head ").map(str::to_string))
        .unwrap();
    let o = seal_cli(s, &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("nothing new since seal 1"), "{out}");
    assert!(out.contains(&format!("head {head}")), "{out}");
    assert!(!dir.path().join("s").join(keys::seal_key(2)).exists());
    let o = seal_cli(s, &["--allow-empty"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        text(&o).0.contains("seal 2 adds 0 commits"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn signing_starts_later_rotates_keys_and_never_stops_silently() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    let (k1, k2) = (dir.path().join("k1"), dir.path().join("k2"));
    let id1 = keygen(&k1).unwrap();
    let id2 = keygen(&k2).unwrap();
    let (sk1, sk2) = (k1.with_extension("key"), k2.with_extension("key"));
    let (pk1, pk2) = (k1.with_extension("pub"), k2.with_extension("pub"));
    let (pk1, pk2) = (pk1.to_str().unwrap(), pk2.to_str().unwrap());
    // Seal 1 unsigned, seal 2 signed by k1, seal 3 by k2 (the rotation).
    add(s, "a");
    assert_eq!(seal_cli(s, &[]).status.code(), Some(0));
    add(s, "b");
    let o = seal_cli(s, &["--signing-key", sk1.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    add(s, "c");
    let o = seal_cli(s, &["--signing-key", sk2.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // Seals name their key id.
    let seal3: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("s").join(keys::seal_key(3))).unwrap(),
    )
    .unwrap();
    assert_eq!(seal3["key_id"].as_str(), Some(id2.as_str()));

    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", "--store", s];
        args.extend_from_slice(extra);
        lineage(&args, None)
    };
    // Both keys, signing from seal 2: clean, 2 signed.
    let o = verify(&[
        "--public-key",
        pk1,
        "--public-key",
        pk2,
        "--signed-from",
        "2",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    // Both keys, every seal: seal 1 is named unsigned.
    let o = verify(&["--public-key", pk1, "--public-key", pk2]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines().any(|l| l.contains("bad_signature")
            && l.contains(&keys::seal_key(1))
            && l.contains("not signed")),
        "{out}"
    );
    // Only the old key: seal 3 is named as signed by a key not given.
    let o = verify(&["--public-key", pk1, "--signed-from", "2"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines().any(|l| l.contains(&keys::seal_key(3))
            && l.contains(&format!("signed by key {id2}, which is not a key given"))),
        "{out}"
    );
    // Seals 1-2 are named only as what held (the anchor's line), never as a problem.
    assert!(
        !out.lines()
            .any(|l| l.starts_with("PROBLEM") && l.contains(&format!("signed by key {id1}"))),
        "{out}"
    );
    assert!(
        out.contains(&format!("seal 2 signed by key {id1} (given)")),
        "{out}"
    );

    // Sealing without a key after a signed seal is refused, nothing published...
    add(s, "d");
    let o = seal_cli(s, &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("is signed") && err.contains("--unsigned"),
        "{err}"
    );
    assert!(!dir.path().join("s").join(keys::seal_key(4)).exists());
    // ... unless asked; then verify --signed-from names the unsigned seal.
    assert_eq!(seal_cli(s, &["--unsigned"]).status.code(), Some(0));
    let o = verify(&[
        "--public-key",
        pk1,
        "--public-key",
        pk2,
        "--signed-from",
        "2",
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains(&keys::seal_key(4)) && l.contains("--signed-from 2")),
        "{out}"
    );
    let _ = read_signing_key(&sk1).unwrap();
}

#[tokio::test]
async fn verify_since_seal_applies_the_same_signature_rules() {
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("k");
    keygen(&k).unwrap();
    let sk = read_signing_key(&k.with_extension("key")).unwrap();
    let pk = lineage_store::read_public_key(&k.with_extension("pub")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 60, 30, 1).await;
    lineage_store::seal(mem.as_ref(), &SystemClock, None)
        .await
        .unwrap();
    append(mem.clone(), 60, 30, 2).await;
    lineage_store::seal(mem.as_ref(), &SystemClock, Some(&sk))
        .await
        .unwrap();
    for since in [None, Some(Some(1))] {
        let opts = VerifyOptions {
            public_keys: vec![pk],
            signed_from: Some(2),
            since_seal: since,
            now: chrono::Utc::now() + chrono::Duration::days(1),
            ..VerifyOptions::default()
        };
        let r = lineage_store::verify_with(mem.as_ref(), &opts)
            .await
            .unwrap();
        assert!(r.is_clean(), "{since:?}: {:#?}", r.problems);
        let strict = VerifyOptions {
            signed_from: None,
            ..opts
        };
        let r = lineage_store::verify_with(mem.as_ref(), &strict)
            .await
            .unwrap();
        if since.is_none() {
            assert_eq!(
                of_kind(&r, ProblemKind::BadSignature).len(),
                1,
                "{:#?}",
                r.problems
            );
        }
    }
}

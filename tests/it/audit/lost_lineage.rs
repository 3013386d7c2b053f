//! Issue 33 item 6: recovery after `_lineage/` is lost (data and `_delta_log/` kept).
//! `verify` names the cause (the store's own metadata is missing), and `repair --from
//! REPLICA --expect-head H` alone restores every kind of object the replica holds (the
//! store identity and the compaction records included), after which `verify` is clean.

use crate::support::{lineage, sample, text};

fn ok(args: &[&str]) -> String {
    let o = lineage(args, None);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}\nstdout: {out}\nstderr: {err}"
    );
    out
}

#[test]
fn a_store_that_lost_lineage_is_named_so_and_repair_from_alone_makes_it_clean() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store").display().to_string();
    let r = dir.path().join("replica").display().to_string();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&sample::events(60))).unwrap();
    ok(&[
        "append",
        "--store",
        &s,
        "--input",
        input.to_str().unwrap(),
        "--batch-rows",
        "5",
    ]);
    ok(&["seal", "--store", &s]);
    ok(&["compact", "--store", &s, "--target-rows", "20"]);
    let sealed = ok(&["seal", "--store", &s, "--allow-empty"]);
    let head = sealed
        .split_whitespace()
        .skip_while(|w| *w != "head")
        .nth(1)
        .unwrap()
        .to_string();
    ok(&["replicate", "--from", &s, "--to", &r]);
    ok(&["verify", "--store", &s, "--expect-head", &head]);

    std::fs::remove_dir_all(dir.path().join("store/_lineage")).unwrap();
    let o = lineage(&["verify", "--store", &s], None);
    assert_eq!(o.status.code(), Some(1));
    let (out, err) = text(&o);
    let all = format!("{out}\n{err}");
    assert!(
        all.contains("the store's own metadata (_lineage/) is missing"),
        "{all}"
    );
    assert!(
        !all.contains("written to another store and copied in"),
        "{all}"
    );
    assert!(!all.contains("a foreign Delta writer"), "{all}");
    assert!(all.contains("lineage repair --from"), "{all}");

    ok(&[
        "repair",
        "--store",
        &s,
        "--from",
        &r,
        "--expect-head",
        &head,
    ]);
    let v = ok(&["verify", "--store", &s, "--expect-head", &head]);
    assert!(v.contains("clean"), "{v}");
    // The store is whole again: its identity, compaction records and parts are back.
    assert_eq!(
        std::fs::read(dir.path().join("store/_lineage/store.json")).unwrap(),
        std::fs::read(dir.path().join("replica/_lineage/store.json")).unwrap()
    );
    let records = |root: &str| {
        let mut v: Vec<String> = std::fs::read_dir(format!("{root}/_lineage/compacted/records"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    assert!(!records(&r).is_empty());
    assert_eq!(records(&s), records(&r));
    ok(&["seal", "--store", &s, "--allow-empty", "--rescan"]);
}

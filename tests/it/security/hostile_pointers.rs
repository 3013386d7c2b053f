//! Pointers are read from a store a writer can write: every field is held to the rules of
//! input (`corrupt_pointer`), no key built from one leaves the store, and one hostile
//! pointer does not abort a whole command with an internal error.

use std::path::Path;
use std::sync::{Arc, Mutex};

use lineage_store::internal::keys;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind as K;

use crate::security::symlinks::local_store;
use crate::support::audit::{later, of_kind};

/// Rewrite the pointer of `ptr` with `edit`.
fn edit_pointer(
    root: &Path,
    ptr: &lineage_store::Pointer,
    edit: impl Fn(&mut serde_json::Value),
) -> String {
    let pk = keys::pointer_key(&ptr.run_id, &ptr.commit_id);
    let path = root.join(&pk);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    pk
}

#[tokio::test]
async fn a_traversing_target_crs_is_a_corrupt_pointer_and_nothing_outside_is_listed() {
    let (tmp, root, ptrs) = local_store().await;
    let p = &ptrs[0];
    let hostile = "EPSG:4326/../../../../outside/decoy";
    // A decoy tree outside the store, holding a file of the part's name.
    let decoy = tmp.path().join("outside/decoy");
    std::fs::create_dir_all(decoy.join("deep/er")).unwrap();
    std::fs::write(
        decoy.join(format!("part-{}.parquet", p.commit_id)),
        b"secret size",
    )
    .unwrap();
    let pk = edit_pointer(&root, p, |v| {
        v["target_crs"] = hostile.into();
        v["part_path"] = keys::part_key(&p.run_id, hostile, &p.commit_id).into();
    });

    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let store = PosixPublisher::new(&root).with_list_hook(Arc::new(move |path: &Path| {
        log.lock().unwrap().push(path.to_path_buf())
    }));
    let r = lineage_store::verify_with(&store, &later()).await.unwrap();
    let bad = of_kind(&r, K::CorruptPointer);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert_eq!(bad[0].0, pk);
    assert!(
        bad[0].1.contains("target_crs") && bad[0].1.contains("canonical EPSG"),
        "{}",
        bad[0].1
    );
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    for path in seen.iter() {
        let under = path.starts_with(&root) && !path.components().any(|c| c.as_os_str() == "..");
        assert!(under, "listed outside the store: {}", path.display());
    }
    // Nothing says the outside file's size.
    assert!(
        r.problems.iter().all(|p| !p.detail.contains("11 bytes")),
        "{:#?}",
        r.problems
    );

    // Replicate and export: refused or reported, never an internal error.
    let dst = tmp.path().join("replica");
    for args in [
        vec![
            "replicate",
            "--from",
            root.to_str().unwrap(),
            "--to",
            dst.to_str().unwrap(),
        ],
        vec!["export", "openlineage", "--store", root.to_str().unwrap()],
        vec!["log", "--store", root.to_str().unwrap()],
    ] {
        let o = crate::support::lineage(&args, None);
        let (_, err) = crate::support::text(&o);
        assert_ne!(o.status.code(), Some(4), "{args:?}: {err}");
        assert!(!err.contains("internal error"), "{args:?}: {err}");
        eprintln!("{args:?}: exit {:?}: {err}", o.status.code());
    }
}

#[tokio::test]
async fn every_pointer_field_is_held_to_the_rules_of_input() {
    let (_tmp, root, ptrs) = local_store().await;
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("run_id", "../x".into(), "run_id"),
        ("target_crs", "epsg:4326".into(), "target_crs"),
        ("target_crs", "EPSG:4326\n".into(), "target_crs"),
        ("commit_id", "../../etc".into(), "commit_id"),
        ("part_path", "../outside.parquet".into(), "part_path"),
        ("sha256", "ZZ".into(), "sha256"),
        ("tool_version", "x".repeat(300).into(), "tool_version"),
    ];
    let store = PosixPublisher::new(&root);
    for (i, (field, value, named)) in cases.into_iter().enumerate() {
        let p = &ptrs[i % ptrs.len()];
        let pk = keys::pointer_key(&p.run_id, &p.commit_id);
        let before = std::fs::read(root.join(&pk)).unwrap();
        edit_pointer(&root, p, |v| v[field] = value.clone());
        let r = lineage_store::verify_with(&store, &later()).await.unwrap();
        let bad = of_kind(&r, K::CorruptPointer);
        assert!(
            bad.iter().any(|(k, d)| k == &pk && d.contains(named)),
            "{field}={value}: {:#?}",
            r.problems
        );
        // Quoted at most 64 characters.
        assert!(bad.iter().all(|(_, d)| d.len() < 400), "{bad:?}");
        std::fs::write(root.join(&pk), before).unwrap();
    }
}

#[tokio::test]
async fn an_oversized_pointer_is_refused_before_it_is_parsed() {
    let (_tmp, root, ptrs) = local_store().await;
    let p = &ptrs[0];
    let pk = edit_pointer(&root, p, |v| {
        v["commit_key"] = "k".repeat(200_000).into();
    });
    let r = lineage_store::verify_with(&PosixPublisher::new(&root), &later())
        .await
        .unwrap();
    let bad = of_kind(&r, K::CorruptPointer);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert_eq!(bad[0].0, pk);
    assert!(
        bad[0].1.contains("a pointer is at most 65536"),
        "{}",
        bad[0].1
    );
}

#[tokio::test]
async fn log_lists_a_corrupt_pointer_as_a_problem_and_every_other_commit() {
    let (tmp, root, ptrs) = local_store().await;
    let store = root.to_str().unwrap();
    let o = crate::support::lineage(&["seal", "--store", store], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", crate::support::text(&o));
    // Three commits after the seal (one row each), the second of them corrupted.
    let input = tmp.path().join("more.ndjson");
    std::fs::write(&input, crate::support::ndjson("run-late", 3, "late")).unwrap();
    let i = input.to_str().unwrap();
    let args = [
        "append",
        "--store",
        store,
        "--input",
        i,
        "--batch-rows",
        "1",
    ];
    let o = crate::support::lineage(&args, None);
    assert_eq!(o.status.code(), Some(0), "{:?}", crate::support::text(&o));
    let dir = root.join(keys::COMMITS_PREFIX).join("run_id=run-late");
    let mut late: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    late.sort();
    assert_eq!(late.len(), 3);
    let pk = format!(
        "{}run_id=run-late/{}",
        keys::COMMITS_PREFIX,
        late[1].to_string_lossy()
    );
    std::fs::write(root.join(&pk), b"{not json").unwrap();
    for (extra, listed) in [
        (&[][..], ptrs.len() + 2),
        (&["--json"][..], ptrs.len() + 2),
        (&["--since-seal"][..], 2),
        (&["--since-seal", "1", "--json"][..], 2),
    ] {
        let args = [&["log", "--store", store][..], extra].concat();
        let o = crate::support::lineage(&args, None);
        let (out, err) = crate::support::text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {out}{err}");
        assert_eq!(out.lines().count(), listed, "{args:?}: {out}");
        assert!(
            err.contains(&format!("PROBLEM corrupt_pointer: {pk}: "))
                && err.contains("1 pointer not read (`lineage verify` reports the store)"),
            "{args:?}: {err}"
        );
    }
}

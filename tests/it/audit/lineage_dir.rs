//! Every object under `_lineage/` is one of the store's own kinds or a named problem
//! (issue 21, defect 1): readers skip `_lineage/`, so an audit is the only thing that
//! would ever show a file planted there.

use bytes::Bytes;
use lineage_store::{seal, AtomicPublisher, MemoryPublisher, ProblemKind, SystemClock};
use std::sync::Arc;

use crate::support::audit::{append, of_kind, verify_later};
use crate::support::{lineage, text};

const PLANTED: [&str; 3] = [
    "_lineage/commits/run_id=X/x.parquet",
    "_lineage/notes.txt",
    "_lineage/stash.parquet",
];

#[tokio::test]
async fn objects_under_lineage_that_are_not_ours_are_named() {
    let mem = Arc::new(MemoryPublisher::new());
    let pointers = append(mem.clone(), 300, 100, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert!(verify_later(mem.as_ref()).await.is_clean());
    let part = mem.get(&pointers[0].part_path).await.unwrap().unwrap();
    mem.tamper_put(PLANTED[2], part.clone());
    mem.tamper_put(PLANTED[1], Bytes::from_static(b"remember to seal\n"));
    mem.tamper_put(PLANTED[0], part);
    let r = verify_later(mem.as_ref()).await;
    let named: Vec<String> = of_kind(&r, ProblemKind::UnknownLineageObject)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(named, PLANTED.to_vec(), "{:#?}", r.problems);
    assert_eq!(r.problems.len(), 3, "{:#?}", r.problems);
    assert_eq!(
        ProblemKind::UnknownLineageObject.name(),
        "unknown_lineage_object"
    );
}

#[test]
fn verify_through_the_cli_exits_1_naming_each_planted_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let o = lineage(
        &[
            "demo",
            "--store",
            s,
            "--events",
            "500",
            "--batch-rows",
            "200",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    for k in PLANTED {
        let p = store.join(k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"x").unwrap();
    }
    let o = lineage(&["verify", "--store", s], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    for k in PLANTED {
        assert!(
            out.lines()
                .any(|l| l.contains("unknown_lineage_object") && l.contains(k)),
            "{k} not named:\n{out}"
        );
    }
}

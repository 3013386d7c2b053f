//! `seal` refuses to chain a new seal onto a seal that no longer verifies (an edited
//! signed seal, a seal edited after the next one was made), naming it: a new seal would
//! vouch for the edit.

use std::path::Path;

use serde_json::Value;

use crate::support::{lineage, sample, text};

fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = lineage(args, None);
    let (out, err) = text(&o);
    (o.status.code(), format!("{out}{err}"))
}

fn append(store: &str, dir: &Path, start: i64) {
    let rows = sample::events(start + 10);
    let input = dir.join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&rows[start as usize..])).unwrap();
    let (c, out) = run(&[
        "append",
        "--store",
        store,
        "--input",
        input.to_str().unwrap(),
    ]);
    assert_eq!(c, Some(0), "{out}");
}

/// Change one field of a stored seal (its bytes, so its digest and signature no longer hold).
fn edit_seal(store: &str, seq: u64) {
    let p = Path::new(store).join(format!("_lineage/seals/{seq:020}.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    v["sealed_utc"] = "2020-01-01T00:00:00.000000Z".into();
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[test]
fn seal_refuses_to_chain_onto_an_edited_signed_seal_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s").display().to_string();
    let key = dir.path().join("k");
    assert_eq!(run(&["keygen", "--out", key.to_str().unwrap()]).0, Some(0));
    let sk = dir.path().join("k.key").display().to_string();
    append(&store, dir.path(), 0);
    assert_eq!(
        run(&["seal", "--store", &store, "--signing-key", &sk]).0,
        Some(0)
    );
    append(&store, dir.path(), 10);
    edit_seal(&store, 1);
    let (c, out) = run(&["seal", "--store", &store, "--signing-key", &sk]);
    assert_eq!(c, Some(1), "{out}");
    assert!(
        out.contains("_lineage/seals/00000000000000000001.json: its signature does not verify"),
        "{out}"
    );
    assert!(
        out.contains("no seal is chained onto a seal that does not verify"),
        "{out}"
    );
    assert!(!Path::new(&store)
        .join("_lineage/seals/00000000000000000002.json")
        .exists());
}

#[test]
fn seal_refuses_to_chain_onto_a_seal_whose_predecessor_was_edited() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s").display().to_string();
    for i in 0..2 {
        append(&store, dir.path(), i * 10);
        assert_eq!(run(&["seal", "--store", &store]).0, Some(0));
    }
    append(&store, dir.path(), 20);
    edit_seal(&store, 1);
    let (c, out) = run(&["seal", "--store", &store]);
    assert_eq!(c, Some(1), "{out}");
    assert!(
        out.contains("_lineage/seals/00000000000000000001.json: has sha256"),
        "{out}"
    );
    assert!(out.contains("but seal 2 records"), "{out}");
    assert!(!Path::new(&store)
        .join("_lineage/seals/00000000000000000003.json")
        .exists());
}

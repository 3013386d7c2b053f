//! A witness binds a location to one store: a store rewritten at the same URL (history
//! deleted, re-sealed from seal 1 with another key) is refused by the routine `lineage
//! witness` run and reported by `verify --witness`, naming both store ids; a genuinely
//! new store there is recorded only with `--new-store-at-location`.

use std::path::Path;

use serde_json::Value;

use crate::support::{lineage, sample, text};

fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = lineage(args, None);
    let (out, err) = text(&o);
    (o.status.code(), format!("{out}{err}"))
}

/// Append `n` events (from `start`) and seal, signed with `key` when given.
fn append_and_seal(store: &str, dir: &Path, start: usize, key: Option<&Path>) {
    let rows = sample::events(start as i64 + 20);
    let input = dir.join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&rows[start..])).unwrap();
    let (c, out) = run(&[
        "append",
        "--store",
        store,
        "--input",
        input.to_str().unwrap(),
    ]);
    assert_eq!(c, Some(0), "{out}");
    let mut seal = vec!["seal", "--store", store];
    if let Some(k) = key {
        seal.extend(["--signing-key", k.to_str().unwrap()]);
    }
    let (c, out) = run(&seal);
    assert_eq!(c, Some(0), "{out}");
}

fn seal1(store: &str) -> String {
    let b =
        std::fs::read(Path::new(store).join("_lineage/seals/00000000000000000001.json")).unwrap();
    lineage_store::internal::digest::sha256_hex(&b)
}

#[test]
fn a_store_rewritten_at_a_witnessed_location_is_refused_and_reported_naming_both_ids() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let wit = dir.path().join("witness").display().to_string();
    for i in 0..3 {
        append_and_seal(&store, dir.path(), i * 20, None);
        let (c, out) = run(&["witness", "--store", &store, "--witness", &wit]);
        assert_eq!(c, Some(0), "{out}");
    }
    let old_id = seal1(&store);

    // The insider's rewrite: history deleted, new events re-sealed from seal 1 with their
    // own key, at the same URL.
    std::fs::remove_dir_all(&store).unwrap();
    let insider = dir.path().join("insider");
    let (c, out) = run(&["keygen", "--out", insider.to_str().unwrap()]);
    assert_eq!(c, Some(0), "{out}");
    for i in 0..2 {
        append_and_seal(
            &store,
            dir.path(),
            100 + i * 20,
            Some(&dir.path().join("insider.key")),
        );
    }
    let new_id = seal1(&store);
    assert_ne!(old_id, new_id);

    // The routine witness run refuses, naming both, and records nothing.
    let (c, out) = run(&["witness", "--store", &store, "--witness", &wit]);
    assert_eq!(c, Some(1), "{out}");
    assert!(
        out.contains("PROBLEM witness another_store_at_location"),
        "{out}"
    );
    assert!(
        out.contains(&format!("store {old_id} (witnessed up to seal 3)")),
        "{out}"
    );
    assert!(
        out.contains(&format!("the store there now is store {new_id}")),
        "{out}"
    );
    assert!(out.contains("nothing recorded"), "{out}");
    assert!(!Path::new(&wit)
        .join(format!("_lineage/witness/{new_id}"))
        .exists());

    // verify --witness reports it, as a failed anchor.
    let (c, out) = run(&["verify", "--store", &store, "--witness", &wit]);
    assert_eq!(c, Some(1), "{out}");
    assert!(
        out.contains("PROBLEM witness another_store_at_location"),
        "{out}"
    );
    assert!(out.contains("anchor witness FAILED"), "{out}");
    assert!(
        out.lines()
            .last()
            .unwrap()
            .ends_with("(anchors failed: witness)"),
        "{out}"
    );
    // ... and so does every read bound to the witness.
    let (c, out) = run(&["files", "--store", &store, "--witness", &wit]);
    assert_eq!(c, Some(1), "{out}");
    assert!(out.contains(&old_id) && out.contains(&new_id), "{out}");

    // A genuinely new store at this location: recorded on explicit request only, its first
    // record naming the store it replaces; verify then accepts it.
    let (c, out) = run(&[
        "witness",
        "--store",
        &store,
        "--witness",
        &wit,
        "--new-store-at-location",
        "--json",
    ]);
    assert_eq!(c, Some(0), "{out}");
    let o: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(o["store_id"], new_id.as_str());
    let rec_path = Path::new(&wit).join(lineage_store::witness::record_key(&new_id, 2));
    let rec: Value = serde_json::from_slice(&std::fs::read(&rec_path).unwrap()).unwrap();
    assert_eq!(rec["replaces"], serde_json::json!([old_id]));
    let (c, out) = run(&["verify", "--store", &store, "--witness", &wit]);
    assert_eq!(c, Some(0), "{out}");
    assert!(out.contains("anchor witness held"), "{out}");

    // A record of the rewritten store made without that request (as an earlier version's
    // routine run made it) is reported: the location holds two histories.
    let mut laundered = rec.clone();
    laundered.as_object_mut().unwrap().remove("replaces");
    std::fs::write(&rec_path, serde_json::to_vec_pretty(&laundered).unwrap()).unwrap();
    let (c, out) = run(&["verify", "--store", &store, "--witness", &wit]);
    assert_eq!(c, Some(1), "{out}");
    assert!(
        out.contains("another_store_at_location") && out.contains(&old_id) && out.contains(&new_id),
        "{out}"
    );
}

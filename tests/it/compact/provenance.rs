//! Issue 33 item 7: a compacted part keeps the provenance of its rows. `files --json`
//! names the compaction (id, record, seal) and the original commits and seals of its rows
//! (no commit id of its own: `prove` of the compaction id says what it is, and each
//! original commit proves); `log` lists compactions; `compact --dry-run` on a signed
//! store needs no signing key.

use serde_json::Value;

use super::cli::{ok, Disk};
use crate::support;

#[test]
fn a_compacted_part_names_the_compaction_and_the_commits_of_its_rows() {
    let d = Disk::new();
    let originals: Vec<Value> = d.json_lines(&["files", "--json"]);
    let prefix = d.dir.path().join("k");
    ok(&support::lineage(
        &["keygen", "--out", prefix.to_str().unwrap()],
        None,
    ));
    let key = prefix.with_extension("key").display().to_string();
    ok(&d.run(&["seal", "--allow-empty", "--signing-key", &key]));
    // A dry run on a signed store: no key needed, nothing published.
    let before = d.objects();
    let plan = d.json_lines(&["compact", "--target-rows", "20", "--dry-run", "--json"]);
    assert!(!plan[0]["compactions"].as_array().unwrap().is_empty());
    assert_eq!(d.objects(), before);
    let done = d.json_lines(&[
        "compact",
        "--target-rows",
        "20",
        "--signing-key",
        &key,
        "--json",
    ]);
    assert_eq!(done[0]["seal"]["seq"], 3);
    let made = done[0]["compactions"].as_array().unwrap().len();

    let files = d.json_lines(&["files", "--json"]);
    let compacted: Vec<&Value> = files
        .iter()
        .filter(|l| !l["compaction"].is_null())
        .collect();
    assert_eq!(compacted.len(), made);
    for l in &compacted {
        let c = &l["compaction"];
        assert!(l["commit_id"].is_null(), "{l}");
        assert_eq!(c["sealed_by"], 3, "{l}");
        assert!(c["record"]
            .as_str()
            .unwrap()
            .contains(c["compaction_id"].as_str().unwrap()));
        let commits = c["commits"].as_array().unwrap();
        assert!(commits.len() >= 2, "{l}");
        let rows: u64 = commits.iter().map(|o| o["rows"].as_u64().unwrap()).sum();
        assert_eq!(rows, l["rows"].as_u64().unwrap());
        // Each original commit is one `files` listed before the compaction, with the time
        // it was committed and the seal that sealed it (seal 1), not the compaction's.
        for o in commits {
            assert_eq!(o["sealed_by"], 1);
            let orig = originals
                .iter()
                .find(|x| x["commit_id"] == o["commit_id"])
                .unwrap_or_else(|| panic!("{o} not an original commit"));
            assert_eq!(orig["committed_utc"], o["committed_utc"]);
            assert_eq!(orig["rows"], o["rows"]);
        }
        let newest = commits
            .iter()
            .map(|o| o["committed_utc"].as_str().unwrap())
            .max();
        assert_eq!(l["committed_utc"].as_str(), newest);
        assert_ne!(l["committed_utc"], c["compacted_utc"]);
        assert_eq!(l["sealed_by"], 1);
    }
    // Every original commit proves; the compaction id is named for what it is.
    let c = &compacted[0]["compaction"];
    let commit = c["commits"][0]["commit_id"].as_str().unwrap();
    ok(&d.run(&["prove", commit]));
    let id = c["compaction_id"].as_str().unwrap();
    let o = d.run(&["prove", id]);
    assert_ne!(o.status.code(), Some(0));
    let err = support::text(&o).1;
    assert!(
        err.contains(&format!("{id} is a compaction")) && err.contains("seal 3"),
        "{err}"
    );
    assert!(!err.contains("after the next"), "{err}");

    // log lists the compactions, by the seal that made them, in text and JSON.
    let log = ok(&d.run(&["log"]));
    assert_eq!(log.matches(" compaction ").count(), made, "{log}");
    assert!(
        log.contains(&format!(" compaction {id} ")) && log.contains("(seal 3: re-laid"),
        "{log}"
    );
    let since = ok(&d.run(&["log", "--since-seal", "2"]));
    assert_eq!(since.lines().count(), made, "{since}");
    assert_eq!(ok(&d.run(&["log", "--since-seal", "3"])), "");
    let json = d.json_lines(&["log", "--json"]);
    let cj: Vec<&Value> = json.iter().filter(|l| l["kind"] == "compaction").collect();
    assert_eq!(cj.len(), made);
    assert!(cj
        .iter()
        .all(|l| l["sealed_by"] == 3 && l["sources"].is_array()));
}

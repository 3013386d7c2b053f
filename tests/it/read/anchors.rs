//! Reads bound to the anchors an auditor keeps: `files`, `scan`, both exports and `report`
//! take `--expect-head`, `--public-key`, `--signed-from` (and `--witness`) as `verify`
//! does, and refuse (exit 1, naming the anchor) a store rolled back to an earlier copy,
//! cut off after its newest seal, or sealed by another key.

use std::path::Path;

use super::{ok, Store};
use crate::support::{lineage, text};

/// The head digest of seal `seq` of the store at `root`.
fn head(root: &Path, seq: u64) -> String {
    let b = std::fs::read(root.join(format!("_lineage/seals/{seq:020}.json"))).unwrap();
    lineage_store::internal::digest::sha256_hex(&b)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

/// Every read of sealed history, each with `anchor` appended; (command, exit, stderr).
fn every_read(s: &Store, anchor: &[&str]) -> Vec<(String, Option<i32>, String)> {
    let out = s.dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let scan_out = out.join("rows.ndjson");
    let report_out = out.join("report.json");
    let reads: Vec<Vec<&str>> = vec![
        vec!["files"],
        vec!["scan", "--out", scan_out.to_str().unwrap()],
        vec!["export", "openlineage"],
        vec!["export", "iso19115", "--run-id", "run-a"],
        vec![
            "report",
            "--format",
            "json",
            "--force",
            "--out",
            report_out.to_str().unwrap(),
        ],
    ];
    reads
        .into_iter()
        .map(|mut a| {
            a.extend_from_slice(anchor);
            let o = s.run(&a);
            let (out, err) = text(&o);
            let said = if a[0] == "report" {
                std::fs::read_to_string(&report_out).unwrap_or_default() + &out
            } else {
                err
            };
            let cmd = match a[0] {
                "export" => a[..2].join(" "),
                one => one.to_string(),
            };
            (cmd, o.status.code(), said)
        })
        .collect()
}

fn refused_naming(results: &[(String, Option<i32>, String)], words: &[&str]) {
    for (cmd, code, said) in results {
        assert_eq!(*code, Some(1), "{cmd}: {said}");
        for w in words {
            assert!(said.contains(w), "{cmd} does not say {w:?}: {said}");
        }
    }
}

#[test]
fn a_rolled_back_copy_and_a_cut_off_store_are_refused_by_every_read_with_the_expected_head() {
    let s = Store::new();
    // The copy an insider keeps after seal 2, to roll the store back to later.
    let old = Store {
        dir: tempfile::tempdir().unwrap(),
        path: String::new(),
    };
    let old_root = old.dir.path().join("store");
    copy_dir(&s.root(), &old_root);
    let old = Store {
        path: old_root.display().to_string(),
        ..old
    };
    ok(&s.run(&["seal"]));
    let h3 = head(&s.root(), 3);

    // The store as sealed: every read holds the anchor and says where it found it.
    for (cmd, code, said) in every_read(&s, &["--expect-head", &h3]) {
        assert_eq!(code, Some(0), "{cmd}: {said}");
        if cmd != "report" {
            assert!(
                said.contains("anchor head held: expected head")
                    && said.contains("found at seal 3, the newest"),
                "{cmd}: {said}"
            );
        }
    }
    // Rolled back: the copy of seal 2 read with the head of seal 3. Without the anchor it
    // reads "as of the newest seal there is" (exit 0); with it, every read refuses.
    assert_eq!(
        every_read(&old, &[])
            .iter()
            .filter(|r| r.1 == Some(0))
            .count(),
        5
    );
    std::fs::remove_dir_all(old.dir.path().join("out")).unwrap();
    let rolled = every_read(&old, &["--expect-head", &h3]);
    refused_naming(&rolled, &[&h3, "--expect-head"]);
    assert!(
        !old.dir.path().join("out/rows.ndjson").exists(),
        "scan wrote nothing"
    );

    // Cut off: the newest seal's objects deleted.
    let root = s.root();
    for dir in ["_lineage/seals", "_lineage/heads", "_delta_log"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.contains("00000000000000000003") {
                std::fs::remove_file(p).unwrap();
            }
        }
    }
    std::fs::remove_dir_all(s.dir.path().join("out")).unwrap();
    let cut = every_read(&s, &["--expect-head", &h3]);
    refused_naming(&cut, &[&h3, "--expect-head", "newest seal is 2"]);
}

#[test]
fn a_read_with_a_public_key_refuses_seals_signed_by_another_key() {
    let s = Store::new();
    let keys = s.dir.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    for k in ["sealer", "other"] {
        let prefix = keys.join(k);
        let o = lineage(&["keygen", "--out", prefix.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    }
    let key = |n: &str| keys.join(n).display().to_string();
    ok(&s.run(&["seal", "--signing-key", &key("sealer.key")]));
    // Seals 1-2 unsigned, 3 signed by the sealer's key.
    let given = every_read(
        &s,
        &["--public-key", &key("sealer.pub"), "--signed-from", "3"],
    );
    for (cmd, code, said) in &given {
        assert_eq!(*code, Some(0), "{cmd}: {said}");
        if !cmd.starts_with("report") {
            assert!(
                said.contains("anchor keys held: seal 3 signed by key"),
                "{cmd}: {said}"
            );
            assert!(
                said.contains("(given)") && said.contains("2 unsigned before seal 3 (allowed)"),
                "{cmd}: {said}"
            );
        }
    }
    std::fs::remove_dir_all(s.dir.path().join("out")).unwrap();
    let other = every_read(
        &s,
        &["--public-key", &key("other.pub"), "--signed-from", "3"],
    );
    refused_naming(
        &other,
        &[
            "_lineage/seals/00000000000000000003.json",
            "not a key given (--public-key",
        ],
    );
    std::fs::remove_dir_all(s.dir.path().join("out")).unwrap();
    // Keys given without --signed-from: every seal must be signed, and 1-2 are not.
    let all = every_read(&s, &["--public-key", &key("sealer.pub")]);
    refused_naming(
        &all,
        &["_lineage/seals/00000000000000000001.json", "is not signed"],
    );
}

#[test]
fn a_malformed_expected_head_is_a_usage_error_before_anything_is_read() {
    let s = Store::new();
    for (cmd, code, said) in every_read(&s, &["--expect-head", "abc"]) {
        assert_eq!(code, Some(2), "{cmd}: {said}");
    }
}

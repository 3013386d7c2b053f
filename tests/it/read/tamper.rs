//! A tampered store is refused by `files`, `scan` and the exports (exit 1, as `verify`'s
//! problems), each naming the object; no output file is created.

use super::{flip_byte, Store};
use crate::support;

fn refused(s: &Store, args: &[&str], code: i32, names: &str) {
    let o = s.run(args);
    let (out, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.contains(names), "{args:?} names {names}: {err}");
    assert!(out.is_empty(), "{args:?} printed nothing: {out}");
}

/// The run a path names (`.../run_id=<r>/...`).
fn run_of(p: &std::path::Path) -> String {
    p.components()
        .find_map(|c| {
            c.as_os_str()
                .to_str()?
                .strip_prefix("run_id=")
                .map(str::to_string)
        })
        .unwrap()
}

fn all_refuse(s: &Store, names: &str, run: &str) {
    let out = s.dir.path().join("o.parquet");
    let prior = s.dir.path().join("prior.ndjson");
    std::fs::write(&prior, "kept\n").unwrap();
    refused(s, &["files"], 1, names);
    refused(s, &["files", "--json"], 1, names);
    refused(s, &["scan", "--out", out.to_str().unwrap()], 1, names);
    assert!(!out.exists(), "no output file");
    refused(s, &["scan", "--out", prior.to_str().unwrap()], 1, names);
    assert_eq!(
        std::fs::read_to_string(&prior).unwrap(),
        "kept\n",
        "untouched"
    );
    let leftovers: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".lineage-scan-"))
        .collect();
    assert!(leftovers.is_empty(), "no temp left: {leftovers:?}");
    refused(s, &["export", "openlineage"], 1, names);
    refused(s, &["export", "iso19115", "--run-id", run], 1, names);
}

#[test]
fn a_flipped_byte_in_a_sealed_part_is_refused() {
    let s = Store::new();
    let (_, part) = s.sealed_commit();
    flip_byte(&part);
    let name = part.file_name().unwrap().to_str().unwrap().to_string();
    all_refuse(&s, &name, &run_of(&part));
    // The stream on stdout is cut so that a reader fails rather than take it as whole.
    let o = s.run(&["scan", "--out", "-"]);
    assert_eq!(o.status.code(), Some(1));
    let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(o.stdout), None);
    if let Ok(r) = r {
        assert!(
            r.into_iter().any(|b| b.is_err()),
            "a cut stream does not read as whole"
        );
    }
}

#[test]
fn a_deleted_sealed_pointer_is_refused() {
    let s = Store::new();
    let (ptr, _) = s.sealed_commit();
    std::fs::remove_file(&ptr).unwrap();
    let name = ptr.file_name().unwrap().to_str().unwrap().to_string();
    all_refuse(&s, &name, &run_of(&ptr));
    let o = s.run(&["files"]);
    assert!(support::text(&o).1.contains("is missing"));
}

#[test]
fn a_changed_sealed_pointer_is_refused() {
    let s = Store::new();
    let (ptr, _) = s.sealed_commit();
    let text = std::fs::read_to_string(&ptr).unwrap();
    std::fs::write(&ptr, text.replace("\"row_count\": ", "\"row_count\": 1")).unwrap();
    let name = ptr.file_name().unwrap().to_str().unwrap().to_string();
    all_refuse(&s, &name, &run_of(&ptr));
    assert!(support::text(&s.run(&["files"]))
        .1
        .contains("changed after sealing"));
}

#[test]
fn a_part_grown_by_a_byte_is_refused() {
    let s = Store::new();
    let (_, part) = s.sealed_commit();
    let mut b = std::fs::read(&part).unwrap();
    b.push(0);
    std::fs::write(&part, b).unwrap();
    all_refuse(
        &s,
        part.file_name().unwrap().to_str().unwrap(),
        &run_of(&part),
    );
}

#[test]
fn every_failing_object_is_named_by_the_exports() {
    let s = Store::new();
    let parts = s.part_files();
    flip_byte(&s.root().join(&parts[0]));
    flip_byte(&s.root().join(&parts[parts.len() - 1]));
    let o = s.run(&["export", "openlineage"]);
    let err = support::text(&o).1;
    assert_eq!(o.status.code(), Some(1), "{err}");
    for p in [&parts[0], &parts[parts.len() - 1]] {
        assert!(err.contains(p.as_str()), "{p}: {err}");
    }
    assert!(err.contains("2 objects not as sealed"), "{err}");
}

#[test]
fn the_exports_refuse_a_delta_version_that_disagrees_with_its_seal_naming_it() {
    let s = super::Store::new();
    for args in [
        vec!["export", "openlineage"],
        vec!["export", "iso19115", "--run-id", "run-a"],
    ] {
        super::ok(&s.run(&args));
    }
    // An edited `add` size in the version of seal 1: what Delta readers would trust.
    let v1 = s.root().join("_delta_log/00000000000000000001.json");
    let text = std::fs::read_to_string(&v1).unwrap();
    let at = text.find("\"size\":").unwrap() + "\"size\":".len();
    let end = at + text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let size: u64 = text[at..end].parse().unwrap();
    std::fs::write(&v1, format!("{}{}{}", &text[..at], size + 1, &text[end..])).unwrap();
    for args in [
        vec!["export", "openlineage"],
        vec!["export", "iso19115", "--run-id", "run-a"],
    ] {
        let o = s.run(&args);
        let (out, err) = crate::support::text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {out}{err}");
        assert!(
            err.contains("_delta_log/00000000000000000001.json: add of")
                && err.contains(&format!(
                    "size {}, the seal's pointer gives {size}",
                    size + 1
                )),
            "{args:?}: {err}"
        );
        assert!(out.is_empty(), "{args:?}: nothing exported: {out}");
    }
}

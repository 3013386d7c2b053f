//! Typos and the demo never write where they should not; exit codes say what happened;
//! one rule for every `--out` (issue 21, defects 4, 5 and 8).

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{lineage, ndjson, text};

/// Every file under `dir` (hidden ones too) with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    for e in walk(dir) {
        let rel = e.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        out.insert(rel, std::fs::read(&e).unwrap());
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.push(p.clone());
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v.retain(|p| p.is_file());
    v
}

fn demo(store: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "demo",
        "--store",
        store,
        "--events",
        "400",
        "--batch-rows",
        "200",
    ];
    args.extend_from_slice(extra);
    lineage(&args, None)
}

#[test]
fn demo_writes_only_into_a_new_or_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    // A directory that is not a store: refused, untouched.
    let etc = dir.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::write(etc.join("passwd"), b"root:x:0:0\n").unwrap();
    let before = tree(&etc);
    let o = demo(etc.to_str().unwrap(), &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert_eq!(tree(&etc), before);

    // A new directory: written. Run again (or into any store with data): refused,
    // byte-identical.
    let s = dir.path().join("demo");
    let o = demo(s.to_str().unwrap(), &[]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let before = tree(&s);
    let o = demo(s.to_str().unwrap(), &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("not empty") && err.contains("new or empty store"),
        "{err}"
    );
    assert_eq!(tree(&s), before);

    // An empty directory is fine; so is memory://.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(demo(empty.to_str().unwrap(), &[]).status.code(), Some(0));
    let o = demo("memory://", &[]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn demo_takes_an_object_store_url_and_never_makes_a_local_directory_of_it() {
    let dir = tempfile::tempdir().unwrap();
    // No S3 answers on this port: the demo fails (exit 2) and creates nothing locally.
    let o = lineage_in(
        dir.path(),
        &[
            "demo",
            "--store",
            "s3://bucket/demo",
            "--endpoint-url",
            "http://127.0.0.1:9",
            "--events",
            "10",
        ],
    );
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0), "{out}{err}");
    assert!(!out.contains("s3://bucket/demo"), "{out}");
    assert!(tree(dir.path()).is_empty(), "{:?}", tree(dir.path()).keys());
    assert!(!dir.path().join("s3:").exists());
}

fn lineage_in(cwd: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(args)
        .current_dir(cwd)
        .env_remove("LINEAGE_STORE")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_MAX_ATTEMPTS", "1")
        .output()
        .unwrap()
}

#[test]
fn no_command_but_append_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("typo");
    let t = typo.to_str().unwrap();
    let key = dir.path().join("k");
    assert_eq!(
        lineage(&["keygen", "--out", key.to_str().unwrap()], None)
            .status
            .code(),
        Some(0)
    );
    let out = dir.path().join("out.json");
    for args in [
        vec!["seal", "--store", t],
        vec!["log", "--store", t],
        vec!["verify", "--store", t],
        vec!["sweep", "--store", t],
        vec!["repair", "--store", t],
        vec![
            "prove",
            "--store",
            t,
            "0190b2f3-0000-7000-8000-000000000001",
        ],
        vec!["export", "openlineage", "--store", t],
        vec!["export", "iso19115", "--store", t, "--run-id", "r"],
        vec!["witness", "--store", t, "--witness", out.to_str().unwrap()],
        vec!["replicate", "--from", t, "--to", out.to_str().unwrap()],
    ] {
        let o = lineage(&args, None);
        let (so, se) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {so}{se}");
        assert!(se.contains("the store holds no objects"), "{args:?}: {se}");
        assert!(!typo.exists(), "{args:?} created {t}");
        assert!(!out.exists(), "{args:?} created {}", out.display());
    }
}

#[test]
fn a_run_id_that_matches_nothing_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    let o = lineage(
        &["append", "--store", s],
        Some(ndjson("run-a", 10, "t").as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = lineage(&["log", "--store", s, "--run-id", "typo"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        out.is_empty() && err.contains("no commits of run_id typo"),
        "{err}"
    );
    // Nothing new since the newest seal is an answer, not a mistake: exit 0, said on stderr.
    assert_eq!(
        lineage(&["seal", "--store", s], None).status.code(),
        Some(0)
    );
    let o = lineage(&["log", "--store", s, "--since-seal"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.is_empty() && err.contains("no commits after the newest seal"),
        "{err}"
    );
}

#[test]
fn append_into_a_closed_pipe_that_published_everything_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, ndjson("run-a", 400, "t")).unwrap();
    let bin = env!("CARGO_BIN_EXE_lineage");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; '{bin}' append --store '{}' --input '{}' --batch-rows 2 | head -1 >/dev/null",
            s.display(),
            input.display()
        ))
        .env_remove("LINEAGE_STORE")
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("the append finished"), "{err}");
    let o = lineage(&["log", "--store", s.to_str().unwrap(), "--json"], None);
    assert_eq!(text(&o).0.lines().count(), 200);
}

#[test]
fn a_relative_store_is_shown_as_a_valid_file_url() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(["verify", "--store", "lake"])
        .current_dir(dir.path())
        .env_remove("LINEAGE_STORE")
        .output()
        .unwrap();
    let (_, err) = text(&o);
    let abs = std::fs::canonicalize(dir.path()).unwrap().join("lake");
    let want = url::Url::from_file_path(&abs).unwrap().to_string();
    assert!(want.starts_with("file:///"));
    assert!(err.contains(&want), "{err} does not name {want}");
    assert!(!err.contains("file://lake"), "{err}");
}

#[test]
fn every_out_refuses_an_existing_file_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    assert_eq!(demo(s, &[]).status.code(), Some(0));
    let o = lineage(&["log", "--store", s, "--json"], None);
    let first = text(&o).0.lines().next().unwrap().to_string();
    let p: serde_json::Value = serde_json::from_str(&first).unwrap();
    let commit = p["commit_id"].as_str().unwrap().to_string();
    let run = p["run_id"].as_str().unwrap().to_string();
    let f = dir.path().join("existing");
    let fs = f.to_str().unwrap();
    let key = dir.path().join("key");
    let ks = key.to_str().unwrap();
    std::fs::write(key.with_extension("key"), b"keep").unwrap();
    for args in [
        vec!["export", "openlineage", "--store", s, "--out", fs],
        vec![
            "export", "iso19115", "--store", s, "--run-id", &run, "--out", fs,
        ],
        vec!["prove", "--store", s, &commit, "--out", fs],
    ] {
        std::fs::write(&f, b"keep").unwrap();
        let o = lineage(&args, None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains("--force"), "{args:?}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), b"keep", "{args:?}");
        let mut forced = args.clone();
        forced.push("--force");
        let o = lineage(&forced, None);
        assert_eq!(o.status.code(), Some(0), "{forced:?}: {:?}", text(&o));
        assert_ne!(std::fs::read(&f).unwrap(), b"keep", "{forced:?}");
    }
    let o = lineage(&["keygen", "--out", ks], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--force"), "{:?}", text(&o));
    assert_eq!(std::fs::read(key.with_extension("key")).unwrap(), b"keep");
    let o = lineage(&["keygen", "--out", ks, "--force"], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_ne!(std::fs::read(key.with_extension("key")).unwrap(), b"keep");
}

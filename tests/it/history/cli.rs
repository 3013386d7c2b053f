//! The history commands end to end through the `lineage` binary: `log --since-seal`,
//! `verify --since-seal`, `seal --rescan`, `verify --shard` and `verify merge`, with their
//! outputs and exit codes.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn lineage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(args)
        .env_remove("LINEAGE_STORE")
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        out(o),
        String::from_utf8_lossy(&o.stderr)
    );
    out(o)
}

fn demo(store: &str, events: &str) {
    ok(&lineage(&[
        "demo",
        "--no-seal",
        "--store",
        store,
        "--events",
        events,
        "--batch-rows",
        "50",
    ]));
}

#[test]
fn since_seal_shards_and_merge_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    demo(&store, "600");
    let s: Value =
        serde_json::from_str(&ok(&lineage(&["seal", "--store", &store, "--json"]))).unwrap();
    assert_eq!(s["full_scan"], true);
    let sealed = s["tree_size"].as_u64().unwrap();
    // More commits (the demo writes only into a new store): 120 events of one run.
    let o = Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(["append", "--store", &store, "--batch-rows", "50"])
        .env_remove("LINEAGE_STORE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(crate::support::ndjson("run-more", 120, "more").as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    ok(&o);
    // log --since-seal: only the commits after seal 1, in commit-time order.
    let log = ok(&lineage(&[
        "log",
        "--store",
        &store,
        "--since-seal",
        "--json",
    ]));
    let new: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let all = ok(&lineage(&["log", "--store", &store, "--json"]));
    assert_eq!(all.lines().count() as u64, sealed + new.len() as u64);
    assert!(all.ends_with(&log), "the newest commits come last");
    // verify --since-seal looks at those only.
    let v: Value = serde_json::from_str(&ok(&lineage(&[
        "verify",
        "--store",
        &store,
        "--since-seal",
        "--json",
    ])))
    .unwrap();
    assert_eq!(v["commits"].as_u64(), Some(new.len() as u64));
    assert_eq!(v["since_seal"], 1);
    // An unsealed part changed: --since-seal exits 1 naming it.
    let part = Path::new(&store).join(new[0]["part_path"].as_str().unwrap());
    let mut b = std::fs::read(&part).unwrap();
    b[20] ^= 1;
    std::fs::write(&part, &b).unwrap();
    let o = lineage(&["verify", "--store", &store, "--since-seal"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).contains(&format!(
        "PROBLEM digest_mismatch: {}",
        new[0]["part_path"].as_str().unwrap()
    )));
    b[20] ^= 1;
    std::fs::write(&part, &b).unwrap();
    // An incremental seal, then a rescan that finds nothing more.
    let s: Value =
        serde_json::from_str(&ok(&lineage(&["seal", "--store", &store, "--json"]))).unwrap();
    assert_eq!(
        (s["full_scan"].as_bool(), s["added"].as_u64()),
        (Some(false), Some(new.len() as u64))
    );
    let s: Value = serde_json::from_str(&ok(&lineage(&[
        "seal", "--store", &store, "--rescan", "--json",
    ])))
    .unwrap();
    assert_eq!(
        (s["full_scan"].as_bool(), s["added"].as_u64()),
        (Some(true), Some(0))
    );
    // Nothing new: no seal 3 (`--allow-empty` would publish one).
    assert_eq!(
        (s["nothing_new"].as_bool(), s["seq"].as_u64()),
        (Some(true), Some(2))
    );

    // Three shards, each a JSON report; merged: the full verify's counts.
    let full: Value = serde_json::from_str(&ok(&lineage(&[
        "verify",
        "--store",
        &store,
        "--json",
        "--concurrency",
        "4",
    ])))
    .unwrap();
    let mut files = Vec::new();
    for i in 0..3 {
        let f = dir.path().join(format!("shard-{i}.json"));
        let r = ok(&lineage(&[
            "verify",
            "--store",
            &store,
            "--json",
            "--shard",
            &format!("{i}/3"),
            "--plan-seal",
            "2",
        ]));
        std::fs::write(&f, r).unwrap();
        files.push(f.display().to_string());
    }
    let mut args = vec!["verify", "merge", "--json"];
    args.extend(files.iter().map(String::as_str));
    let merged: Value = serde_json::from_str(&ok(&lineage(&args))).unwrap();
    for k in [
        "commits",
        "parts_ok",
        "rows",
        "bytes_hashed",
        "sealed_commits",
    ] {
        assert_eq!(merged[k], full[k], "{k}");
    }
    assert_eq!(merged["merged"]["shards"], 3);
    let text = ok(&lineage(&[
        "verify", "merge", &files[0], &files[1], &files[2],
    ]));
    assert!(
        text.contains("merged from 3 shards") && text.contains("clean"),
        "{text}"
    );
    // Two of three: refused (usage error, exit 2).
    let o = lineage(&["verify", "merge", &files[0], &files[2]]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shards 1 of 3 are missing"));
    let o = lineage(&["verify", "--store", &store, "--shard", "3/3"]);
    assert_eq!(o.status.code(), Some(2));
}

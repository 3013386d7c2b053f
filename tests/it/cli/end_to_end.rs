//! The `lineage` binary end to end on a local-disk store: every command, every input
//! format, exit codes, and refused input leaving the store byte-identical.

use serde_json::Value;

use crate::support::sample::{self, ndjson, snapshot};
use crate::support::{lineage, text};

fn store_with_one_commit() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s").to_string_lossy().into_owned();
    let rows: Vec<Value> = (1..=4)
        .map(|i| sample::event(i, "run-a", "EPSG:4326"))
        .collect();
    let o = lineage(
        &["append", "--store", &store],
        Some(ndjson(&rows).as_bytes()),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    (dir, store)
}

#[test]
fn append_log_verify_round_trip_with_json_output() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("file://{}", dir.path().join("s").display());
    let o = append_events(dir.path(), &store, 30, &["--batch-rows", "5", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let commits: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        commits
            .iter()
            .map(|c| c["row_count"].as_u64().unwrap())
            .sum::<u64>(),
        30
    );
    assert!(commits
        .iter()
        .all(|c| c["row_count"].as_u64().unwrap() <= 5));
    for k in [
        "commit_id",
        "run_id",
        "target_crs",
        "part_path",
        "size_bytes",
        "schema_version",
        "sha256",
        "committed_utc",
        "first_sequence",
        "last_sequence",
        "min_event_time_utc",
        "max_event_time_utc",
        "tool_version",
    ] {
        assert!(commits[0].get(k).is_some(), "pointer lacks {k}");
    }

    let o = lineage(&["log", "--store", &store, "--json"], None);
    let logged: Vec<Value> = text(&o)
        .0
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Commit-time order: committed_utc, then commit id.
    let mut by_time: Vec<(String, String)> = commits
        .iter()
        .map(|c| {
            (
                c["committed_utc"].as_str().unwrap().to_string(),
                c["commit_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    by_time.sort();
    let ids: Vec<String> = by_time.into_iter().map(|(_, id)| id).collect();
    assert_eq!(
        logged
            .iter()
            .map(|c| c["commit_id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        ids
    );
    let o = lineage(&["log", "--store", &store, "--run-id", "run-a"], None);
    assert!(text(&o).0.lines().all(|l| l.contains("run_id=run-a")));
    assert!(!text(&o).0.is_empty());

    let o = lineage(&["verify", "--store", &store, "--json"], None);
    assert_eq!(o.status.code(), Some(0));
    let report: Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(report["commits"].as_u64(), Some(commits.len() as u64));
    assert_eq!(report["rows"].as_u64(), Some(30));
    let n = commits.len() as u64;
    assert_eq!(report["parts_blake3_checked"].as_u64(), Some(n));
    assert_eq!(report["parts_sha256_checked"].as_u64(), Some(0));

    // `--digest all` recomputes the sha256 too, and says so.
    let o = lineage(&["verify", "--store", &store, "--digest", "all"], None);
    assert_eq!(o.status.code(), Some(0));
    let want = format!("{n} parts hashed ({n} by sha256, {n} by blake3)");
    assert!(text(&o).0.contains(&want), "{:?}", text(&o));
    let o = lineage(&["verify", "--store", &store, "--digest", "md5"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("expected `fastest` or `all`"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn store_comes_from_the_environment_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let run = |args: &[&str], stdin: &[u8]| {
        use std::io::Write;
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
            .args(args)
            .env("LINEAGE_STORE", &store)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(stdin).unwrap();
        c.wait_with_output().unwrap()
    };
    let o = run(&["append"], ndjson(&sample::events(3)).as_bytes());
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = run(&["verify"], b"");
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(text(&o).0.contains("3 rows"), "{:?}", text(&o));
}

#[test]
fn each_refused_input_exits_2_names_the_place_and_changes_nothing() {
    let (dir, store) = store_with_one_commit();
    let before = snapshot(std::path::Path::new(&store));
    let good = sample::event(10, "run-a", "EPSG:4326").to_string();
    let with = |k: &str, v: &str| {
        let mut e = sample::event(11, "run-a", "EPSG:4326");
        e[k] = serde_json::from_str(v).unwrap();
        e.to_string()
    };
    let mut missing = sample::event(11, "run-a", "EPSG:4326");
    missing.as_object_mut().unwrap().remove("outcome");
    let cases: Vec<(String, &str)> = vec![
        (format!("{good}\n{{\"event_id\": \"x\",\n"), "line 2"),
        (format!("{good}\nnot json\n"), "line 2"),
        (
            with("sequence", "\"7\""),
            "line 1, field `sequence`: invalid type: string \"7\", expected i64",
        ),
        (missing.to_string(), "line 1, field `outcome`: is missing"),
        (with("colour", "\"red\""), "unknown field `colour`"),
        (
            with("tool_version", "null"),
            "line 1, field `tool_version`: is null",
        ),
        (
            format!("{good}\n{good}\n{}", with("run_id", "\"a/b\"")),
            "line 3, field `run_id`: run_id \"a/b\" contains a path separator",
        ),
        (with("run_id", "\"_lineage\""), "starts with `_`"),
        (
            with("target_crs", "\"EPSG:0\""),
            "line 1, field `target_crs`",
        ),
        (with("target_crs", "\"CRS:84\""), "OGC:CRS84"),
    ];
    for (input, want) in cases {
        let o = lineage(&["append", "--store", &store], Some(input.as_bytes()));
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "input {input:?}: {err}");
        assert!(err.contains(want), "want {want:?} in {err:?}");
        assert!(out.is_empty(), "nothing committed: {out}");
        assert_eq!(
            snapshot(std::path::Path::new(&store)),
            before,
            "store changed by {input:?}"
        );
    }
    // Invalid UTF-8, on line 2.
    let mut bytes = format!("{good}\n").into_bytes();
    bytes.extend_from_slice(b"{\"event_id\": \"caf\xe9\"}\n");
    let o = lineage(&["append", "--store", &store], Some(&bytes));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("line 2: invalid UTF-8"),
        "{:?}",
        text(&o)
    );
    // A CSV with a wrong header; an unknown extension without --format.
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "event_id,run_id\nx,y\n").unwrap();
    let o = lineage(
        &[
            "append",
            "--store",
            &store,
            "--input",
            csv.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("line 1, field `sequence`: is missing from the header"),
        "{:?}",
        text(&o)
    );
    let txt = dir.path().join("events.txt");
    std::fs::write(&txt, &good).unwrap();
    let o = lineage(
        &[
            "append",
            "--store",
            &store,
            "--input",
            txt.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("pass --format"));
    assert_eq!(snapshot(std::path::Path::new(&store)), before);
}

#[test]
fn verify_names_tampered_missing_orphaned_foreign_and_temp_objects() {
    let (_dir, store) = store_with_one_commit();
    let root = std::path::Path::new(&store);
    let o = lineage(&["verify", "--store", &store], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let ptr: Value = serde_json::from_str(
        text(&lineage(&["log", "--store", &store, "--json"], None))
            .0
            .trim(),
    )
    .unwrap();
    let part = root.join(ptr["part_path"].as_str().unwrap());
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&part, &bytes).unwrap();
    let dir = part.parent().unwrap();
    std::fs::write(dir.join(".part-x.parquet.0123.tmp"), b"half").unwrap();
    std::fs::write(dir.join("notes.txt"), b"hello").unwrap();
    std::fs::copy(
        &part,
        dir.join("part-019b76da-a800-7000-8000-0000000000ff.parquet"),
    )
    .unwrap();
    // Freshly modified, but neither is what an append in flight leaves: the temp's name
    // carries no creation time and would not become a part, and the copied part's footer
    // names another commit. Both are reported at once, within the grace period too.
    let o = lineage(&["verify", "--store", &store], None);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let part_key = ptr["part_path"].as_str().unwrap();
    assert!(
        out.contains(&format!("digest_mismatch: {part_key}")),
        "{out}"
    );
    assert!(
        out.contains("foreign_object") && out.contains("notes.txt"),
        "{out}"
    );
    assert!(
        out.contains("stale_temp") && out.contains(".part-x.parquet.0123.tmp"),
        "{out}"
    );
    let orphan = "part-019b76da-a800-7000-8000-0000000000ff.parquet";
    assert!(
        out.contains("malformed_part") && out.contains(orphan) && out.contains("footer commit id"),
        "{out}"
    );
    assert!(!out.contains("IN FLIGHT"), "{out}");
    std::fs::remove_file(&part).unwrap();
    let out = text(&lineage(&["verify", "--store", &store], None)).0;
    assert!(out.contains("missing_part"), "{out}");
}

#[test]
fn schema_prints_the_contract() {
    let o = lineage(&["schema", "--json"], None);
    assert!(o.status.success());
    let v: Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(v["schema_version"], "1.3.0");
    let names: Vec<&str> = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 21);
    assert_eq!(names[3], "event_time_utc");
    assert_eq!(v["fields"][3]["type"], "Timestamp(µs, \"UTC\")");
    assert_eq!(names[18], "degraded");
    assert_eq!(v["fields"][18]["type"], "Boolean");
    let human = text(&lineage(&["schema"], None)).0;
    assert!(human.contains("schema version 1.3.0") && human.contains("rejection_reason"));
}

#[test]
fn demo_appends_and_verifies_on_local_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("demo");
    let o = lineage(
        &[
            "demo",
            "--store",
            store.to_str().unwrap(),
            "--events",
            "2000",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains("appended 2000 events as 15 commits in 15 partitions (3 runs)"),
        "{out}"
    );
    assert!(out.contains("0 problems"), "{out}");
    assert!(out.contains("seal 1: covers 15 commits; head "), "{out}");
    // Running it again is refused: the demo never writes into a store with data.
    let before = snapshot(&store);
    let o = lineage(
        &[
            "demo",
            "--store",
            store.to_str().unwrap(),
            "--events",
            "2000",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert_eq!(snapshot(&store), before);
}

#[test]
fn unusable_store_urls_are_usage_errors() {
    let o = lineage(&["log", "--store", "ftp://example/x"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("unsupported store scheme `ftp://`"));
    let o = lineage(&["log", "--store", "file://relative/x"], None);
    assert_eq!(o.status.code(), Some(2));
    let o = lineage(&["log", "--store", "/tmp/x", "--run-id", "../x"], None);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn demo_default_store_is_a_relative_directory_in_the_working_directory() {
    // The README's first command runs the demo with no --store: a relative path, whose
    // parent is the empty path (a bug once made every fsync of it fail).
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(["demo", "--events", "500"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let store = dir.path().join("lineage-store-demo");
    let snap = snapshot(&store);
    assert_eq!(snap.keys().filter(|k| k.ends_with(".parquet")).count(), 15);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(["verify", "--store", "lineage-store-demo"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(["append", "--store", "rel/store", "--input", "-"])
        .current_dir(dir.path())
        .stdin(std::fs::File::open(write_events(dir.path())).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// `lineage append --store STORE --input <n events in DIR/events.ndjson> ARGS...`.
fn append_events(
    dir: &std::path::Path,
    store: &str,
    n: i64,
    args: &[&str],
) -> std::process::Output {
    let input = dir.join("events.ndjson");
    std::fs::write(&input, ndjson(&sample::events(n))).unwrap();
    let mut all = vec![
        "append",
        "--store",
        store,
        "--input",
        input.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    lineage(&all, None)
}

fn write_events(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("events.ndjson");
    std::fs::write(&p, ndjson(&sample::events(5))).unwrap();
    p
}

/// `lineage log --json | head -1`: the reader stops after one line. The command ends
/// quietly with 141 (128 + SIGPIPE, as a shell reports a command ended by a closed pipe),
/// not with an `error:` line and exit 2; the store is untouched.
#[test]
fn a_closed_stdout_ends_the_command_quietly_with_141() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s").to_string_lossy().into_owned();
    // 600 one-row commits: their log is far more than a pipe buffer (64 KiB).
    let o = append_events(dir.path(), &store, 600, &["--batch-rows", "1"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let before = snapshot(&dir.path().join("s"));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(["log", "--json", "--store", &store])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe is closed after one line.
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_str(first.trim()).unwrap();
    assert!(v.get("commit_id").is_some(), "{first}");
    assert_eq!(
        out.status.code(),
        Some(141),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(snapshot(&dir.path().join("s")), before);
}

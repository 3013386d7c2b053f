//! `verify --shard auto` and `--report-dir` through the `lineage` binary, as tasks of a
//! batch platform run it: the index from each platform's variable, reports published into
//! a report directory (local, and an S3 prefix on LocalStack), a retried task beside its
//! first attempt, the merge from the directory, and every refusal.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{self, lineage_without, Emulator};

/// Every platform variable, removed from what the child inherits before a test sets its own.
const PLATFORM_VARS: [&str; 4] = [
    "AWS_BATCH_JOB_ARRAY_INDEX",
    "JOB_COMPLETION_INDEX",
    "CLOUD_RUN_TASK_INDEX",
    "CLOUD_RUN_TASK_COUNT",
];

fn task(args: &[&str], env: &[(&str, &str)]) -> Output {
    lineage_without(args, env, &PLATFORM_VARS, None)
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) -> String {
    assert_eq!(code(o), Some(0), "{}{}", stdout(o), stderr(o));
    stdout(o)
}

/// A sealed store of 600 demo events in 50-row parts, then 120 more events appended and
/// not sealed (the demo writes only into a new store).
fn store(dir: &Path) -> String {
    let store = dir.join("store").display().to_string();
    ok(&task(
        &[
            "demo",
            "--no-seal",
            "--store",
            &store,
            "--events",
            "600",
            "--batch-rows",
            "50",
        ],
        &[],
    ));
    ok(&task(&["seal", "--store", &store], &[]));
    let more = dir.join("more.ndjson");
    std::fs::write(&more, crate::support::ndjson("later", 120, "later")).unwrap();
    let more = more.display().to_string();
    ok(&task(
        &[
            "append",
            "--store",
            &store,
            "--input",
            &more,
            "--batch-rows",
            "50",
        ],
        &[],
    ));
    store
}

fn reports_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn shard_reports(dir: &Path) -> Vec<String> {
    reports_in(dir)
        .into_iter()
        .filter(|n| n.starts_with("verify-shard-"))
        .collect()
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn batch_array_tasks_publish_reports_and_the_merge_reads_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let full = json(&task(&["verify", "--store", &store, "--json"], &[]));
    // A report directory need not be a store: a non-empty directory of other files is fine,
    // and they are left alone.
    let reports = dir.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::write(reports.join("notes.txt"), "job 42\n").unwrap();
    let rdir = reports.display().to_string();
    for i in 0..3 {
        let idx = i.to_string();
        let o = task(
            &[
                "verify",
                "--store",
                &store,
                "--shard",
                "auto",
                "--shards",
                "3",
                "--report-dir",
                &rdir,
            ],
            &[("AWS_BATCH_JOB_ARRAY_INDEX", &idx)],
        );
        let text = ok(&o);
        assert!(
            text.contains(&format!(
                "shard {i}/3 (AWS_BATCH_JOB_ARRAY_INDEX={i} (AWS Batch array job), --shards 3)"
            )),
            "{text}"
        );
        assert!(text.contains("shard report written: "), "{text}");
    }
    let all = reports_in(&reports);
    assert_eq!(all.len(), 4, "{all:?}");
    assert_eq!(all[0], "notes.txt");
    let names = shard_reports(&reports);
    let plan = full_plan(&names[0]);
    for (i, n) in names.iter().enumerate() {
        assert_eq!(
            n,
            &format!("verify-shard-0000{i}-of-00003-plan-{plan}-attempt-001.json")
        );
    }
    // The merge from the directory is the full verify.
    let merged = json(&task(
        &["verify", "merge", "--report-dir", &rdir, "--json"],
        &[],
    ));
    for k in [
        "commits",
        "parts_ok",
        "rows",
        "bytes_hashed",
        "sealed_commits",
        "unsealed_commits",
    ] {
        assert_eq!(merged[k], full[k], "{k}");
    }
    assert_eq!(merged["merged"]["shards"], 3);

    // Task 1 retried (its platform saw it fail): attempt 2 beside attempt 1, which keeps
    // its bytes; the merge takes the newest.
    let first = std::fs::read(reports.join(&names[1])).unwrap();
    ok(&task(
        &[
            "verify",
            "--store",
            &store,
            "--shard",
            "auto",
            "--shards",
            "3",
            "--report-dir",
            &rdir,
            "--json",
        ],
        &[("JOB_COMPLETION_INDEX", "1")],
    ));
    let names = shard_reports(&reports);
    assert_eq!(
        names[2],
        format!("verify-shard-00001-of-00003-plan-{plan}-attempt-002.json")
    );
    assert_eq!(std::fs::read(reports.join(&names[1])).unwrap(), first);
    let text = ok(&task(&["verify", "merge", "--report-dir", &rdir], &[]));
    assert!(text.contains("merged from 3 shards"), "{text}");

    // Files and the directory together: a shard given twice is refused.
    let o = task(
        &[
            "verify",
            "merge",
            &reports.join(&names[0]).display().to_string(),
            "--report-dir",
            &rdir,
        ],
        &[],
    );
    assert_eq!(code(&o), Some(2));
    assert!(stderr(&o).contains("shard 0 given twice"), "{}", stderr(&o));
}

/// The plan fingerprint in a report's name.
fn full_plan(name: &str) -> String {
    let rest = name.split("-plan-").nth(1).unwrap();
    rest.split("-attempt-").next().unwrap().to_string()
}

#[test]
fn cloud_run_tasks_find_problems_and_still_publish_their_reports() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    // A sealed part changed: one shard finds it, exits 1, and its report says so.
    let log = ok(&task(&["log", "--store", &store, "--json"], &[]));
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let part = Path::new(&store).join(first["part_path"].as_str().unwrap());
    let mut b = std::fs::read(&part).unwrap();
    b[40] ^= 1;
    std::fs::write(&part, &b).unwrap();
    let rdir = dir.path().join("cloud-run").display().to_string();
    let mut exits = Vec::new();
    for i in 0..4 {
        let idx = i.to_string();
        let o = task(
            &[
                "verify",
                "--store",
                &store,
                "--shard",
                "auto",
                "--report-dir",
                &rdir,
                "--json",
            ],
            &[
                ("CLOUD_RUN_TASK_INDEX", &idx),
                ("CLOUD_RUN_TASK_COUNT", "4"),
            ],
        );
        let r = json(&o);
        assert_eq!(r["shard"]["index"], i);
        assert!(r["report_written"]
            .as_str()
            .unwrap()
            .contains(&format!("verify-shard-0000{i}-of-00004-")));
        exits.push(code(&o).unwrap());
    }
    assert_eq!(exits.iter().filter(|c| **c == 1).count(), 1, "{exits:?}");
    assert_eq!(exits.iter().filter(|c| **c == 0).count(), 3, "{exits:?}");
    let o = task(&["verify", "merge", "--report-dir", &rdir], &[]);
    assert_eq!(code(&o), Some(1));
    assert!(
        stdout(&o).contains(&format!(
            "PROBLEM digest_mismatch: {}",
            first["part_path"].as_str().unwrap()
        )),
        "{}",
        stdout(&o)
    );
}

#[test]
fn refusals_name_the_variables_and_publish_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let reports = dir.path().join("reports");
    let rdir = reports.display().to_string();
    let auto = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec![
            "verify",
            "--store",
            &store,
            "--shard",
            "auto",
            "--report-dir",
            &rdir,
        ];
        args.extend_from_slice(extra);
        task(&args, env)
    };
    let cases: Vec<(Output, &str)> = vec![
        (
            auto(&["--shards", "3"], &[]),
            "none of AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch array job), JOB_COMPLETION_INDEX (Kubernetes Indexed Job), CLOUD_RUN_TASK_INDEX (Cloud Run job) is set",
        ),
        (
            auto(&[], &[("AWS_BATCH_JOB_ARRAY_INDEX", "1")]),
            "give --shards N (the array size)",
        ),
        (
            auto(
                &["--shards", "3"],
                &[("CLOUD_RUN_TASK_INDEX", "1"), ("CLOUD_RUN_TASK_COUNT", "4")],
            ),
            "CLOUD_RUN_TASK_COUNT=4 but --shards 3",
        ),
        (
            auto(
                &["--shards", "3"],
                &[("AWS_BATCH_JOB_ARRAY_INDEX", "1"), ("JOB_COMPLETION_INDEX", "2")],
            ),
            "AWS_BATCH_JOB_ARRAY_INDEX=1 and JOB_COMPLETION_INDEX=2 disagree",
        ),
        (
            auto(&["--shards", "3"], &[("JOB_COMPLETION_INDEX", "3")]),
            "JOB_COMPLETION_INDEX=3 is not below the number of shards 3",
        ),
        (
            auto(&["--shards", "3"], &[("JOB_COMPLETION_INDEX", "x")]),
            "JOB_COMPLETION_INDEX=\"x\" is not a whole number",
        ),
        (
            task(
                &["verify", "--store", &store, "--report-dir", &rdir],
                &[("JOB_COMPLETION_INDEX", "0")],
            ),
            "--report-dir: give --shard I/N or --shard auto",
        ),
        (
            task(&["verify", "merge"], &[]),
            "verify merge: give the shards' REPORT.json files, or --report-dir URL",
        ),
        (
            task(&["verify", "merge", "--report-dir", &rdir], &[]),
            "no shard reports",
        ),
    ];
    for (o, want) in cases {
        assert_eq!(code(&o), Some(2), "{want}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stderr(&o).contains(want),
            "want {want:?}, got {}",
            stderr(&o)
        );
    }
    assert!(
        !reports.exists(),
        "a refused task wrote {:?}",
        reports_in(&reports)
    );

    // Reports of two verifications in one directory (3 and 2 shards): refused, named.
    for (i, n) in [("0", "3"), ("1", "3"), ("2", "3"), ("0", "2")] {
        ok(&task(
            &[
                "verify",
                "--store",
                &store,
                "--shard",
                "auto",
                "--shards",
                n,
                "--report-dir",
                &rdir,
            ],
            &[("AWS_BATCH_JOB_ARRAY_INDEX", i)],
        ));
    }
    let o = task(&["verify", "merge", "--report-dir", &rdir], &[]);
    assert_eq!(code(&o), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("holds the shard reports of 2 verifications")
            && e.contains("of 3 shards (3 reports)")
            && e.contains("of 2 shards (1 report)"),
        "{e}"
    );
    // A missing shard is named.
    let two = dir.path().join("two").display().to_string();
    for i in ["0", "2"] {
        ok(&task(
            &[
                "verify",
                "--store",
                &store,
                "--shard",
                "auto",
                "--shards",
                "3",
                "--report-dir",
                &two,
            ],
            &[("AWS_BATCH_JOB_ARRAY_INDEX", i)],
        ));
    }
    let o = task(&["verify", "merge", "--report-dir", &two], &[]);
    assert_eq!(code(&o), Some(2));
    assert!(
        stderr(&o).contains("shards 1 of 3 are missing"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn reports_go_to_an_s3_prefix_on_localstack() {
    let test = "reports_go_to_an_s3_prefix_on_localstack";
    let Some(endpoint) = Emulator::LocalStack.endpoint(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let rdir = support::s3_url(&support::s3_bucket(), test);
    for i in ["0", "1"] {
        let text = ok(&task(
            &[
                "verify",
                "--store",
                &store,
                "--shard",
                "auto",
                "--shards",
                "2",
                "--report-dir",
                &rdir,
                "--endpoint-url",
                &endpoint,
            ],
            &[("JOB_COMPLETION_INDEX", i)],
        ));
        assert!(text.contains("shard report written: "), "{text}");
    }
    let merged = json(&task(
        &[
            "verify",
            "merge",
            "--report-dir",
            &rdir,
            "--endpoint-url",
            &endpoint,
            "--json",
        ],
        &[],
    ));
    let full = json(&task(&["verify", "--store", &store, "--json"], &[]));
    assert_eq!(merged["commits"], full["commits"]);
    assert_eq!(merged["rows"], full["rows"]);
    assert_eq!(merged["merged"]["shards"], 2);
}

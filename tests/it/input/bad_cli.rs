//! The bad-input matrix through the `lineage` binary (issue 7, item 6): every case of
//! `tests/it/support/bad_input.rs`, appended to a store with one commit. A refused case exits 2
//! naming the line, row or field and the reason, prints nothing on stdout and leaves the
//! store byte for byte as it was; an accepted one stores exactly what its reference input
//! stores. Plus the `--store` decisions and empty standard input.
//!
//! `LINEAGE_BIN=/path/to/lineage` runs the matrix against another build (e.g. an older
//! one, to see which cases it gets wrong).

use std::path::Path;

use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::support::bad_input::{
    self, assert_all_passed, by_sequence, ext, lacks_in_order, validated, Expect,
};
use crate::support::sample::snapshot;
use crate::support::{self, text};

/// Run `lineage` (or `$LINEAGE_BIN`) with arguments and optional stdin.
fn lineage(args: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    match std::env::var_os("LINEAGE_BIN") {
        None => support::lineage(args, stdin),
        Some(bin) => {
            use std::io::Write;
            let mut child = std::process::Command::new(bin)
                .args(args)
                .env_remove("LINEAGE_STORE")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut pipe = child.stdin.take().unwrap();
            if let Some(input) = stdin {
                pipe.write_all(input).unwrap();
            }
            drop(pipe);
            child.wait_with_output().unwrap()
        }
    }
}

/// Every row in the store's parts, by sequence.
fn stored_rows(store: &Path) -> RecordBatch {
    let mut batches = Vec::new();
    for (k, _) in snapshot(store) {
        if k.starts_with("_lineage") || !k.ends_with(".parquet") {
            continue;
        }
        let f = std::fs::File::open(store.join(&k)).unwrap();
        for b in ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap()
        {
            // Written as the newest version (1.3.0): the matrix's inputs are 1.2.0's
            // columns, so the ones 1.3.0 adds are null; the 15 are compared.
            let b = b.unwrap();
            for c in 15..b.num_columns() {
                assert_eq!(b.column(c).null_count(), b.num_rows(), "{k}: column {c}");
            }
            batches.push(by_sequence(&b));
        }
    }
    by_sequence(
        &arrow_select::concat::concat_batches(&lineage_store::contract::schema(), &batches)
            .unwrap(),
    )
}

fn append(store: &str, input: &Path) -> std::process::Output {
    lineage(
        &[
            "append",
            "--store",
            store,
            "--input",
            input.to_str().unwrap(),
            "--json",
        ],
        None,
    )
}

#[test]
fn every_case_of_the_matrix_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store_s = store.to_str().unwrap().to_string();
    let o = lineage(
        &["append", "--store", &store_s],
        Some(&bad_input::good_ndjson(4)),
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let cases = bad_input::cases();
    let mut failures = Vec::new();
    for (n, c) in cases.iter().enumerate() {
        let input = dir.path().join(format!("in-{n}.{}", ext(c.format)));
        std::fs::write(&input, &c.input).unwrap();
        let before = snapshot(&store);
        let verdict = match &c.expect {
            Expect::Refused(wants) => {
                let o = append(&store_s, &input);
                let (out, err) = text(&o);
                // `--json`: stdout is one object listing the errors stderr tells.
                let listed: Option<Value> = serde_json::from_str(out.trim()).ok();
                let listed_ok = listed.as_ref().is_some_and(|v| {
                    v["valid"] == false
                        && v["error_count"].as_u64().is_some_and(|n| n >= 1)
                        && v["errors"].as_array().is_some_and(|e| {
                            !e.is_empty()
                                && e.iter().all(|x| {
                                    // stderr escapes control characters (issue 26).
                                    x["reason"].is_string()
                                        && err
                                            .contains(&escaped(x["reason"].as_str().unwrap_or("?")))
                                })
                        })
                });
                if o.status.code() != Some(2) {
                    Err(format!("exit {:?}: {out}{err}", o.status.code()))
                } else if let Some(w) = lacks_in_order(&err, wants) {
                    Err(format!("stderr lacks {w:?} (in order): {err}"))
                } else if !listed_ok || out.trim().lines().count() != 1 {
                    Err(format!(
                        "stdout is not one JSON object of the errors: {out}"
                    ))
                } else if err.lines().any(|l| l.len() > 1024) || err.lines().count() > 22 {
                    Err(format!(
                        "stderr of {} lines, {} bytes",
                        err.lines().count(),
                        err.len()
                    ))
                } else if snapshot(&store) != before {
                    Err("the store changed".into())
                } else {
                    Ok(())
                }
            }
            Expect::Empty => {
                let o = append(&store_s, &input);
                let (out, err) = text(&o);
                let v: Option<Value> = serde_json::from_str(out.trim()).ok();
                if o.status.code() != Some(0) {
                    Err(format!("exit {:?}: {err}", o.status.code()))
                } else if v
                    .as_ref()
                    .map(|v| (v["empty_input"].clone(), v["commits"].clone()))
                    != Some((Value::Bool(true), Value::from(0)))
                {
                    Err(format!("--json does not say the input was empty: {out}"))
                } else if snapshot(&store) != before {
                    Err("the store changed".into())
                } else {
                    Ok(())
                }
            }
            Expect::Accepted(_) | Expect::SameAs(..) => {
                let fresh = dir.path().join(format!("accepted-{n}"));
                let o = append(fresh.to_str().unwrap(), &input);
                let want = match &c.expect {
                    Expect::SameAs(r, rf) => validated(r, *rf).unwrap(),
                    _ => validated(&c.input, c.format).unwrap(),
                };
                if o.status.code() != Some(0) {
                    Err(format!("exit {:?}: {}", o.status.code(), text(&o).1))
                } else if stored_rows(&fresh) != by_sequence(&want) {
                    Err("stored rows differ from the reference's".into())
                } else {
                    Ok(())
                }
            }
        };
        if let Err(why) = verdict {
            failures.push(format!("{} ({:?}): {why}", c.name, c.format));
        }
    }
    assert_all_passed(&failures, cases.len());
}

#[test]
fn empty_standard_input_is_a_no_op_that_says_so_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("not-yet");
    let s = store.to_str().unwrap();
    let o = lineage(&["append", "--store", s], Some(b""));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        out,
        "0 commits, 0 rows: the input holds no events: nothing was appended\n"
    );
    let o = lineage(&["append", "--store", s, "--json"], Some(b"\n\n"));
    let v: Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    assert_eq!(v["empty_input"], true);
    assert_eq!(
        (v["commits"].as_u64(), v["rows"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(!store.exists(), "an empty append must not create the store");
}

#[test]
fn a_store_that_is_a_file_or_a_foreign_directory_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, bad_input::good_ndjson(3)).unwrap();
    let file = dir.path().join("events.parquet");
    std::fs::write(&file, b"someone's file").unwrap();
    let foreign = dir.path().join("project");
    std::fs::create_dir_all(foreign.join("src")).unwrap();
    std::fs::write(foreign.join("README.md"), b"# a project").unwrap();
    let before = snapshot(dir.path());
    for (store, want) in [
        (&file, "is a file, not a directory"),
        (
            &foreign,
            "not a lineage store (it holds \"README.md\", \"src\"",
        ),
    ] {
        let s = store.to_str().unwrap();
        for args in [
            vec!["append", "--store", s, "--input", input.to_str().unwrap()],
            vec!["verify", "--store", s],
            vec!["log", "--store", s],
            vec!["seal", "--store", s],
            vec!["repair", "--store", s],
            vec!["sweep", "--store", s],
        ] {
            let o = lineage(&args, None);
            let (out, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
            assert!(err.contains(want), "{args:?}: {err}");
        }
    }
    assert_eq!(snapshot(dir.path()), before, "nothing changed");
    // A store with a stray file in it is still a store: appended to, and the file named.
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    assert!(append(s, &input).status.success());
    std::fs::write(store.join("README.md"), b"stray").unwrap();
    assert!(append(s, &input).status.success());
    let o = lineage(&["verify", "--store", s], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).0.contains("PROBLEM foreign_object: README.md"));
}

/// `s` as a human-readable line shows it: control characters escaped.
fn escaped(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

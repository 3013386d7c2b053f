//! Contract versions beyond the released ones: the registry's rules (additive, nullable,
//! same major), and the CLI with a test-only 1.4.0 (examples/lineage_test_contract.rs:
//! 1.3.0 + `transform_pipeline`) writing, verifying and exporting a store that mixes
//! versions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use lineage_store::contract::{self, Column, Kind};
use serde_json::Value;

use crate::support::{self, own_process, sample};

const ADDED: Column = Column {
    name: "transform_pipeline",
    kind: Kind::Str,
    required: false,
    doc: "PROJ pipeline of the transformation (test-only version 1.4.0)",
};

fn with(extra: &[Column]) -> Vec<Column> {
    let mut c = contract::COLUMNS.to_vec();
    c.extend_from_slice(&contract::COLUMNS_1_3_0);
    c.extend_from_slice(extra);
    c
}

/// The test-only 1.4.0, registered in this test process (idempotent): each test that
/// registers it runs in a process of its own ([`own_process`]), so no other test of this
/// binary ever sees it.
fn v140() -> Arc<contract::ContractVersion> {
    contract::register_version("1.4.0", &with(&[ADDED])).unwrap()
}

fn refused(v: &str, cols: &[Column], want: &str) {
    let e = contract::register_version(v, cols).unwrap_err().to_string();
    assert!(e.contains(want), "{v}: {e}");
}

#[test]
fn the_registry_takes_only_additive_nullable_changes_within_the_major() {
    if !own_process::here(
        module_path!(),
        "the_registry_takes_only_additive_nullable_changes_within_the_major",
    ) {
        return;
    }
    assert_eq!(contract::versions()[0].version, "1.2.0");
    assert_eq!(
        contract::versions()[0].columns,
        contract::COLUMNS.to_vec(),
        "1.2.0 is frozen"
    );
    assert_eq!(contract::newest().version, "1.3.0", "the released newest");
    assert_eq!(contract::newest().columns.len(), 21);
    let v = v140();
    assert_eq!(v.columns.len(), 22);
    assert_eq!(contract::newest().version, "1.4.0");
    assert_eq!(
        v140().version,
        "1.4.0",
        "registering the same again is a no-op"
    );
    let needs_major = "needs a new major version (2.0.0)";
    let mut removed = with(&[ADDED]);
    removed.remove(14);
    refused("1.5.0", &removed, needs_major);
    refused("1.5.0", &removed, "column `audit_tag` of 1.4.0 is removed");
    let mut renamed = with(&[ADDED]);
    renamed[12].name = "reject_reason";
    refused(
        "1.5.0",
        &renamed,
        "column 13 `rejection_reason` of 1.4.0 is renamed to `reject_reason`",
    );
    let mut retyped = with(&[ADDED]);
    retyped[11].kind = Kind::Str;
    refused(
        "1.5.0",
        &retyped,
        "column `accuracy_m` changes from F64 to Str",
    );
    let mut moved = with(&[ADDED]);
    moved.swap(0, 1);
    refused(
        "1.5.0",
        &moved,
        "column `event_id` moves from position 1 to 2",
    );
    let mut required = ADDED;
    required.name = "crs_area";
    required.required = true;
    refused(
        "1.5.0",
        &with(&[ADDED, required]),
        "new column `crs_area` is required",
    );
    let mut other = ADDED;
    other.name = "crs_area";
    refused("2.0.0", &with(&[ADDED, other]), needs_major);
    refused("1.3.5", &with(&[ADDED, other]), "is not newer than 1.4.0");
    refused("1.5.0", &with(&[ADDED]), "adds no column");
    refused("1.5", &with(&[ADDED, other]), "not a MAJOR.MINOR.PATCH");
    refused("1.4.0", &with(&[other]), "registered with other columns");
    refused("1.3.0", &with(&[ADDED]), "registered with other columns");
    assert_eq!(
        contract::newest().version,
        "1.4.0",
        "nothing refused was registered"
    );
}

#[test]
fn older_input_is_widened_with_nulls_and_newer_never_narrowed() {
    if !own_process::here(
        module_path!(),
        "older_input_is_widened_with_nulls_and_newer_never_narrowed",
    ) {
        return;
    }
    let v = v140();
    let base = contract::version("1.2.0").unwrap();
    let batches = lineage_store::generate_demo_events(50, 1, 7).unwrap();
    let (to, out) = contract::for_append(batches.clone(), None, false).unwrap();
    assert_eq!(to.version, "1.4.0", "text input is written as the newest");
    assert_eq!(out[0].num_columns(), 22);
    for c in 15..22 {
        assert_eq!(out[0].column(c).null_count(), out[0].num_rows());
    }
    let (to, _) = contract::for_append(batches.clone(), None, true).unwrap();
    assert_eq!(to.version, "1.2.0", "typed 1.2.0 input keeps its version");
    let (to, kept) = contract::for_append(batches.clone(), Some("1.2.0"), false).unwrap();
    assert_eq!((to.version.as_str(), kept[0].num_columns()), ("1.2.0", 15));
    let wide = contract::conform(batches, &base, &v).unwrap();
    let e = contract::for_append(wide, Some("1.2.0"), true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be written as 1.2.0"), "{e}");
    assert!(e.contains("transform_pipeline"), "{e}");
}

fn test_cli() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_lineage"))
        .parent()
        .unwrap()
        .join("examples/lineage_test_contract");
    assert!(p.is_file(), "{} is built by `cargo test`", p.display());
    p
}

fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env_remove("LINEAGE_STORE")
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    let (out, err) = support::text(o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    out
}

/// Demo events of one run, as 1.4.0 batches with a pipeline in every row.
fn v140_batches(run_rows: usize, seed: u64) -> Vec<RecordBatch> {
    let v = v140();
    let base = contract::version("1.2.0").unwrap();
    let batches = lineage_store::generate_demo_events(run_rows, 1, seed).unwrap();
    contract::conform(batches, &base, &v)
        .unwrap()
        .into_iter()
        .map(|b| {
            let mut cols: Vec<ArrayRef> = b.columns()[..21].to_vec();
            let p: StringArray = (0..b.num_rows())
                .map(|i| Some(format!("+proj=pipeline +step={}", i % 3)))
                .collect();
            cols.push(Arc::new(p));
            RecordBatch::try_new(v.schema(), cols).unwrap()
        })
        .collect()
}

fn write_arrow(path: &Path, batches: &[RecordBatch]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &batches[0].schema()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

fn write_parquet(path: &Path, batches: &[RecordBatch]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, batches[0].schema(), None).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

fn versions_in_log(bin: &Path, store: &str) -> Vec<String> {
    ok(&run(bin, &["log", "--store", store, "--json"]))
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["schema_version"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn a_store_mixing_versions_is_written_verified_and_exported() {
    if !own_process::here(
        module_path!(),
        "a_store_mixing_versions_is_written_verified_and_exported",
    ) {
        return;
    }
    let cli = test_cli();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let s = store.as_str();
    // NDJSON without the flag: the newest (1.4.0), the added columns null.
    let nd = dir.path().join("a.ndjson");
    std::fs::write(&nd, sample::ndjson(&sample::events(20))).unwrap();
    let nd = nd.to_str().unwrap();
    ok(&run(&cli, &["append", "--store", s, "--input", nd]));
    assert!(versions_in_log(&cli, s).iter().all(|v| v == "1.4.0"));
    // --schema-version 1.2.0: written as 1.2.0.
    ok(&run(
        &cli,
        &[
            "append",
            "--store",
            s,
            "--input",
            nd,
            "--schema-version",
            "1.2.0",
        ],
    ));
    // Typed input keeps its version: Parquet of 1.2.0, Arrow of 1.4.0 (with values).
    let pq = dir.path().join("b.parquet");
    write_parquet(&pq, &lineage_store::generate_demo_events(30, 1, 3).unwrap());
    ok(&run(
        &cli,
        &["append", "--store", s, "--input", pq.to_str().unwrap()],
    ));
    let arrow = dir.path().join("c.arrow");
    write_arrow(&arrow, &v140_batches(30, 4));
    ok(&run(
        &cli,
        &["append", "--store", s, "--input", arrow.to_str().unwrap()],
    ));
    let mut seen = versions_in_log(&cli, s);
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["1.2.0", "1.4.0"]);
    // Refusals: an unregistered version, and 1.4.0 input narrowed to 1.2.0. Nothing published.
    let before = sample::snapshot(Path::new(s));
    for (args, want) in [
        (
            vec!["--schema-version", "1.9.0"],
            "schema version 1.9.0 is not registered (registered: 1.2.0, 1.3.0, 1.4.0)",
        ),
        (
            vec!["--schema-version", "1.2.0"],
            "cannot be written as 1.2.0",
        ),
    ] {
        let mut all = vec!["append", "--store", s, "--input", arrow.to_str().unwrap()];
        all.extend(args);
        let o = run(&cli, &all);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            support::text(&o).1.contains(want),
            "{}",
            support::text(&o).1
        );
    }
    assert_eq!(
        before,
        sample::snapshot(Path::new(s)),
        "refused input publishes nothing"
    );
    // verify accepts every registered version; a binary without 1.4.0 names it.
    ok(&run(&cli, &["seal", "--store", s]));
    ok(&run(&cli, &["verify", "--store", s]));
    let o = run(
        Path::new(env!("CARGO_BIN_EXE_lineage")),
        &["verify", "--store", s],
    );
    assert_eq!(o.status.code(), Some(1));
    let out = support::text(&o).0;
    assert!(
        out.contains(
            "footer schema version \"1.4.0\" is not registered (registered: 1.2.0, 1.3.0)"
        ),
        "{out}"
    );
    // A scan to Parquet of both versions: the 1.4.0 parts' column chunks copied, the
    // 1.2.0 parts decoded, widened with a null `transform_pipeline` and encoded into the
    // same file; the same rows as the decoded scan to Arrow IPC.
    let pq = dir.path().join("scan.parquet");
    ok(&run(
        &cli,
        &["scan", "--store", s, "--out", pq.to_str().unwrap()],
    ));
    let ipc = dir.path().join("scan.arrow");
    ok(&run(
        &cli,
        &["scan", "--store", s, "--out", ipc.to_str().unwrap()],
    ));
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&pq).unwrap(),
    )
    .unwrap();
    let schema = b.schema().clone();
    assert_eq!(schema.fields().len(), 22);
    let got: Vec<RecordBatch> = b.build().unwrap().map(|b| b.unwrap()).collect();
    let got = arrow_select::concat::concat_batches(&schema, &got).unwrap();
    let r =
        arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&ipc).unwrap(), None).unwrap();
    let want: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    let want = arrow_select::concat::concat_batches(&want[0].schema(), &want).unwrap();
    assert_eq!(got, want);
    assert_eq!(got.num_rows(), 20 + 20 + 30 + 30);
    let pipelines = arrow_array::Array::len(got.column(21).as_ref())
        - arrow_array::Array::null_count(got.column(21).as_ref());
    assert_eq!(pipelines, 30, "only the 1.4.0 Arrow input has pipelines");
    // The exports read both versions; the schema facet shows the union.
    let ev = ok(&run(&cli, &["export", "openlineage", "--store", s]));
    assert!(ev.contains("\"name\":\"transform_pipeline\""));
    // A pointer whose schema_version contradicts its part's footer is named.
    let ptr = std::fs::read_dir(Path::new(s).join("_lineage/commits"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains("\"1.4.0\""))
        .unwrap();
    let text = std::fs::read_to_string(&ptr).unwrap();
    std::fs::write(&ptr, text.replace("\"1.4.0\"", "\"1.2.0\"")).unwrap();
    let o = run(&cli, &["verify", "--store", s]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        support::text(&o)
            .0
            .contains("footer schema version 1.4.0, pointer"),
        "{}",
        support::text(&o).0
    );
}

/// `check --schema-version` with a registered version (issue 22): the summary names the
/// version an append would write, through the CLI (the test-only binary knows 1.4.0, the
/// plain `lineage` does not) and through the library.
#[test]
fn check_with_a_registered_schema_version_says_which_version_an_append_would_write() {
    if !own_process::here(
        module_path!(),
        "check_with_a_registered_schema_version_says_which_version_an_append_would_write",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, crate::support::bad_input::good_ndjson(3)).unwrap();
    let input_s = input.to_str().unwrap();
    let bin = test_cli();
    for (v, want) in [("1.4.0", "1.4.0"), ("1.3.0", "1.3.0"), ("1.2.0", "1.2.0")] {
        let args = ["check", "--input", input_s, "--schema-version", v];
        let text = ok(&run(&bin, &args));
        assert!(
            text.starts_with(&format!("valid: 3 rows, contract {want};")),
            "{v}: {text}"
        );
        let mut args = args.to_vec();
        args.push("--json");
        let j: Value = serde_json::from_str(ok(&run(&bin, &args)).trim()).unwrap();
        assert_eq!(j["schema_version"], want, "{j}");
        assert_eq!(j["rows"], 3);
    }
    let plain = Path::new(env!("CARGO_BIN_EXE_lineage"));
    let o = run(
        plain,
        &["check", "--input", input_s, "--schema-version", "1.4.0"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        support::text(&o).1.contains("1.4.0"),
        "{:?}",
        support::text(&o)
    );
    // The library, with 1.4.0 registered in this process.
    v140();
    let source = lineage_store::Input::open(Some(&input), None).unwrap();
    for v in ["1.4.0", "1.3.0", "1.2.0"] {
        let report = lineage_store::check(
            &source,
            &lineage_store::CheckOptions {
                schema_version: Some(v.into()),
                ..lineage_store::CheckOptions::default()
            },
        )
        .unwrap();
        assert_eq!((report.schema_version.as_str(), report.rows), (v, 3));
    }
}

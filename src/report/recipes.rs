//! "How to check independently": the commands that check what the report says without it.
//! The verified ways lead (`lineage verify` with the same trust anchors, the rows read by
//! `lineage scan` under them, an inclusion proof of a sealed commit and its offline check);
//! the Delta table in DuckDB and deltalake follows, marked as only as good as a `verify`
//! just before it (a Delta reader checks no digest and reads a tampered part silently).

use crate::audit::findings::Report;
use crate::history::iceberg::locate::IcebergTable;
use crate::report::model::{Recipe, RunSection};
use crate::report::options::ReportOptions;

/// The recipes for the store of `opts`, verified as `v`, whose runs are `runs`.
pub(crate) fn recipes(
    opts: &ReportOptions,
    v: &Report,
    runs: &[RunSection],
    iceberg: Option<&IcebergTable>,
) -> Vec<Recipe> {
    let mut out = vec![verify_recipe(opts), scan_recipe(opts)];
    out.extend(proof_recipes(opts, v, runs).into_iter().flatten());
    out.extend(table_recipes(opts, v));
    out.extend(iceberg.map(iceberg_recipe));
    out
}

/// What an Iceberg reader's recipe does not check.
const ICEBERG_CAVEAT: &str = "Only as good as a `lineage verify` (with the same anchors) run just before it: an Iceberg reader checks no digest and no seal, and the manifests carry none; `verify` rebuilds every Iceberg object from the seals and compares them byte for byte.";

/// The same events read as the Iceberg table of the newest metadata file (pyiceberg).
fn iceberg_recipe(t: &IcebergTable) -> Recipe {
    let path = format!(
        "'{}'",
        t.metadata_location
            .replace('\\', "\\\\")
            .replace('\'', "\\'")
    );
    Recipe {
        what: format!(
            "The same as the Iceberg table as of seal {} (pyiceberg; its metadata file is what a catalog's metadata_location is given)",
            t.seq
        ),
        tool: "python".into(),
        command: format!(
            "from pyiceberg.table import StaticTable; t = StaticTable.from_metadata({path}).scan().to_arrow(); print(t.group_by([\"run_id\", \"stage\", \"outcome\"]).aggregate([([], \"count_all\")]))"
        ),
        caveat: Some(ICEBERG_CAVEAT.into()),
    }
}

/// What a Delta reader's recipe does not check.
const DELTA_CAVEAT: &str = "Only as good as a `lineage verify` (with the same anchors) run just before it: a Delta reader checks no digest and no seal, and reads a part edited or planted since without a word.";

/// Quote a shell word when it needs it.
fn sh(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// SQL string literal.
fn sql(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The report's trust anchors as flags (`--expect-head`, `--public-key`, `--signed-from`,
/// `--witness`), each with a leading space.
fn anchor_flags(opts: &ReportOptions) -> String {
    let mut verify = String::new();
    if let Some(h) = &opts.verify.expect_head {
        verify.push_str(&format!(" --expect-head {h}"));
    }
    for k in &opts.key_sources {
        verify.push_str(&format!(" --public-key {}", sh(k)));
    }
    if let Some(f) = opts.verify.signed_from {
        verify.push_str(&format!(" --signed-from {f}"));
    }
    if let Some((_, w)) = &opts.witness {
        verify.push_str(&format!(" --witness {}", sh(w)));
    }
    verify
}

/// `lineage verify` with the report's trust anchors.
fn verify_recipe(opts: &ReportOptions) -> Recipe {
    let store = sh(&opts.store_url);
    Recipe {
        what: "The whole store: seal chain, every pointer and part, against the same trust anchors"
            .into(),
        tool: "lineage".into(),
        command: format!("lineage verify --store {store}{}", anchor_flags(opts)),
        caveat: None,
    }
}

/// The rows, read by `lineage scan` under the same anchors (every part checked while read).
fn scan_recipe(opts: &ReportOptions) -> Recipe {
    let store = sh(&opts.store_url);
    let as_of = opts
        .as_of_seal
        .map(|n| format!(" --as-of-seal {n}"))
        .unwrap_or_default();
    Recipe {
        what: "The rows themselves, every part checked against its pointer and the seals while it is read, under the same trust anchors".into(),
        tool: "lineage".into(),
        command: format!(
            "lineage scan --store {store}{as_of}{} --out events.parquet",
            anchor_flags(opts)
        ),
        caveat: None,
    }
}

/// An inclusion proof of a sealed commit (the newest of the first run shown that has one),
/// and its check offline; none when no commit shown is sealed (an unsealed one cannot be
/// proved).
fn proof_recipes(opts: &ReportOptions, v: &Report, runs: &[RunSection]) -> Option<[Recipe; 2]> {
    let store = sh(&opts.store_url);
    let head = v.head.clone().unwrap_or_else(|| "<HEAD_DIGEST>".into());
    let commit = runs
        .iter()
        .map(|r| r.sample_commit_id.clone())
        .find(|c| !c.is_empty())?;
    let key = opts
        .key_sources
        .first()
        .map(|k| format!(" --public-key {}", sh(k)))
        .unwrap_or_default();
    Some([
        Recipe {
            what: "One commit is in the sealed history (an inclusion proof under the head digest; --embed-seal: the proof carries the seal, so the head digest checks it)"
                .into(),
            tool: "lineage".into(),
            command: format!(
                "lineage prove --store {store} {commit} --head {head} --embed-seal --out proof.json"
            ),
            caveat: None,
        },
        Recipe {
            what: "The proof, offline, without the store".into(),
            tool: "lineage".into(),
            command: format!("lineage verify-proof proof.json --head {head}{key}"),
            caveat: None,
        },
    ])
}

/// The events by run, stage and outcome, read as the Delta table (DuckDB, deltalake).
fn table_recipes(opts: &ReportOptions, v: &Report) -> [Recipe; 2] {
    let version = opts.as_of_seal.or(v.head_seq);
    let url = crate::export::canonical_store_url(&opts.store_url);
    let table = sql(url.strip_prefix("file://").unwrap_or(&url));
    let version_arg = version
        .map(|n| format!(", version={n}"))
        .unwrap_or_default();
    [
        Recipe {
            what: "Events by run, stage and outcome, as the Delta table the seals make".into(),
            tool: "duckdb".into(),
            command: format!(
                "INSTALL delta; LOAD delta; SELECT run_id, stage, outcome, count(*) AS events FROM delta_scan({table}) GROUP BY ALL ORDER BY ALL;"
            ),
            caveat: Some(DELTA_CAVEAT.into()),
        },
        Recipe {
            what: format!(
                "The same with deltalake (Python){}",
                version
                    .map(|n| format!(", as of seal {n}"))
                    .unwrap_or_default()
            ),
            tool: "python".into(),
            command: format!(
                "from deltalake import DeltaTable; t = DeltaTable({table}{version_arg}).to_pyarrow_table(); print(t.group_by([\"run_id\", \"stage\", \"outcome\"]).aggregate([([], \"count_all\")]))"
            ),
            caveat: Some(DELTA_CAVEAT.into()),
        },
    ]
}

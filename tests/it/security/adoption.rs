//! Issue 33, 1: a well-formed part planted by anyone who can write (its footer's store id
//! copied from a real part's, as anyone who can read has it) followed through every hint.
//! `verify` names it as an orphan; `repair` lists it and adopts nothing until it is named;
//! `repair --adopt KEY` adopts it; `seal --rescan` seals it, marked adopted in the seal;
//! `verify` then exits 1 with `adopted_commit` (the auditor's head of before, or none)
//! unless `--accept-adopted`, and the mark shows in `files --json`, `scan` provenance, the
//! report's JSON and the OpenLineage export.

use std::path::Path;

use serde_json::Value;

use crate::support::{lineage, ndjson, text};

/// Run `args`: (exit code, stdout).
fn run(args: &[&str], stdin: Option<&[u8]>) -> (i32, String) {
    let o = lineage(args, stdin);
    let (out, err) = text(&o);
    let code = o.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{args:?}: exit {code}: {out}{err}");
    (code, out)
}

/// `verify --json` of `store` with `extra` arguments (grace 0: the planted part is fresh).
fn verify(store: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify", "--store", store, "--json", "--grace", "0s"];
    args.extend(extra);
    let (code, out) = run(&args, None);
    (code, serde_json::from_str(out.trim()).unwrap())
}

/// Append `n` events of run `run_id` to `store`, and seal it: the seal's head digest.
fn append_and_seal(store: &str, run_id: &str, n: usize) -> String {
    let input = ndjson(run_id, n, run_id);
    let args = ["append", "--store", store, "--batch-rows", "20"];
    assert_eq!(run(&args, Some(input.as_bytes())).0, 0);
    let (code, out) = run(&["seal", "--store", store, "--json"], None);
    assert_eq!(code, 0, "{out}");
    let s: Value = serde_json::from_str(out.trim()).unwrap();
    s["head"].as_str().unwrap().to_string()
}

/// A well-formed part naming `victim`'s store, written elsewhere: a second store given the
/// victim's identity object (what anyone who can read a part's footer knows), then one
/// append. Its part is copied into the victim under the same key; the key is returned.
fn plant(dir: &Path, victim: &Path) -> String {
    let forger = dir.join("forger");
    std::fs::create_dir_all(forger.join("_lineage")).unwrap();
    std::fs::copy(
        victim.join("_lineage/store.json"),
        forger.join("_lineage/store.json"),
    )
    .unwrap();
    let input = ndjson("planted", 10, "planted");
    let f = forger.to_str().unwrap();
    let args = ["append", "--store", f, "--batch-rows", "100"];
    assert_eq!(run(&args, Some(input.as_bytes())).0, 0);
    let part = crate::support::files_below(&forger)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "parquet"))
        .unwrap();
    let key = part
        .strip_prefix(&forger)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let to = victim.join(&key);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&part, &to).unwrap();
    key
}

#[test]
fn a_planted_part_is_adopted_only_by_name_and_stays_marked_through_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let s = root.to_str().unwrap();
    let head1 = append_and_seal(s, "real", 60);
    let key = plant(dir.path(), &root);
    let commit = key
        .rsplit_once("part-")
        .unwrap()
        .1
        .trim_end_matches(".parquet")
        .to_string();
    let pointer = root.join(format!("_lineage/commits/run_id=planted/{commit}.json"));

    // verify: an orphan, and what it may be.
    let (code, v) = verify(s, &["--expect-head", &head1]);
    assert_eq!(code, 1, "{v:#}");
    let p = &v["problems"].as_array().unwrap()[..];
    assert_eq!(p.len(), 1, "{v:#}");
    assert_eq!(
        (p[0]["kind"].as_str(), p[0]["key"].as_str()),
        (Some("orphan_part"), Some(key.as_str()))
    );
    let detail = p[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("or planted") && detail.contains("lineage repair --adopt"),
        "{detail}"
    );

    // repair without --adopt: lists it, adopts nothing, exit 1.
    let (code, out) = run(&["repair", "--store", s, "--grace", "0s"], None);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("orphan: {key}: not adopted")),
        "{out}"
    );
    assert!(
        out.contains("0 adopted") && out.contains("1 orphans not adopted"),
        "{out}"
    );
    assert!(!pointer.exists());
    // --dry-run with it named: what would be adopted, nothing written.
    let args = [
        "repair",
        "--store",
        s,
        "--grace",
        "0s",
        "--adopt",
        &key,
        "--dry-run",
    ];
    let (code, out) = run(&args, None);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("would adopt: _lineage/commits/run_id=planted/"),
        "{out}"
    );
    assert!(!pointer.exists());
    // Named: adopted, marked.
    let (code, out) = run(
        &["repair", "--store", s, "--grace", "0s", "--adopt", &key],
        None,
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 adopted") && out.contains("seal --rescan"),
        "{out}"
    );
    let ptr: Value = serde_json::from_slice(&std::fs::read(&pointer).unwrap()).unwrap();
    assert_eq!(ptr["adopted"], true);

    // seal --rescan seals it; the seal's entry carries the mark.
    let (code, out) = run(&["seal", "--store", s, "--rescan", "--json"], None);
    assert_eq!(code, 0, "{out}");
    let sealed: Value = serde_json::from_str(out.trim()).unwrap();
    let head2 = sealed["head"].as_str().unwrap().to_string();
    let seal2: Value = serde_json::from_slice(
        &std::fs::read(root.join("_lineage/seals/00000000000000000002.json")).unwrap(),
    )
    .unwrap();
    let entries = seal2["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{seal2:#}");
    assert_eq!(entries[0]["adopted"], true, "{seal2:#}");
    let seal1 =
        std::fs::read_to_string(root.join("_lineage/seals/00000000000000000001.json")).unwrap();
    assert!(
        !seal1.contains("adopted"),
        "other entries' bytes are as before: {seal1}"
    );

    // verify: with the auditor's head of before, and with none, a problem naming it.
    for extra in [&["--expect-head", head1.as_str()][..], &[]] {
        let (code, v) = verify(s, extra);
        assert_eq!(code, 1, "{extra:?}: {v:#}");
        let p = v["problems"].as_array().unwrap();
        assert_eq!(p.len(), 1, "{v:#}");
        assert_eq!(p[0]["kind"], "adopted_commit", "{v:#}");
        assert_eq!(
            p[0]["key"],
            format!("_lineage/commits/run_id=planted/{commit}.json")
        );
        let d = p[0]["detail"].as_str().unwrap();
        assert!(
            d.contains(&commit) && d.contains(&key) && d.contains("--accept-adopted"),
            "{d}"
        );
        assert_eq!(v["adopted"], 1, "{v:#}");
        let a = &v["adopted_commits"][0];
        assert_eq!(
            (a["commit_id"].as_str(), a["sealed_by"].as_u64()),
            (Some(commit.as_str()), Some(2))
        );
        assert_eq!(
            (a["anchored"].as_bool(), a["accepted"].as_bool()),
            (Some(false), Some(false))
        );
    }
    // Accepted: clean, and the verdict says so.
    let (code, v) = verify(s, &["--expect-head", &head1, "--accept-adopted"]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["adopted_commits"][0]["accepted"], true, "{v:#}");
    assert!(
        v["summary"]
            .as_str()
            .unwrap()
            .contains("1 adopted commit accepted"),
        "{v:#}"
    );
    // A head taken after the adoption covers it (the auditor anchored that history).
    let (code, v) = verify(s, &["--expect-head", &head2]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["adopted_commits"][0]["anchored"], true, "{v:#}");
    // The text form names it.
    let (code, out) = run(&["verify", "--store", s, "--grace", "0s"], None);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "ADOPTED _lineage/commits/run_id=planted/{commit}.json: commit {commit}"
        )),
        "{out}"
    );

    // files --json: the adopted part says so, the others do not.
    let (code, out) = run(&["files", "--store", s, "--json"], None);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let adopted: Vec<&Value> = lines.iter().filter(|l| l["adopted"] == true).collect();
    assert_eq!(adopted.len(), 1, "{out}");
    assert_eq!(adopted[0]["part_path"], key.as_str());
    assert!(lines.iter().all(|l| l["adopted"].is_boolean()), "{out}");

    // scan provenance: every row of the planted run is marked adopted, no other row.
    let rows = dir.path().join("rows.ndjson");
    let r = rows.to_str().unwrap();
    let (code, out) = run(
        &["scan", "--store", s, "--with-provenance", "--out", r],
        None,
    );
    assert_eq!(code, 0, "{out}");
    let rows: Vec<Value> = std::fs::read_to_string(&rows)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let planted = rows.iter().filter(|r| r["run_id"] == "planted").count();
    assert!(
        planted > 0 && rows.len() == 60 + planted,
        "{} rows",
        rows.len()
    );
    for row in &rows {
        let planted = row["run_id"] == "planted";
        assert_eq!(row["adopted"], planted, "{row}");
    }

    // The report's JSON: not clean, the adopted commit listed; accepted, clean.
    let (code, out) = run(
        &["report", "--store", s, "--format", "json", "--out", "-"],
        None,
    );
    assert_eq!(code, 1);
    let rep: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rep["verdict"]["adopted_commits"], 1, "{:#}", rep["verdict"]);
    assert_eq!(rep["verdict"]["adopted"][0]["commit_id"], commit.as_str());
    assert!(rep["verdict"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["kind"] == "adopted_commit"));
    let args = [
        "report",
        "--store",
        s,
        "--format",
        "json",
        "--out",
        "-",
        "--accept-adopted",
    ];
    let (code, out) = run(&args, None);
    assert_eq!(code, 0, "{out}");
    let rep: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rep["verdict"]["adopted_accepted"], 1);
    assert!(rep["verdict"]["headline"]
        .as_str()
        .unwrap()
        .contains("adopted commit accepted"));
    let (_, md) = run(
        &["report", "--store", s, "--format", "md", "--out", "-"],
        None,
    );
    assert!(
        md.contains("### Adopted commits (1)") && md.contains(&commit),
        "{md}"
    );

    // OpenLineage: the planted run's event names the adopted commit.
    let (code, out) = run(&["export", "openlineage", "--store", s], None);
    assert_eq!(code, 0, "{out}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for e in &events {
        let facet = &e["run"]["facets"]["lineageStore_run"];
        match facet["runId"].as_str() {
            Some("planted") => assert_eq!(facet["adoptedCommits"], serde_json::json!([commit])),
            _ => assert!(facet.get("adoptedCommits").is_none(), "{facet}"),
        }
    }
    // ISO 19115-3: the lineage statement names it.
    let args = ["export", "iso19115", "--store", s, "--run-id", "planted"];
    let (code, xml) = run(&args, None);
    assert_eq!(code, 0, "{xml}");
    assert!(
        xml.contains("were adopted by lineage repair") && xml.contains(&commit),
        "{xml}"
    );
}

#[test]
fn repair_refuses_to_adopt_what_is_not_an_orphan_part() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let s = root.to_str().unwrap();
    append_and_seal(s, "real", 20);
    // Not a part key at all: a usage error before anything is read.
    let o = lineage(
        &["repair", "--store", s, "--adopt", "_lineage/store.json"],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("--adopt") && err.contains("not the key of a data part"),
        "{err}"
    );
    // A part that has its pointer, and one that does not exist: refused, named, exit 1.
    let (_, files) = run(&["files", "--store", s], None);
    let real = files.lines().next().unwrap();
    let real = real.strip_prefix(&format!("{s}/")).unwrap();
    let missing =
        "run_id=real/target_crs=EPSG:4326/part-0190a000-0000-7000-8000-00000000cafe.parquet";
    let args = ["repair", "--store", s, "--adopt", real, "--adopt", missing];
    let (code, out) = run(&args, None);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "refused: {real}: not an orphan: its commit's pointer"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("refused: {missing}: no such part in the store")),
        "{out}"
    );
    assert!(out.contains("0 adopted"), "{out}");
}

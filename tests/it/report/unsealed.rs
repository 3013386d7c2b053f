//! Issue 33 item 5: a report marks the rows of unsealed commits it counts in a run's
//! tables, its sample `prove` command names a sealed commit (or is left out when none is
//! sealed), and its "check it independently" section leads with the verified ways, the
//! Delta readers after them marked as only as good as a `verify` just before.

use std::path::Path;

use serde_json::Value;

use crate::support::{lineage, sample, text};

fn ok(args: &[&str]) -> String {
    let o = lineage(args, None);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}\nstdout: {out}\nstderr: {err}"
    );
    out
}

fn append(s: &str, dir: &Path, name: &str, rows: &[Value]) {
    let p = dir.join(name);
    std::fs::write(&p, sample::ndjson(rows)).unwrap();
    ok(&["append", "--store", s, "--input", p.to_str().unwrap()]);
}

fn report(s: &str, dir: &Path, format: &str) -> String {
    let out = dir.join(format!("r.{format}"));
    ok(&[
        "report",
        "--store",
        s,
        "--out",
        out.to_str().unwrap(),
        "--format",
        format,
    ]);
    std::fs::read_to_string(out).unwrap()
}

fn section<'a>(r: &'a Value, run_id: &str) -> &'a Value {
    r["runs"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["run_id"] == run_id)
        .unwrap_or_else(|| panic!("no section of {run_id}: {r}"))
}

#[test]
fn unsealed_rows_are_marked_and_the_sample_proof_names_a_sealed_commit() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store").display().to_string();
    append(&s, dir.path(), "a.ndjson", &sample::events(20));
    let sealed = ok(&["seal", "--store", &s]);
    let head = sealed
        .split_whitespace()
        .skip_while(|w| *w != "head")
        .nth(1)
        .unwrap()
        .to_string();
    // After the seal: 3 more events of run-a, and a run of 2 events none of whose commits
    // is sealed.
    let more: Vec<Value> = (500..503)
        .map(|i| sample::event(i, "run-a", "EPSG:4326"))
        .collect();
    append(&s, dir.path(), "b.ndjson", &more);
    let new: Vec<Value> = (600..602)
        .map(|i| sample::event(i, "run-new", "EPSG:4326"))
        .collect();
    append(&s, dir.path(), "c.ndjson", &new);

    let r: Value = serde_json::from_str(&report(&s, dir.path(), "json")).unwrap();
    let a = section(&r, "run-a");
    assert_eq!(
        (&a["unsealed_commits"], &a["unsealed_events"]),
        (&1.into(), &3.into())
    );
    let n = section(&r, "run-new");
    assert_eq!(
        (&n["unsealed_commits"], &n["unsealed_events"]),
        (&1.into(), &2.into())
    );
    assert_eq!(n["sample_commit_id"], "", "run-new has no sealed commit");
    assert_eq!(section(&r, "run-b")["unsealed_events"], 0);

    // The sample proof names run-a's newest *sealed* commit, and it proves.
    let indep = r["independent"].as_array().unwrap();
    let cmd = |i: usize| indep[i]["command"].as_str().unwrap().to_string();
    assert!(cmd(0).starts_with("lineage verify --store"), "{}", cmd(0));
    assert!(cmd(1).starts_with("lineage scan --store"), "{}", cmd(1));
    let prove = cmd(2);
    assert!(prove.starts_with("lineage prove --store"), "{prove}");
    // It names the sample of a run shown, and every sample (run-a's newest commit is not
    // sealed: its sample is its newest sealed one) proves.
    let samples: Vec<&str> = r["runs"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["sample_commit_id"].as_str().unwrap())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(samples.len(), 2, "run-a and run-b have sealed commits");
    assert!(samples.iter().any(|c| prove.contains(c)), "{prove}");
    let proof = dir.path().join("proof.json");
    for commit in samples {
        ok(&[
            "prove",
            "--store",
            &s,
            commit,
            "--head",
            &head,
            "--out",
            proof.to_str().unwrap(),
            "--force",
        ]);
    }
    // The verified ways lead; every Delta reader comes after them, with its caveat.
    let first_delta = indep
        .iter()
        .position(|x| x["tool"] != "lineage")
        .expect("a Delta recipe");
    assert!(indep[..first_delta].iter().all(|x| x["caveat"].is_null()));
    assert_eq!(indep.len() - first_delta, 2);
    for x in &indep[first_delta..] {
        assert_ne!(x["tool"], "lineage");
        let c = x["caveat"].as_str().unwrap();
        assert!(c.starts_with("Only as good as a `lineage verify`"), "{c}");
    }

    let md = report(&s, dir.path(), "md");
    assert!(
        md.contains("| Events | 13 (") && md.contains("including 3 of commits not sealed yet |"),
        "{md}"
    );
    assert_eq!(
        md.matches("**Not sealed yet:** the tables of this run count")
            .count(),
        2,
        "{md}"
    );
    assert!(
        md.contains("count 3 events of 1 commits no seal covers yet"),
        "{md}"
    );
    assert_eq!(
        md.matches("**Only as good as a `lineage verify`").count(),
        2,
        "{md}"
    );
    let html = report(&s, dir.path(), "html");
    assert_eq!(html.matches("data-unsealed=\"1\"").count(), 2, "{html}");
    assert_eq!(
        html.matches("<p class=\"status-warn\">Only as good as")
            .count(),
        2
    );
}

#[test]
fn a_store_without_a_seal_offers_no_proof() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store").display().to_string();
    append(&s, dir.path(), "a.ndjson", &sample::events(6));
    let r: Value = serde_json::from_str(&report(&s, dir.path(), "json")).unwrap();
    for x in r["independent"].as_array().unwrap() {
        let c = x["command"].as_str().unwrap();
        assert!(
            !c.starts_with("lineage prove") && !c.contains("<COMMIT_ID>"),
            "{c}"
        );
    }
    assert!(r["runs"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["sample_commit_id"] == "" && x["unsealed_events"] == x["events"]));
}

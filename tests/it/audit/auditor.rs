//! The auditor's questions, one command each: `seals`, `show`, `diff`, and `--as-of-time`
//! on `files`, `scan`, `report` and the exports, with their anchors and exit codes.

use std::sync::Arc;

use lineage_store::compact::{compact, CompactOptions};
use lineage_store::{
    keygen, open, read_signing_key, seal, AtomicPublisher, Pointer, SystemClock, V7Ids,
};
use serde_json::Value;

use crate::support::audit::append;
use crate::support::lineage;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = lineage(args, None);
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json_lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: String,
    witness: String,
    pubkey: String,
    other_pubkey: String,
    key_id: String,
    first: Vec<Pointer>,
    second: Vec<Pointer>,
    heads: Vec<String>,
    /// (compaction id, its source commits), of seal 3.
    compactions: Vec<(String, Vec<String>)>,
}

/// Seal 1 (signed): 300 rows in commits of 50; seal 2 (signed): 120 rows in commits of 40;
/// seal 3: a compaction of them all; the witness records seal 3.
async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let witness = dir.path().join("witness").display().to_string();
    let prefix = dir.path().join("owner");
    let key_id = keygen(&prefix).unwrap();
    keygen(&dir.path().join("other")).unwrap();
    let sk = read_signing_key(&prefix.with_extension("key")).unwrap();
    let s: Arc<dyn AtomicPublisher> = open(&store, &Default::default()).await.unwrap();
    let first = append(s.clone(), 300, 50, 1).await;
    let h1 = seal(s.as_ref(), &SystemClock, Some(&sk))
        .await
        .unwrap()
        .head;
    let second = append(s.clone(), 120, 40, 2).await;
    let h2 = seal(s.as_ref(), &SystemClock, Some(&sk))
        .await
        .unwrap()
        .head;
    let opts = CompactOptions {
        target_rows: 10_000,
        ..CompactOptions::default()
    };
    let c = compact(s.clone(), &SystemClock, &V7Ids, Some(&sk), &opts)
        .await
        .unwrap();
    let h3 = c.seal.as_ref().unwrap().head.clone();
    let compactions: Vec<(String, Vec<String>)> = c
        .compactions
        .iter()
        .map(|x| {
            let key = x.record.as_deref().unwrap();
            let id = key.rsplit('/').next().unwrap().trim_end_matches(".json");
            (id.to_string(), x.commits.clone())
        })
        .collect();
    assert!(!compactions.is_empty());
    let (code, _, e) = run(&["witness", "--store", &store, "--witness", &witness]);
    assert_eq!(code, 0, "{e}");
    Fixture {
        store,
        witness,
        pubkey: prefix.with_extension("pub").display().to_string(),
        other_pubkey: dir.path().join("other.pub").display().to_string(),
        key_id,
        first,
        second,
        heads: vec![h1, h2, h3],
        compactions,
        _dir: dir,
    }
}

#[tokio::test]
async fn seals_lists_every_seal_with_its_signer_commits_compactions_and_witness() {
    let f = fixture().await;
    let (code, out, e) = run(&[
        "seals",
        "--store",
        &f.store,
        "--json",
        "--public-key",
        &f.pubkey,
        "--witness",
        &f.witness,
        "--expect-head",
        &f.heads[1],
    ]);
    assert_eq!(code, 0, "{e}");
    assert!(e.contains("the head digest given is seal 2's"), "{e}");
    let seals = json_lines(&out);
    let got: Vec<(u64, &str, &str, u64, u64, usize, bool)> = seals
        .iter()
        .map(|s| {
            (
                s["seq"].as_u64().unwrap(),
                s["sha256"].as_str().unwrap(),
                s["key_id"].as_str().unwrap(),
                s["commits_added"].as_u64().unwrap(),
                s["tree_size"].as_u64().unwrap(),
                s["compactions"].as_array().unwrap().len(),
                s["witnessed"].as_bool().unwrap(),
            )
        })
        .collect();
    let (n1, n2) = (f.first.len() as u64, f.second.len() as u64);
    let k = f.key_id.as_str();
    let nc = f.compactions.len();
    assert_eq!(
        got,
        vec![
            (1, f.heads[0].as_str(), k, n1, n1, 0, false),
            (2, f.heads[1].as_str(), k, n2, n1 + n2, 0, false),
            (3, f.heads[2].as_str(), k, 0, n1 + n2, nc, true),
        ]
    );
    let mut ids: Vec<&str> = seals[2]["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = f.compactions.iter().map(|c| c.0.as_str()).collect();
    ids.sort();
    want.sort();
    assert_eq!(ids, want);
    // Text: one line a seal.
    let (code, out, _) = run(&["seals", "--store", &f.store]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("seal 2 "), "{}", lines[1]);
    assert!(
        lines[1].contains(&format!(
            "sha256 {} signed by key {k}: +{n2} commits ({} in all), 0 compactions",
            f.heads[1],
            n1 + n2
        )),
        "{}",
        lines[1]
    );
    // An anchor that does not hold: listed all the same, exit 1, the problem named.
    let (code, out, e) = run(&[
        "seals",
        "--store",
        &f.store,
        "--expect-head",
        &"ab".repeat(32),
    ]);
    assert_eq!((code, out.lines().count()), (1, 3));
    assert!(
        e.contains(&format!("no seal has the head digest {}", "ab".repeat(32))),
        "{e}"
    );
    let (code, _, e) = run(&[
        "seals",
        "--store",
        &f.store,
        "--public-key",
        &f.other_pubkey,
    ]);
    assert_eq!(code, 1);
    assert_eq!(e.matches("PROBLEM _lineage/seals/").count(), 3, "{e}");
    assert!(e.contains("not a key given"), "{e}");
    let (code, _, _) = run(&["seals", "--store", &f.store, "--expect-head", "xyz"]);
    assert_eq!(code, 2);

    // A seal edited in place: the chain no longer holds; seals names it (exit 1), show
    // and diff refuse (exit 1).
    let key = std::path::Path::new(&f.store).join("_lineage/seals/00000000000000000002.json");
    let text = std::fs::read_to_string(&key).unwrap();
    let mut perms = std::fs::metadata(&key).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&key, perms).unwrap();
    std::fs::write(
        &key,
        text.replacen("\"tree_size\": ", "\"tree_size\": 1", 1),
    )
    .unwrap();
    let (code, _, e) = run(&["seals", "--store", &f.store]);
    assert_eq!(code, 1);
    assert!(
        e.contains("PROBLEM _lineage/seals/00000000000000000002.json"),
        "{e}"
    );
    for args in [vec!["show", "1"], vec!["diff", "1", "2"]] {
        let mut a = args.clone();
        a.extend(["--store", &f.store]);
        let (code, _, e) = run(&a);
        assert_eq!(code, 1, "{args:?}: {e}");
        assert!(e.contains("00000000000000000002.json"), "{args:?}: {e}");
    }
}

#[tokio::test]
async fn show_says_who_when_what_where_and_sealed_by_of_a_commit_and_a_seal() {
    let f = fixture().await;
    let c = &f.second[1];
    let compacted = match f.compactions.iter().find(|x| x.1.contains(&c.commit_id)) {
        Some((id, _)) => format!("  compacted: into compaction {id}, in effect from seal 3"),
        None => "  compacted: no".to_string(),
    };
    let (code, out, e) = run(&["show", "--store", &f.store, &c.commit_id]);
    assert_eq!(code, 0, "{e}");
    assert!(
        out.starts_with(&format!("commit {}\n", c.commit_id)),
        "{out}"
    );
    for want in [
        format!("  who:       {}", c.tool_version),
        format!("  when:      committed {}", c.committed_utc),
        format!(
            "  what:      {} rows of run_id={} target_crs={}, sequence {}..{}",
            c.row_count, c.run_id, c.target_crs, c.first_sequence, c.last_sequence
        ),
        format!(
            "  where:     part {} ({} bytes, sha256 {}",
            c.part_path, c.size_bytes, c.sha256
        ),
        "  sealed:    by seal 2 of ".to_string(),
        format!("(sha256 {}, signed by key {})", f.heads[1], f.key_id),
        compacted,
        format!(
            "lineage prove --store {} {} --head {}",
            f.store, c.commit_id, f.heads[1]
        ),
    ] {
        assert!(out.contains(&want), "{want:?} not in:\n{out}");
    }
    let (code, out, _) = run(&["show", "--store", &f.store, &c.commit_id, "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            &v["kind"],
            &v["pointer"]["row_count"],
            &v["sealed_by"]["seq"]
        ),
        (
            &Value::from("commit"),
            &Value::from(c.row_count),
            &Value::from(2)
        )
    );
    // Its leaf: after seal 1's, in seal 2's canonical order (commit time, then commit id).
    let mut order: Vec<&Pointer> = f.second.iter().collect();
    order.sort_by(|a, b| (&a.committed_utc, &a.commit_id).cmp(&(&b.committed_utc, &b.commit_id)));
    let at = order
        .iter()
        .position(|p| p.commit_id == c.commit_id)
        .unwrap();
    assert_eq!(v["leaf_index"], (f.first.len() + at) as u64);

    // A seal by number and by digest.
    for what in ["2", f.heads[1].as_str()] {
        let (code, out, e) = run(&["show", "--store", &f.store, what, "--witness", &f.witness]);
        assert_eq!(code, 0, "{e}");
        assert!(out.starts_with("seal 2\n"), "{out}");
        assert!(
            out.contains(&format!("  who:       signed by key {}", f.key_id)),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "adds {} commits ({} in all)",
                f.second.len(),
                f.first.len() + f.second.len()
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!("follows sha256 {}", f.heads[0])),
            "{out}"
        );
        assert!(out.contains("  witnessed: no"), "{out}");
    }
    let (_, out, _) = run(&["show", "--store", &f.store, "3", "--witness", &f.witness]);
    let ids: Vec<&str> = f.compactions.iter().map(|c| c.0.as_str()).collect();
    assert!(
        out.contains(&format!("puts {} compactions into effect: ", ids.len())),
        "{out}"
    );
    assert!(ids.iter().all(|id| out.contains(id)), "{out}");
    assert!(out.contains("  witnessed: yes"), "{out}");
    // Errors: not a commit or seal (2), no such seal (2), an anchor that fails (1).
    let (code, _, e) = run(&["show", "--store", &f.store, "yesterday"]);
    assert_eq!(code, 2);
    assert!(e.contains("neither a commit id"), "{e}");
    let (code, _, e) = run(&["show", "--store", &f.store, "9"]);
    assert_eq!(code, 2);
    assert!(e.contains("seal 9"), "{e}");
    let (code, _, _) = run(&[
        "show",
        "--store",
        &f.store,
        "1",
        "--public-key",
        &f.other_pubkey,
    ]);
    assert_eq!(code, 1);
}

#[tokio::test]
async fn diff_counts_the_commits_rows_runs_and_compactions_between_two_seals() {
    let f = fixture().await;
    let (code, out, e) = run(&["diff", "--store", &f.store, "1", "3", "--json"]);
    assert_eq!(code, 0, "{e}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = d["commits_added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit_id"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = f.second.iter().map(|p| p.commit_id.as_str()).collect();
    let mut got = ids.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(d["rows_added"], 120);
    assert_eq!(
        (&d["commits_before"], &d["commits_after"]),
        (
            &Value::from(f.first.len()),
            &Value::from(f.first.len() + f.second.len())
        )
    );
    let comp: Vec<(&str, u64)> = d["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_str().unwrap(), c[1].as_u64().unwrap()))
        .collect();
    assert_eq!(comp.len(), f.compactions.len());
    assert!(comp
        .iter()
        .all(|(id, seq)| *seq == 3 && f.compactions.iter().any(|c| c.0 == *id)));
    let run_rows: u64 = d["runs"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(run_rows, 120);
    let (code, out, _) = run(&["diff", "--store", &f.store, "0", "1"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with(&format!(
            "seal 0 -> seal 1: +{} commits (0 -> {}), +300 rows, 0 compactions put into effect",
            f.first.len(),
            f.first.len()
        )),
        "{out}"
    );
    let (code, _, e) = run(&["diff", "--store", &f.store, "3", "1"]);
    assert_eq!(code, 2);
    assert!(e.contains("give the older seal first"), "{e}");
    let (code, _, _) = run(&["diff", "--store", &f.store, "1", "7"]);
    assert_eq!(code, 2);
}

#[tokio::test]
async fn as_of_time_reads_the_newest_seal_sealed_by_then() {
    let f = fixture().await;
    let (_, out, _) = run(&["seals", "--store", &f.store, "--json"]);
    let seals = json_lines(&out);
    let t1 = seals[0]["sealed_utc"].as_str().unwrap().to_string();
    // At seal 1's time exactly: seal 1's commits, originals.
    let (code, out, e) = run(&["files", "--store", &f.store, "--as-of-time", &t1]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(out.lines().count(), f.first.len());
    assert!(e.contains("as of seal 1 "), "{e}");
    // A date: the end of that day, so the newest seal (3: the compacted parts).
    let day = &t1[..10];
    let (code, out, e) = run(&["files", "--store", &f.store, "--as-of-time", day]);
    assert_eq!(code, 0, "{e}");
    assert!(
        out.lines().count() < f.first.len() + f.second.len(),
        "{out}"
    );
    assert!(e.contains("as of seal 3 "), "{e}");
    let rows = tempfile::tempdir().unwrap();
    let path = rows.path().join("r.ndjson").display().to_string();
    let (code, _, e) = run(&[
        "scan",
        "--store",
        &f.store,
        "--as-of-time",
        &t1,
        "--out",
        &path,
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 300);
    let report = rows.path().join("r.json").display().to_string();
    let (code, _, e) = run(&[
        "report",
        "--store",
        &f.store,
        "--as-of-time",
        &t1,
        "--format",
        "json",
        "--out",
        &report,
    ]);
    assert_eq!(code, 0, "{e}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["checked"]["as_of_seal"], 1, "{}", r["checked"]);
    let (code, out, e) = run(&[
        "export",
        "openlineage",
        "--store",
        &f.store,
        "--as-of-time",
        &t1,
        "--per",
        "commit",
    ]);
    assert_eq!(code, 0, "{e}");
    assert_eq!(out.lines().count(), f.first.len());
    // Before any seal: exit 2, saying when the first was made; not a time: exit 2.
    let (code, _, e) = run(&["files", "--store", &f.store, "--as-of-time", "2000-01-01"]);
    assert_eq!(code, 2);
    assert!(
        e.contains(&format!("the first seal was sealed at {t1}")),
        "{e}"
    );
    let (code, _, e) = run(&[
        "scan",
        "--store",
        &f.store,
        "--as-of-time",
        "3 November",
        "--out",
        &path,
    ]);
    assert_eq!(code, 2);
    assert!(
        e.contains("--as-of-time \"3 November\" is not a time"),
        "{e}"
    );
    let (code, _, _) = run(&[
        "files",
        "--store",
        &f.store,
        "--as-of-time",
        day,
        "--as-of-seal",
        "1",
    ]);
    assert_eq!(code, 2);
}

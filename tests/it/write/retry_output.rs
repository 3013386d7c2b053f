//! A keyed retry says its commits were already there (text and `--json`), unlike a first
//! run.

use crate::support::{lineage, sample, text};

#[test]
fn a_keyed_retry_says_the_commits_were_already_committed() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s").display().to_string();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&sample::events(20))).unwrap();
    let args = [
        "append",
        "--store",
        &s,
        "--input",
        input.to_str().unwrap(),
        "--commit-key",
        "job-7",
    ];
    let run = |extra: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(extra);
        let o = lineage(&a, None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{out}{err}");
        out
    };
    let first = run(&[]);
    let n = first
        .lines()
        .filter(|l| l.starts_with("committed "))
        .count();
    assert!(n > 0, "{first}");
    assert!(!first.contains("already committed"), "{first}");
    let again = run(&[]);
    let lines: Vec<&str> = again.lines().filter(|l| l.contains("committed ")).collect();
    assert_eq!(lines.len(), n, "{again}");
    for l in &lines {
        assert!(
            l.starts_with("already committed ")
                && l.contains("by an earlier run at")
                && l.ends_with("; nothing published)"),
            "{l}"
        );
    }
    let json = run(&["--json"]);
    let v: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), n);
    assert!(v.iter().all(|p| p["existed"] == true), "{json}");
}

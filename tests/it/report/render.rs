//! The library's render of a report whose run_id holds markup (new stores refuse such a
//! run_id; a store an older version wrote, or a report read back from its JSON, may hold
//! one): shown as text in HTML and Markdown, and a report read back from its JSON renders
//! the same bytes.

use lineage_store::report::{render, AuditReport, ReportFormat};

use crate::support::{lineage, sample, text};

const HOSTILE_RUN: &str = "<script>alert('run')</script>\"";

#[test]
fn a_run_id_holding_markup_is_escaped_and_json_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store").display().to_string();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&sample::events(20))).unwrap();
    let o = lineage(
        &["append", "--store", &s, "--input", input.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let j = dir.path().join("r.json");
    let o = lineage(
        &[
            "report",
            "--store",
            &s,
            "--out",
            j.to_str().unwrap(),
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let json = std::fs::read_to_string(&j).unwrap();
    let mut r: AuditReport = serde_json::from_str(&json).unwrap();
    assert_eq!(
        render(&r, ReportFormat::Json).unwrap(),
        json,
        "JSON round trip"
    );
    let html_before = render(&r, ReportFormat::Html).unwrap();
    assert!(html_before.contains("run-a"));

    let b = r
        .runs
        .items
        .iter()
        .position(|x| x.run_id == "run-b")
        .unwrap();
    r.runs.items[b].run_id = HOSTILE_RUN.to_string();
    r.store = format!("{}<i>", r.store);
    let html = render(&r, ReportFormat::Html).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("<i>"),
        "raw markup in the HTML"
    );
    assert!(
        html.contains("&lt;script&gt;alert(&#x27;run&#x27;)&lt;&#x2f;script&gt;&quot;"),
        "run_id escaped"
    );
    // In the chart's title and description too.
    assert!(
        html.contains("Rejected events of run &lt;script&gt;"),
        "chart title escaped"
    );
    let md = render(&r, ReportFormat::Markdown).unwrap();
    assert!(
        md.contains("### Run &lt;script&gt;alert('run')&lt;/script&gt;\""),
        "{md}"
    );
    assert!(!md.contains("<script"), "{md}");
    // Object keys and URLs are code spans: shown literally, never read as markup.
    assert!(md.contains(&format!("store `{}`", r.store)), "{md}");
}

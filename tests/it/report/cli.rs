//! `lineage report` through the CLI.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{lineage, sample, text};

const HOSTILE_REASON: &str = "<script>alert(\"reason\")</script> & 'quoted' <b>bold</b>";
const HOSTILE_TOOL: &str = "tool\"><img src=x onerror=alert(1)>/1.0";

fn run(args: &[&str]) -> std::process::Output {
    lineage(args, None)
}

fn ok(o: &std::process::Output) -> String {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    out
}

/// A store of 60 sample events in two runs (run-a, run-b) and two target CRSs, sealed
/// and signed; then `extra` events appended unsealed. Returns (store, public key, head).
fn store(dir: &Path, extra: &[Value]) -> (String, PathBuf, String) {
    let s = dir.join("store").display().to_string();
    let input = dir.join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&sample::events(60))).unwrap();
    ok(&run(&[
        "append",
        "--store",
        &s,
        "--input",
        input.to_str().unwrap(),
        "--batch-rows",
        "10",
    ]));
    let key = dir.join("k");
    ok(&run(&["keygen", "--out", key.to_str().unwrap()]));
    let sealed = ok(&run(&[
        "seal",
        "--store",
        &s,
        "--signing-key",
        dir.join("k.key").to_str().unwrap(),
    ]));
    let head = sealed
        .split_whitespace()
        .skip_while(|w| *w != "head")
        .nth(1)
        .unwrap()
        .to_string();
    if !extra.is_empty() {
        let more = dir.join("more.ndjson");
        std::fs::write(&more, sample::ndjson(extra)).unwrap();
        ok(&run(&[
            "append",
            "--store",
            &s,
            "--input",
            more.to_str().unwrap(),
        ]));
    }
    (s, dir.join("k.pub"), head)
}

fn report(store: &str, out: &Path, format: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "report",
        "--store",
        store,
        "--out",
        out.to_str().unwrap(),
        "--format",
        format,
    ];
    a.extend_from_slice(extra);
    run(&a)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn run_section<'a>(r: &'a Value, run_id: &str) -> &'a Value {
    r["runs"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["run_id"] == run_id)
        .unwrap_or_else(|| panic!("no section of {run_id}: {r}"))
}

/// Counts of the sample events of one run: (events, rejected).
fn sample_counts(run_id: &str) -> (u64, u64) {
    let rows: Vec<Value> = sample::events(60)
        .into_iter()
        .filter(|r| r["run_id"] == run_id)
        .collect();
    let rejected = rows.iter().filter(|r| r["outcome"] == "rejected").count();
    (rows.len() as u64, rejected as u64)
}

#[test]
fn a_clean_stores_report_states_its_facts_in_json_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let (s, key, head) = store(dir.path(), &[]);
    let anchors = [
        "--public-key",
        key.to_str().unwrap(),
        "--expect-head",
        &head,
    ];
    let j = dir.path().join("r.json");
    let o = report(&s, &j, "json", &anchors);
    let said = ok(&o);
    assert!(said.starts_with("clean: no problems"), "{said}");
    let r = read_json(&j);
    assert_eq!(r["format"], "lineage-report/1");
    assert_eq!(r["verdict"]["clean"], true);
    assert_eq!(r["verdict"]["headline"], "clean: no problems");
    assert_eq!(r["verdict"]["groups"], json!([]));
    assert_eq!(r["checked"]["head"]["expected"], head.as_str());
    assert_eq!(r["checked"]["head"]["found"], true);
    assert_eq!(r["checked"]["head"]["sha256"], head.as_str());
    assert_eq!(r["checked"]["signatures_required_from"], 1);
    let keys = r["checked"]["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{r}");
    assert_eq!(keys[0]["source"], key.display().to_string());
    assert_eq!(
        (
            keys[0]["seals_signed"].as_u64(),
            keys[0]["seal_ranges"].as_str()
        ),
        (Some(1), Some("1"))
    );
    assert_eq!(r["identity"]["rows"], 60);
    assert_eq!(r["identity"]["runs"], 2);
    assert_eq!(r["identity"]["partitions"], 4);
    assert_eq!(r["identity"]["sealed_commits"], r["identity"]["commits"]);
    assert_eq!(r["timeline"]["seals"], 1);
    assert_eq!(r["timeline"]["signed"], 1);
    assert_eq!(
        r["timeline"]["points"][0]["commits"],
        r["identity"]["commits"]
    );
    assert_eq!(r["runs"]["total"], 2);
    assert_eq!(r["runs"]["withheld"], Value::Null);
    assert_eq!(r["runs"]["parts_not_counted"], json!([]));
    for run_id in ["run-a", "run-b"] {
        let (events, rejected) = sample_counts(run_id);
        let sec = run_section(&r, run_id);
        assert_eq!(sec["events"], events, "{run_id}");
        let outcomes: Vec<&str> = sec["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        // The sample rejects every tenth event (odd ones only: run-b).
        if rejected == 0 {
            assert_eq!(outcomes, ["transformed"]);
            assert_eq!(
                sec["stages"],
                json!([{"stage": "reproject", "counts": [events], "total": events}])
            );
            assert_eq!(sec["rejection_reasons"]["items"], json!([]));
        } else {
            assert_eq!(outcomes, ["rejected", "transformed"]);
            assert_eq!(
                sec["stages"],
                json!([{"stage": "reproject", "counts": [rejected, events - rejected], "total": events}])
            );
            assert_eq!(
                sec["rejection_reasons"]["items"],
                json!([{"value": "outside_area_of_use", "count": rejected}])
            );
        }
        assert_eq!(
            sec["source_crs"]["items"],
            json!([{"value": "EPSG:4258", "count": events}])
        );
        assert_eq!(
            sec["tools"]["items"],
            json!([{"value": "geostd/2.4.1", "count": events}])
        );
        let crs: Vec<&str> = sec["target_crs"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["value"].as_str().unwrap())
            .collect();
        assert_eq!(crs.len(), 2, "{sec}");
        assert!(
            crs.contains(&"EPSG:4326") && crs.contains(&"EPSG:3857"),
            "{crs:?}"
        );
        // accuracy_m: the rejected events have none; the others 0.25 * (i % 8) metres.
        let hists = sec["accuracy"].as_array().unwrap();
        let with: u64 = hists
            .iter()
            .map(|h| h["with_value"].as_u64().unwrap())
            .sum();
        let without: u64 = hists
            .iter()
            .map(|h| h["without_value"].as_u64().unwrap())
            .sum();
        assert_eq!((with, without), (events - rejected, rejected));
        let binned: u64 = hists
            .iter()
            .flat_map(|h| h["bins"].as_array().unwrap())
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(binned, with);
        assert!(hists
            .iter()
            .all(|h| h["max"].as_f64().unwrap_or(0.0) <= 1.75));
        assert!(sec["first_event_utc"]
            .as_str()
            .unwrap()
            .starts_with("2026-07-13T06:"));
    }
    // The commands to check it independently carry the anchors.
    let verify = r["independent"][0]["command"].as_str().unwrap();
    assert!(
        verify.contains(&format!("--expect-head {head}")),
        "{verify}"
    );
    assert!(verify.contains("--public-key"), "{verify}");
    let prove = r["independent"][2]["command"].as_str().unwrap();
    assert!(
        prove.starts_with("lineage prove --store") && prove.contains(&head),
        "{prove}"
    );
    // Both commands run as written (the seals are signed: the proof embeds the seal, so
    // the head digest checks it).
    let check = r["independent"][3]["command"].as_str().unwrap();
    for cmd in [prove, check] {
        let bin = env!("CARGO_BIN_EXE_lineage");
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd.replacen("lineage", bin, 1))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{cmd}: {:?}",
            crate::support::text(&o)
        );
    }

    // Markdown: the verdict first, the same facts.
    let m = dir.path().join("r.md");
    ok(&report(&s, &m, "md", &anchors));
    let md = std::fs::read_to_string(&m).unwrap();
    assert_eq!(md.lines().next(), Some("# Verdict: clean: no problems"));
    let (events_b, rejected_b) = sample_counts("run-b");
    assert!(rejected_b > 0);
    for want in [
        "## What was checked against what".to_string(),
        "found in the chain".to_string(),
        "| Events (rows) | 60 |".to_string(),
        "### Run run-a".to_string(),
        "### Run run-b".to_string(),
        format!(
            "| reproject | {rejected_b} | {} | {events_b} |",
            events_b - rejected_b
        ),
        format!("| outside\\_area\\_of\\_use | {rejected_b} |"),
        "## How to check it independently".to_string(),
    ] {
        assert!(md.contains(&want), "{want:?} not in:\n{md}");
    }

    // HTML: the verdict is the first heading; nothing is loaded from anywhere.
    let h = dir.path().join("r.html");
    ok(&report(&s, &h, "html", &anchors));
    let html = std::fs::read_to_string(&h).unwrap();
    let first_heading = first_heading(&html);
    assert!(
        first_heading.starts_with("<h1 id=\"verdict\">Verdict: clean: no problems"),
        "{first_heading}"
    );
    self_contained(&html);
    // Every chart has a title and a description.
    assert_eq!(
        html.matches("<svg").count(),
        html.matches("<title id=").count()
    );
    assert_eq!(
        html.matches("<svg").count(),
        html.matches("<desc id=").count()
    );
    // The timeline, run-b's reasons, a histogram per run and target CRS.
    assert_eq!(html.matches("<svg").count(), 1 + 1 + 2 * 2);
}

/// The first `<h1>`..`<h6>` element's start.
fn first_heading(html: &str) -> &str {
    let i = html
        .match_indices("<h")
        .map(|(i, _)| i)
        .find(|i| html[i + 2..].starts_with(|c: char| c.is_ascii_digit()))
        .unwrap();
    &html[i..(i + 60).min(html.len())]
}

/// No script, no resource from the network (nor any `http(s)://` at all), no external
/// stylesheet, font or image.
fn self_contained(html: &str) {
    let lower = html.to_lowercase();
    for bad in [
        "<script", "http://", "https://", "<link", "@import", "url(", "<img", "<iframe", "<object",
        "<embed", "<video", "<audio", "<source",
    ] {
        assert!(!lower.contains(bad), "{bad:?} in the HTML");
    }
    assert!(lower.contains("@media print"), "no print stylesheet");
}

#[test]
fn a_tampered_stores_report_names_each_problem_and_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let (s, key, head) = store(dir.path(), &[]);
    let root = PathBuf::from(&s);
    let pointers: Vec<PathBuf> = crate::support::files_below(&root.join("_lineage/commits"));
    assert!(pointers.len() >= 4);
    // A flipped byte in one part (of another commit than the deleted pointer's).
    let victim: Value = serde_json::from_slice(&std::fs::read(&pointers[0]).unwrap()).unwrap();
    let part = victim["part_path"].as_str().unwrap().to_string();
    let mut b = std::fs::read(root.join(&part)).unwrap();
    let i = b.len() / 2;
    b[i] ^= 0x01;
    std::fs::write(root.join(&part), b).unwrap();
    let deleted = pointers[1]
        .strip_prefix(&root)
        .unwrap()
        .display()
        .to_string();
    std::fs::remove_file(&pointers[1]).unwrap();

    for format in ["json", "md", "html"] {
        let out = dir.path().join(format!("t.{format}"));
        let o = report(
            &s,
            &out,
            format,
            &[
                "--public-key",
                key.to_str().unwrap(),
                "--expect-head",
                &head,
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{format}: {:?}", text(&o));
        let written = std::fs::read_to_string(&out).unwrap();
        let (p, d) = match format {
            "md" => (format!("`{part}`"), format!("`{deleted}`")),
            // HTML escaping writes `/` as `&#x2f;`.
            "html" => (part.replace('/', "&#x2f;"), deleted.replace('/', "&#x2f;")),
            _ => (part.clone(), deleted.clone()),
        };
        assert!(
            written.contains(&p) && written.contains(&d),
            "{format}: {written}"
        );
        if format == "json" {
            let r: Value = serde_json::from_str(&written).unwrap();
            assert_eq!(r["verdict"]["clean"], false);
            let kinds: Vec<(&str, &str)> = r["verdict"]["groups"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|g| {
                    g["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(move |p| (g["kind"].as_str().unwrap(), p["key"].as_str().unwrap()))
                })
                .collect();
            assert!(
                kinds.contains(&("digest_mismatch", part.as_str())),
                "{kinds:?}"
            );
            assert!(
                kinds.contains(&("sealed_pointer_missing", deleted.as_str())),
                "{kinds:?}"
            );
            // The trusted read refuses a store missing a sealed pointer: nothing counted,
            // and the report says why.
            let withheld = r["runs"]["withheld"].as_str().unwrap();
            assert!(withheld.contains(&deleted), "{withheld}");
            assert_eq!(r["runs"]["items"], json!([]));
        }
        if format == "md" {
            let first = written.lines().next().unwrap();
            assert!(
                first.starts_with("# Verdict: ")
                    && first.contains("problem")
                    && first.ends_with(" found"),
                "{first}"
            );
            assert!(
                written.contains("### digest\\_mismatch")
                    && written.contains("### sealed\\_pointer\\_missing"),
                "{written}"
            );
        }
        if format == "html" {
            assert!(
                first_heading(&written).starts_with("<h1 id=\"verdict\">Verdict: "),
                "{written}"
            );
            assert!(written.contains("PROBLEMS FOUND"));
            self_contained(&written);
        }
    }

    // With the pointer back, only the flipped part is wrong: it is named, not counted,
    // and the rest is.
    let dir2 = tempfile::tempdir().unwrap();
    let (s2, _, _) = store(dir2.path(), &[]);
    let root2 = PathBuf::from(&s2);
    let p0: Value = serde_json::from_slice(
        &std::fs::read(&crate::support::files_below(&root2.join("_lineage/commits"))[0]).unwrap(),
    )
    .unwrap();
    let part2 = p0["part_path"].as_str().unwrap();
    let mut b = std::fs::read(root2.join(part2)).unwrap();
    let i = b.len() / 2;
    b[i] ^= 0x01;
    std::fs::write(root2.join(part2), b).unwrap();
    let out = dir2.path().join("t.json");
    assert_eq!(report(&s2, &out, "json", &[]).status.code(), Some(1));
    let r = read_json(&out);
    let not_counted = r["runs"]["parts_not_counted"].as_array().unwrap();
    assert_eq!(not_counted.len(), 1, "{r}");
    assert_eq!(not_counted[0]["key"], part2);
    let counted: u64 = r["runs"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["events"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 60 - p0["row_count"].as_u64().unwrap());
}

#[test]
fn markup_in_rejection_reasons_and_tool_versions_is_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = sample::event(1000, "run-hostile", "EPSG:4326");
    e["outcome"] = json!("rejected");
    e["rejection_reason"] = json!(HOSTILE_REASON);
    e["accuracy_m"] = Value::Null;
    e["strategy_index"] = Value::Null;
    e["tool_version"] = json!(HOSTILE_TOOL);
    let (s, _, _) = store(dir.path(), &[e]);
    let h = dir.path().join("x.html");
    ok(&report(&s, &h, "html", &[]));
    let html = std::fs::read_to_string(&h).unwrap();
    self_contained(&html);
    assert!(!html.contains("<b>bold"), "raw markup in the HTML");
    assert!(!html.contains("<img"), "raw markup in the HTML");
    assert!(
        html.contains("&lt;script&gt;alert(&quot;reason&quot;)&lt;&#x2f;script&gt;"),
        "the reason, escaped, in the table"
    );
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "the tool, escaped"
    );
    let m = dir.path().join("x.md");
    ok(&report(&s, &m, "md", &[]));
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(
        !md.contains("<script") && !md.contains("<img") && !md.contains("<b>"),
        "{md}"
    );
    assert!(
        md.contains(
            "&lt;script&gt;alert(\"reason\")&lt;/script&gt; &amp; 'quoted' &lt;b&gt;bold&lt;/b&gt;"
        ),
        "{md}"
    );
    let j = dir.path().join("x.json");
    ok(&report(&s, &j, "json", &[]));
    let r = read_json(&j);
    let sec = run_section(&r, "run-hostile");
    assert_eq!(
        sec["rejection_reasons"]["items"][0]["value"],
        HOSTILE_REASON
    );
    assert_eq!(sec["tools"]["items"][0]["value"], HOSTILE_TOOL);
    assert_eq!(sec["unsealed_commits"], 1);
}

#[test]
fn sections_and_lists_are_capped_and_the_rest_counted() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("store").display().to_string();
    // 30 runs of 2 events; run-00 has 24 distinct rejection reasons.
    let mut rows = Vec::new();
    for r in 0..30 {
        for i in 0..2 {
            rows.push(sample::event(
                r * 10 + i + 1,
                &format!("run-{r:02}"),
                "EPSG:4326",
            ));
        }
    }
    for k in 0..24 {
        let mut e = sample::event(1000 + k, "run-00", "EPSG:4326");
        e["outcome"] = json!("rejected");
        e["rejection_reason"] = json!(format!("reason-{k:02}"));
        e["accuracy_m"] = Value::Null;
        e["strategy_index"] = Value::Null;
        rows.push(e);
    }
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&rows)).unwrap();
    ok(&run(&[
        "append",
        "--store",
        &s,
        "--input",
        input.to_str().unwrap(),
    ]));
    ok(&run(&["seal", "--store", &s]));
    let j = dir.path().join("c.json");
    ok(&report(&s, &j, "json", &[]));
    let r = read_json(&j);
    assert_eq!(
        (r["runs"]["total"].as_u64(), r["runs"]["shown"].as_u64()),
        (Some(30), Some(25))
    );
    assert_eq!(
        r["runs"]["omitted"],
        json!({"runs": 5, "commits": 5, "events": 10})
    );
    let sec = run_section(&r, "run-00");
    let reasons = &sec["rejection_reasons"];
    assert_eq!(reasons["items"].as_array().unwrap().len(), 20);
    assert_eq!(
        (
            reasons["other_values"].as_u64(),
            reasons["other_count"].as_u64()
        ),
        (Some(4), Some(4))
    );
    assert_eq!(reasons["total"], 24);

    // --run-id picks the sections; a run without commits is said to be missing.
    let j2 = dir.path().join("c2.json");
    ok(&report(
        &s,
        &j2,
        "json",
        &["--run-id", "run-29", "--run-id", "run-99"],
    ));
    let r2 = read_json(&j2);
    let ids: Vec<&str> = r2["runs"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["run-29"]);
    assert_eq!(r2["runs"]["not_found"], json!(["run-99"]));
    assert_eq!(r2["runs"]["omitted"]["runs"], 29);
}

#[test]
fn refusals_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _, _) = store(dir.path(), &[]);
    let out = dir.path().join("r.html");
    let code = |o: std::process::Output| (o.status.code(), text(&o).1);
    let (c, err) = code(report(&s, &out, "pdf", &[]));
    assert_eq!(c, Some(2));
    assert!(
        err.contains("report format \"pdf\": expected html, md or json"),
        "{err}"
    );
    let (c, err) = code(report(&s, &out, "html", &["--expect-head", "abc"]));
    assert_eq!(c, Some(2));
    assert!(
        err.contains("--expect-head \"abc\" is not a sha256"),
        "{err}"
    );
    let empty = dir.path().join("nothing-here");
    let (c, _) = code(report(empty.to_str().unwrap(), &out, "html", &[]));
    assert_eq!(c, Some(2));
    assert!(!empty.exists(), "a report created a store");
    let (c, err) = code(report(&s, &out, "html", &["--as-of-seal", "7"]));
    assert_eq!(c, Some(2));
    assert!(err.contains("--as-of-seal 7"), "{err}");
    assert!(!out.exists());
    // An existing file is refused without --force, replaced with it.
    std::fs::write(&out, "keep").unwrap();
    let (c, err) = code(report(&s, &out, "html", &[]));
    assert_eq!(c, Some(2));
    assert!(err.contains("pass --force"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    assert_eq!(
        report(&s, &out, "html", &["--force"]).status.code(),
        Some(0)
    );
}

/// Issue 34: a value from the store holding ESC or a bidirectional control was written raw
/// in Markdown (and U+202E reordered a planted name in HTML), and a long value was never
/// cut (a 17 KB value made a 400 MB page). Both formats show controls as `\u{…}` and cut
/// long values with a marker; JSON keeps them whole.
#[test]
fn controls_are_shown_escaped_and_long_values_cut_in_markdown_and_html() {
    const CONTROLS: &str = "red\u{1b}[31m\u{202e}gpj.exe\u{2066}x\u{85}";
    let long = "L".repeat(17_000);
    let dir = tempfile::tempdir().unwrap();
    let mut events = Vec::new();
    for (seq, reason) in [(1000, CONTROLS), (1001, long.as_str())] {
        let mut e = sample::event(seq, "run-hostile", "EPSG:4326");
        e["outcome"] = json!("rejected");
        e["rejection_reason"] = json!(reason);
        e["accuracy_m"] = Value::Null;
        e["strategy_index"] = Value::Null;
        events.push(e);
    }
    let (s, _, _) = store(dir.path(), &events);
    for format in ["md", "html"] {
        let out = dir.path().join(format!("x.{format}"));
        ok(&report(&s, &out, format, &[]));
        let written = std::fs::read_to_string(&out).unwrap();
        for c in ['\u{1b}', '\u{202e}', '\u{2066}', '\u{85}'] {
            assert!(!written.contains(c), "{format}: {c:?} written raw");
        }
        for shown in ["u{1b}", "u{202e}", "u{2066}", "u{85}"] {
            assert!(written.contains(shown), "{format}: no {shown}");
        }
        assert!(
            written.contains("… (17000 bytes in all, cut)"),
            "{format}: the long value is not cut"
        );
        assert!(
            !written.contains(&"L".repeat(513)),
            "{format}: over 512 characters"
        );
        assert!(written.len() < 1 << 20, "{format}: {} bytes", written.len());
    }
    let out = dir.path().join("x.json");
    ok(&report(&s, &out, "json", &[]));
    let r = read_json(&out);
    let reasons = run_section(&r, "run-hostile")["rejection_reasons"]["items"].to_string();
    assert!(reasons.contains(&long), "JSON keeps the value whole");
}

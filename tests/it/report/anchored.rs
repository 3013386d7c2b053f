//! Every output says what was checked: `verify` (text and `--json`) and the report (HTML,
//! Markdown, JSON) state each anchor given and its outcome; without anchors the verdict
//! says it is only internally consistent, and the report's green CLEAN banner is kept for
//! an anchored pass.

use std::path::Path;

use serde_json::Value;

use crate::support::{lineage, sample, text};

const UNANCHORED: &str =
    "internally consistent; no head, key or witness given: a rewrite or a cut-off would not show";

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

/// A store of 30 events sealed unsigned (seal 1), 30 more sealed signed (seal 2): (store,
/// public key, head of seal 2, key id).
fn store(dir: &Path) -> (String, String, String, String) {
    let s = dir.join("store").display().to_string();
    let key = dir.join("k");
    let made = ok(&["keygen", "--out", key.to_str().unwrap()]);
    let key_id = made.rsplit("key id ").next().unwrap().trim().to_string();
    let rows = sample::events(60);
    for (i, chunk) in rows.chunks(30).enumerate() {
        let input = dir.join("in.ndjson");
        std::fs::write(&input, sample::ndjson(chunk)).unwrap();
        ok(&["append", "--store", &s, "--input", input.to_str().unwrap()]);
        let k = dir.join("k.key");
        let mut seal = vec!["seal", "--store", &s];
        if i == 1 {
            seal.extend(["--signing-key", k.to_str().unwrap()]);
        }
        ok(&seal);
    }
    let b = std::fs::read(Path::new(&s).join("_lineage/seals/00000000000000000002.json")).unwrap();
    let head = lineage_store::internal::digest::sha256_hex(&b);
    (s, dir.join("k.pub").display().to_string(), head, key_id)
}

#[test]
fn verify_states_each_anchor_and_an_unanchored_verdict_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (s, key, head, key_id) = store(dir.path());
    let anchors = [
        "--expect-head",
        &head,
        "--public-key",
        &key,
        "--signed-from",
        "2",
    ];
    let mut a = vec!["verify", "--store", &s];
    a.extend(anchors);
    let out = ok(&a);
    let head_line = format!(
        "anchor head held: expected head {}… found at seal 2, the newest",
        &head[..12]
    );
    let key_line = format!(
        "anchor keys held: seal 2 signed by key {key_id} (given); 1 unsigned before seal 2 (allowed)"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&head_line.as_str()), "{out}");
    assert!(lines.contains(&key_line.as_str()), "{out}");
    assert_eq!(
        lines.last(),
        Some(&"clean: no problems (anchored: head, keys held)"),
        "{out}"
    );
    assert!(!out.contains(UNANCHORED));

    a.push("--json");
    let j: Value = serde_json::from_str(&ok(&a)).unwrap();
    assert_eq!(j["anchored"], true);
    assert_eq!(j["anchors"][0]["anchor"], "head");
    assert_eq!(j["anchors"][0]["held"], true);
    assert_eq!(j["anchors"][1]["anchor"], "keys");
    assert_eq!(
        j["anchors"][1]["statement"],
        key_line.strip_prefix("anchor keys held: ").unwrap()
    );
    assert_eq!(j["anchors"].as_array().unwrap().len(), 2);

    // Without anchors: the same store, the verdict says what it is worth.
    let bare = ok(&["verify", "--store", &s]);
    assert_eq!(
        bare.lines().last().unwrap(),
        format!("clean: no problems ({UNANCHORED})"),
        "{bare}"
    );
    assert!(!bare.contains("anchor head"));
    let j: Value = serde_json::from_str(&ok(&["verify", "--store", &s, "--json"])).unwrap();
    assert_eq!(j["anchored"], false);
    assert_eq!(j["anchors"], serde_json::json!([]));
    assert_eq!(j["anchoring"], UNANCHORED);

    // A failed anchor: the line says so, and the verdict names it.
    let wrong = "0".repeat(64);
    let o = lineage(&["verify", "--store", &s, "--expect-head", &wrong], None);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "anchor head FAILED: expected head 000000000000… not found (the newest seal is 2)"
        ),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap()
            .ends_with("(anchors failed: head)"),
        "{out}"
    );
}

#[test]
fn the_report_keeps_its_clean_banner_for_an_anchored_pass() {
    let dir = tempfile::tempdir().unwrap();
    let (s, key, head, key_id) = store(dir.path());
    let report = |format: &str, anchors: &[&str]| -> String {
        let out = dir.path().join(format!("r.{format}"));
        let mut a = vec![
            "report",
            "--store",
            &s,
            "--force",
            "--format",
            format,
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend_from_slice(anchors);
        ok(&a);
        std::fs::read_to_string(out).unwrap()
    };
    let anchors = [
        "--expect-head",
        &head,
        "--public-key",
        &key,
        "--signed-from",
        "2",
    ];
    let found = format!("expected head {}… found at seal 2, the newest", &head[..12]);
    let signed = format!("seal 2 signed by key {key_id} (given)");

    let html = report("html", &anchors);
    assert!(html.contains("<header class=\"banner clean\""), "{html}");
    assert!(html.contains("✔ CLEAN"));
    assert!(
        html.contains(&format!("✔ anchor head held: {found}")),
        "{html}"
    );
    assert!(
        html.contains(&format!("✔ anchor keys held: {signed}")),
        "{html}"
    );
    let bare = report("html", &[]);
    assert!(
        bare.contains("<header class=\"banner unanchored\""),
        "{bare}"
    );
    assert!(!bare.contains("✔ CLEAN") && bare.contains("◌ CONSISTENT, NOT ANCHORED"));
    assert!(bare.contains(&format!("<li>◌ {UNANCHORED}</li>")), "{bare}");

    let md = report("md", &anchors);
    assert!(md.contains("**CLEAN**"), "{md}");
    assert!(md.contains(&format!("- anchor head held: {found}")), "{md}");
    let bare = report("md", &[]);
    assert!(
        bare.contains("**CONSISTENT, NOT ANCHORED**") && !bare.contains("**CLEAN**"),
        "{bare}"
    );
    assert!(bare.contains(&format!("- {UNANCHORED}")), "{bare}");

    let j: Value = serde_json::from_str(&report("json", &anchors)).unwrap();
    assert_eq!(j["verdict"]["anchored"], true);
    assert_eq!(j["verdict"]["anchors"][0]["statement"], found.as_str());
    assert_eq!(j["verdict"]["anchors"][1]["anchor"], "keys");
    // One store id: the sha256 of seal 1, as the witness names the store.
    let seal1 =
        std::fs::read(Path::new(&s).join("_lineage/seals/00000000000000000001.json")).unwrap();
    assert_eq!(
        j["identity"]["store_id"],
        lineage_store::internal::digest::sha256_hex(&seal1).as_str()
    );
    let uuid = j["identity"]["identity_object"].as_str().unwrap();
    assert_eq!(uuid.len(), 36, "{uuid}");
    let j: Value = serde_json::from_str(&report("json", &[])).unwrap();
    assert_eq!(j["verdict"]["anchored"], false);
    assert_eq!(j["verdict"]["anchoring"], UNANCHORED);
    assert_eq!(j["verdict"]["clean"], true);
}

#[test]
fn verify_since_seal_counts_signed_seals_as_what_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let (s, key, head, key_id) = store(dir.path());
    let seals_line = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("seals: "))
            .unwrap_or_else(|| panic!("{out}"))
            .split(", ")
            .next()
            .unwrap()
            .to_string()
    };
    let full = ok(&["verify", "--store", &s]);
    assert_eq!(seals_line(&full), "seals: 2 (1 signed)", "{full}");
    let since = ok(&[
        "verify",
        "--store",
        &s,
        "--since-seal",
        "--expect-head",
        &head,
        "--public-key",
        &key,
        "--signed-from",
        "2",
    ]);
    assert_eq!(
        seals_line(&since),
        "seals: 2 (1 of seals 2-2 signed; seals before 2 not read)",
        "{since}"
    );
    assert!(
        since.contains(&format!(
            "anchor keys held: of the seals from 2 on: seal 2 signed by key {key_id} (given)"
        )),
        "{since}"
    );
    assert!(
        since.contains(&format!(
            "anchor head held: expected head {}… found at seal 2, the newest",
            &head[..12]
        )),
        "{since}"
    );
}

//! `lineage compact` on local disk through the CLI, and `files`/`scan` preferring the
//! compacted parts (`--originals` forcing the originals).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{self, sample};

pub(super) struct Disk {
    pub(super) dir: tempfile::TempDir,
    pub(super) path: String,
}

pub(super) fn ok(o: &std::process::Output) -> String {
    let (out, err) = support::text(o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    out
}

impl Disk {
    /// 80 events of two runs in commits of at most 6 rows, sealed.
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store").display().to_string();
        let d = Disk { dir, path };
        let input = d.dir.path().join("in.ndjson");
        std::fs::write(&input, sample::ndjson(&sample::events(80))).unwrap();
        ok(&d.run(&[
            "append",
            "--input",
            input.to_str().unwrap(),
            "--batch-rows",
            "6",
        ]));
        ok(&d.run(&["seal"]));
        d
    }

    pub(super) fn run(&self, args: &[&str]) -> std::process::Output {
        let mut a = vec![args[0], "--store", &self.path];
        a.extend_from_slice(&args[1..]);
        support::lineage(&a, None)
    }

    pub(super) fn json_lines(&self, args: &[&str]) -> Vec<Value> {
        ok(&self.run(args))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub(super) fn objects(&self) -> BTreeMap<String, String> {
        sample::snapshot(std::path::Path::new(&self.path))
    }

    /// What `**/*.parquet` finds under the store.
    fn glob(&self) -> Vec<String> {
        self.objects()
            .into_keys()
            .filter(|k| k.ends_with(".parquet"))
            .collect()
    }

    fn sorted_scan(&self, extra: &[&str]) -> Vec<String> {
        let out = self.dir.path().join(format!("scan{}.ndjson", extra.len()));
        let mut a = vec!["scan", "--out", out.to_str().unwrap()];
        a.extend_from_slice(extra);
        ok(&self.run(&a));
        let mut lines: Vec<String> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        std::fs::remove_file(out).unwrap();
        lines
    }
}

fn rows(lines: &[Value]) -> u64 {
    lines.iter().map(|l| l["rows"].as_u64().unwrap()).sum()
}

#[test]
fn compact_then_files_and_scan_read_the_compacted_parts_with_the_same_rows() {
    let d = Disk::new();
    let glob_before = d.glob();
    let originals = d.json_lines(&["files", "--json"]);
    assert_eq!(rows(&originals), 80);
    let scan_before = d.sorted_scan(&[]);
    assert_eq!(scan_before.len(), 80);
    // A dry run publishes nothing.
    let before = d.objects();
    let plan = d.json_lines(&["compact", "--target-rows", "20", "--dry-run", "--json"]);
    assert!(!plan[0]["compactions"].as_array().unwrap().is_empty());
    assert!(plan[0]["seal"].is_null());
    assert_eq!(d.objects(), before);
    // Compact.
    let done = d.json_lines(&["compact", "--target-rows", "20", "--json"]);
    let made = done[0]["compactions"].as_array().unwrap();
    assert_eq!(done[0]["seal"]["seq"], 2);
    assert!(!made.is_empty());
    // The originals are all still there, unchanged, and still all a glob sees.
    let after = d.objects();
    for (k, v) in &before {
        assert_eq!(after.get(k), Some(v), "{k} changed or vanished");
    }
    assert_eq!(d.glob(), glob_before);
    // files: fewer parts, the same rows; compacted ones first checked against records.
    let files = d.json_lines(&["files", "--json"]);
    assert_eq!(rows(&files), 80);
    assert!(
        files.len() < originals.len(),
        "{} vs {}",
        files.len(),
        originals.len()
    );
    let compacted: Vec<&Value> = files
        .iter()
        .filter(|l| l["location"].as_str().unwrap().ends_with(".compacted"))
        .collect();
    assert_eq!(compacted.len(), made.len());
    let forced = d.json_lines(&["files", "--json", "--originals"]);
    assert_eq!(forced.len(), originals.len());
    // scan: the same multiset of rows either way.
    assert_eq!(d.sorted_scan(&[]), scan_before);
    assert_eq!(d.sorted_scan(&["--originals"]), scan_before);
    // verify's summary counts the compacted parts it checked (issue 35).
    let v = ok(&d.run(&["verify"]));
    let counted = format!(", and {} compacted parts (sha256 and rows", made.len());
    assert!(v.contains(&counted), "{v}");
    let j: Value = serde_json::from_str(&ok(&d.run(&["verify", "--json"]))).unwrap();
    assert_eq!(j["compacted_parts_ok"].as_u64(), Some(made.len() as u64));
    // Nothing more to do: nothing published.
    let o = ok(&d.run(&["compact", "--target-rows", "20"]));
    assert!(o.contains("nothing to compact as of seal 2"), "{o}");
    assert_eq!(d.objects(), after);
    // A changed compacted part: files refuses it by name, --originals still reads.
    let loc = compacted[0]["location"].as_str().unwrap().to_string();
    let mut b = std::fs::read(&loc).unwrap();
    let i = b.len() / 2;
    b[i] ^= 1;
    std::fs::write(&loc, b).unwrap();
    let o = d.run(&["files"]);
    assert_eq!(o.status.code(), Some(1));
    let (_, err) = support::text(&o);
    assert!(err.contains(loc.rsplit('/').next().unwrap()), "{err}");
    ok(&d.run(&["files", "--originals"]));
    let v = d.run(&["verify"]);
    assert_eq!(v.status.code(), Some(1));
    assert!(support::text(&v).0.contains("bad_compacted_part"));
}

#[test]
fn on_a_signed_store_compact_signs_its_seal_or_refuses_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    ok(&support::lineage(
        &["keygen", "--out", prefix.to_str().unwrap()],
        None,
    ));
    let key = prefix.with_extension("key").display().to_string();
    let public = prefix.with_extension("pub").display().to_string();
    let d = Disk::new();
    ok(&d.run(&["seal", "--allow-empty", "--signing-key", &key]));
    let before = d.objects();
    let o = d.run(&["compact", "--target-rows", "20"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        support::text(&o).1.contains("--signing-key"),
        "{:?}",
        support::text(&o)
    );
    assert_eq!(d.objects(), before, "nothing published");
    let done = d.json_lines(&[
        "compact",
        "--target-rows",
        "20",
        "--signing-key",
        &key,
        "--json",
    ]);
    assert_eq!(done[0]["seal"]["seq"], 3);
    assert!(done[0]["seal"]["key_id"].is_string());
    ok(&d.run(&["verify", "--public-key", &public, "--signed-from", "2"]));
}

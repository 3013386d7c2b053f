//! `lineage files`: exactly the parts of the commits sealed up to a seal.

use std::collections::BTreeSet;

use super::{ok, plant, Store, ALL_ROWS, SEAL1_ROWS, SEAL2_ROWS};

fn rows(lines: &[serde_json::Value]) -> u64 {
    lines.iter().map(|l| l["rows"].as_u64().unwrap()).sum()
}

#[test]
fn files_lists_the_parts_of_the_sealed_commits_as_of_each_seal() {
    let s = Store::new();
    let newest = s.files_json(&[]);
    assert_eq!(
        rows(&newest),
        SEAL2_ROWS,
        "seals 1..2, not the unsealed commits"
    );
    assert!(newest.iter().all(|l| l["sealed_by"].as_u64().is_some()));
    let first = s.files_json(&["--as-of-seal", "1"]);
    assert_eq!(rows(&first), SEAL1_ROWS);
    assert!(first.iter().all(|l| l["sealed_by"] == 1));
    let all = s.files_json(&["--include-unsealed"]);
    assert_eq!(rows(&all), ALL_ROWS);
    assert_eq!(
        all.len(),
        s.part_files().len(),
        "every part of the store, once"
    );
    // Plain lines are the locations: absolute paths of files that exist.
    let plain = ok(&s.run(&["files"]));
    let locs: Vec<&str> = plain.lines().collect();
    assert_eq!(locs.len(), newest.len());
    for (l, j) in locs.iter().zip(&newest) {
        assert_eq!(*l, j["location"].as_str().unwrap());
        assert!(std::path::Path::new(l).is_absolute() && std::path::Path::new(l).exists());
        let bytes = std::fs::read(l).unwrap();
        assert_eq!(bytes.len() as u64, j["size_bytes"].as_u64().unwrap());
        assert_eq!(
            lineage_store::internal::digest::sha256_hex(&bytes),
            j["sha256"].as_str().unwrap()
        );
    }
    // Filters.
    let a = s.files_json(&["--run-id", "run-a"]);
    assert!(!a.is_empty() && a.iter().all(|l| l["run_id"] == "run-a"));
    let b = s.files_json(&["--run-id", "run-b"]);
    assert_eq!(rows(&a) + rows(&b), SEAL2_ROWS);
    let t = s.files_json(&["--target-crs", "EPSG:3857"]);
    assert!(!t.is_empty() && t.iter().all(|l| l["target_crs"] == "EPSG:3857"));
    // A seal that does not exist is a usage error.
    let o = s.run(&["files", "--as-of-seal", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(crate::support::text(&o).1.contains("seals are 1..=2"));
}

#[test]
fn a_planted_part_is_not_listed() {
    let s = Store::new();
    let before = ok(&s.run(&["files", "--include-unsealed"]));
    let (_, part) = s.sealed_commit();
    plant(&s, &part);
    assert_eq!(ok(&s.run(&["files", "--include-unsealed"])), before);
    let listed: BTreeSet<&str> = before.lines().collect();
    assert_eq!(
        listed.len(),
        s.part_files().len() - 1,
        "the planted copy is on disk"
    );
}

#[test]
fn a_store_without_a_seal_has_nothing_to_vouch_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let input = dir.path().join("in.ndjson");
    std::fs::write(
        &input,
        crate::support::sample::ndjson(&crate::support::sample::events(5)),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    ok(&crate::support::lineage(
        &["append", "--store", p, "--input", input.to_str().unwrap()],
        None,
    ));
    let o = crate::support::lineage(&["files", "--store", p], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(crate::support::text(&o).1.contains("has no seal"));
    let o = crate::support::lineage(&["files", "--store", p, "--include-unsealed"], None);
    assert_eq!(ok(&o).lines().count(), 3, "one part per run and target CRS");
}

/// The README's synopsis of `files` and `scan` names every flag their `--help` lists
/// (`--endpoint-url`, which every command takes, is said once above the synopsis).
#[test]
fn the_readme_synopsis_lists_every_flag_of_files_and_scan() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let synopsis = &readme[readme.find("## The CLI").unwrap()..];
    for cmd in ["files", "scan"] {
        let line = synopsis
            .lines()
            .find(|l| l.starts_with(&format!("lineage {cmd} ")))
            .unwrap_or_else(|| panic!("no synopsis of {cmd}"));
        let help = ok(&crate::support::lineage(&[cmd, "--help"], None));
        for flag in help
            .split_whitespace()
            .filter(|w| w.starts_with("--"))
            .map(|w| w.trim_end_matches([',', '.', ')', ':']))
        {
            if ["--help", "--endpoint-url"].contains(&flag)
                || !flag[2..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-')
            {
                continue;
            }
            assert!(
                line.contains(flag),
                "README's `lineage {cmd}` lacks {flag}: {line}"
            );
        }
    }
}

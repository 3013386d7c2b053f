//! Sample events as JSON, and store snapshots (the design note's append-only check).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// One valid event as JSON.
pub fn event(i: i64, run_id: &str, target_crs: &str) -> Value {
    let rejected = i % 10 == 7;
    json!({
        "event_id": format!("00000000-0000-4000-8000-{:012}", i),
        "run_id": run_id,
        "sequence": i,
        "event_time_utc": format!("2026-07-13T06:{:02}:{:02}.{:06}Z", (i / 60) % 60, i % 60, i * 7 % 1_000_000),
        "stage": "reproject",
        "event_type": "crs_transform",
        "feature_id": format!("buildings:{:08}", i),
        "source_crs": "EPSG:4258",
        "target_crs": target_crs,
        "outcome": if rejected { "rejected" } else { "transformed" },
        "strategy_index": if rejected { Value::Null } else { json!(i % 4) },
        "accuracy_m": if rejected { Value::Null } else { json!(0.25 * (i % 8) as f64) },
        "rejection_reason": if rejected { json!("outside_area_of_use") } else { Value::Null },
        "tool_version": "geostd/2.4.1",
        "audit_tag": "iso19115-li:2026Q3",
    })
}

/// `n` events spread over two runs and two CRS spellings each.
pub fn events(n: i64) -> Vec<Value> {
    (1..=n)
        .map(|i| {
            let run = if i % 2 == 0 { "run-a" } else { "run-b" };
            let crs = if i % 3 == 0 {
                "urn:ogc:def:crs:EPSG::3857"
            } else {
                "EPSG:4326"
            };
            event(i, run, crs)
        })
        .collect()
}

/// NDJSON text of events.
pub fn ndjson(rows: &[Value]) -> String {
    rows.iter().map(|r| r.to_string() + "\n").collect()
}

/// Every file under `root` (relative path → sha256), temps included.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, hex::encode(Sha256::digest(std::fs::read(&p).unwrap())));
            }
        }
    }
    walk(root, root, &mut out);
    out
}

/// The design note's append-only check: every file that existed is unchanged and exactly
/// `new_parts` part files (and as many pointers) were added. Returns the added keys.
pub fn assert_append_only(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
    new_parts: usize,
) -> Vec<String> {
    for (k, d) in before {
        match after.get(k) {
            None => panic!("prior file vanished: {k}"),
            Some(d2) => assert_eq!(d, d2, "prior file mutated: {k}"),
        }
    }
    let added: Vec<String> = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .cloned()
        .collect();
    let parts = added.iter().filter(|k| k.ends_with(".parquet")).count();
    let pointers = added
        .iter()
        .filter(|k| k.starts_with("_lineage/commits/"))
        .count();
    assert_eq!(parts, new_parts, "new part files: {added:?}");
    assert_eq!(pointers, new_parts, "new pointers: {added:?}");
    assert!(
        !after.keys().any(|k| k.ends_with(".tmp")),
        "temp file left: {after:?}"
    );
    added
}

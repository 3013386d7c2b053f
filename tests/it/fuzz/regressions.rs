//! Fuzz findings as ordinary tests: every seed and every input a fuzzer found
//! (`fuzz/seeds/<target>/`, `fuzz/regressions/<target>/`) replayed through the same checks
//! the fuzz targets run (`fuzz/fuzz_targets/checks.rs`), plus one named test per finding
//! saying what it was and what the fixed behaviour is. The fuzzers themselves run outside
//! CI (`just fuzz`, scripts/fuzz.sh).

#[path = "../../../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

/// Every file under `fuzz/<kind>/<target>/`.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut out = Vec::new();
    for kind in ["seeds", "regressions"] {
        let Ok(dir) = std::fs::read_dir(root.join(kind).join(target)) else {
            continue;
        };
        for e in dir {
            let p = e.unwrap().path();
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// Replay every stored input of `target` through `check`; at least the seeds exist.
fn replay(target: &str, check: fn(&[u8])) {
    let all = inputs(target);
    assert!(!all.is_empty(), "no seeds for {target}");
    for (name, data) in all {
        let r = std::panic::catch_unwind(|| check(&data));
        assert!(r.is_ok(), "{target}: {name} fails its check");
    }
}

#[test]
fn ndjson_reader_inputs() {
    replay("ndjson_reader", checks::ndjson);
}

#[test]
fn csv_reader_inputs() {
    replay("csv_reader", checks::csv);
}

#[test]
fn crs_canonicalize_inputs() {
    replay("crs_canonicalize", checks::crs);
}

#[test]
fn pointer_parse_inputs() {
    replay("pointer_parse", checks::pointer);
}

#[test]
fn page_headers_inputs() {
    replay("page_headers", checks::pages);
}

#[test]
fn footer_check_inputs() {
    replay("footer_check", checks::footer);
}

#[test]
fn seal_parse_inputs() {
    replay("seal_parse", checks::seal);
}

#[test]
fn proof_verify_inputs() {
    replay("proof_verify", checks::proof);
}

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

#[test]
fn arrow_reader_inputs() {
    replay("arrow_reader", checks::arrow);
}

#[test]
fn parquet_reader_inputs() {
    replay("parquet_reader", checks::parquet);
}

/// A short deterministic fuzz run for the binary readers (issue 34, item 10): `count`
/// mutations of each seed of `target` (a flipped bit, a byte set to 0xff, an aligned
/// 8-byte length set to an extreme, a truncation), each through `check`, none may panic.
fn mutations(target: &str, check: fn(&[u8]), count: usize) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (name, seed) in inputs(target) {
        for k in 0..count {
            let mut d = seed.clone();
            let at = (next() as usize) % d.len();
            match k % 4 {
                0 => d[at] ^= 1 << (next() % 8),
                1 => d[at] = 0xff,
                2 => {
                    let v = [i64::MAX, -1, 1 << 40, i64::from(i32::MAX)][(next() % 4) as usize];
                    let start = at & !7;
                    let end = (start + 8).min(d.len());
                    d[start..end].copy_from_slice(&v.to_le_bytes()[..end - start]);
                }
                _ => d.truncate(at),
            }
            let r = std::panic::catch_unwind(|| check(&d));
            assert!(r.is_ok(), "{target}: mutation {k} of {name} panics");
        }
    }
}

#[test]
fn arrow_reader_mutations_never_panic() {
    mutations("arrow_reader", checks::arrow, 1500);
}

#[test]
fn parquet_reader_mutations_never_panic() {
    mutations("parquet_reader", checks::parquet, 600);
}

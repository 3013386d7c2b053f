//! WARN lines: no colour codes into a pipe or a file, and, printed during `verify`, no
//! advice to run `lineage verify`.

use crate::support::{lineage, sample, text};

#[test]
fn warnings_during_verify_are_plain_text_and_worded_for_verify() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s").display().to_string();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&sample::events(20))).unwrap();
    let o = lineage(
        &["append", "--store", &s, "--input", input.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(
        lineage(&["seal", "--store", &s], None).status.code(),
        Some(0)
    );
    // Cut a sealed part in half: its footer is gone, so rebuilding its Delta add warns.
    let part = sample::snapshot(std::path::Path::new(&s))
        .into_keys()
        .find(|k| k.starts_with("run_id=") && k.ends_with(".parquet"))
        .unwrap();
    let p = dir.path().join("s").join(&part);
    let b = std::fs::read(&p).unwrap();
    std::fs::write(&p, &b[..b.len() / 2]).unwrap();
    let o = lineage(&["verify", "--store", &s], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        err.contains("WARN") && err.contains("part footer unreadable"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no ANSI colour codes into a pipe: {err:?}"
    );
    assert!(
        !err.contains("lineage verify"),
        "verify does not tell to run verify: {err}"
    );
}

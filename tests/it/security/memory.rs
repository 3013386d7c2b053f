//! Issue 34: memory bombs in small inputs. Each case runs `lineage` as a child and holds
//! its peak resident set size (`getrusage(RUSAGE_CHILDREN)`, see
//! [`peak_rss_kib`](crate::security::sizes::peak_rss_kib)) under 512 MiB, whatever the
//! input's size, as well as its exit code and what it names.

use std::io::Write;

use crate::security::sizes::peak_rss_kib;
use crate::support::text;

/// The bound on every command's peak memory in these cases, in KiB.
const PEAK_KIB: i64 = 512 * 1024;

/// `lines` copies of `line` in a file of `dir`.
fn repeated(dir: &std::path::Path, name: &str, line: &str, lines: usize) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for _ in 0..lines {
        f.write_all(line.as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
    }
    f.flush().unwrap();
    path
}

/// A refused NDJSON input of bad lines only: exit 2, the first errors listed (line 1's
/// first field first), the rest counted, and the peak memory under [`PEAK_KIB`].
fn refused_flat(args: &[&str], first: &str, total: u64) {
    let (o, peak) = peak_rss_kib(args);
    let (out, err) = text(&o);
    eprintln!("{args:?}: peak RSS {peak} KiB");
    assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
    let listed: Vec<&str> = err.lines().filter(|l| l.starts_with("error: line ")).collect();
    assert_eq!(listed.len(), 20, "{err}");
    assert!(listed[0].contains(first), "{err}");
    assert!(
        err.contains(&format!("more errors ({total} in all)")),
        "{args:?}: {err}"
    );
    assert!(peak < PEAK_KIB, "{args:?}: peak RSS {peak} KiB");
}

/// Item 4: every line of `{}` misses 15 fields. A million of them (3 MB) made `check` hold
/// every error of an 8 MiB block at once (3.7 GB); errors are handed on batch by batch
/// and the collector keeps `--max-errors` of them, so memory is flat in the bad lines.
#[test]
fn a_million_lines_of_empty_objects_are_checked_in_flat_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let input = repeated(tmp.path(), "empty.ndjson", "{}", 1_000_000);
    refused_flat(
        &["check", "--input", input.to_str().unwrap()],
        "line 1, field `event_id`: is missing",
        15_000_000,
    );
}

/// Item 4, `append` (the Lambda handler's path too): 300,000 lines of `{"a":1}` (an
/// unknown field and 15 missing each) cost about 1 GB before; nothing is published.
#[test]
fn lines_of_unknown_fields_are_refused_by_append_in_flat_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let input = repeated(tmp.path(), "a.ndjson", "{\"a\":1}", 300_000);
    let store = tmp.path().join("lake");
    refused_flat(
        &[
            "append",
            "--store",
            store.to_str().unwrap(),
            "--input",
            input.to_str().unwrap(),
        ],
        "line 1, field `event_id`: is missing",
        4_800_000,
    );
    assert!(!store.exists() || std::fs::read_dir(&store).unwrap().next().is_none());
}

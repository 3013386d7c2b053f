//! Hostile input sizes (issue 26, item 11): the longest CSV record and Arrow or Parquet
//! value (`--max-line-bytes`, as the NDJSON line), and standard input refused as soon as
//! a line passes the limit, without reading (spooling) the rest.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};

use crate::support::bad_input::{contract_batch, csv_header, csv_row, ipc_file, parquet, with};
use crate::support::{lineage, text};

/// `check --max-line-bytes 1000` and `append` with it of `file`: refused (exit 2) with
/// `want` on standard error, nothing published; the default limit accepts it.
fn refused_under_1000_bytes(dir: &std::path::Path, file: &std::path::Path, want: &str) {
    let store = dir.join("lake");
    let (s, f) = (store.to_str().unwrap(), file.to_str().unwrap());
    for cmd in [&["check"][..], &["append", "--store", s][..]] {
        let args = [cmd, &["--max-line-bytes", "1000", "--input", f][..]].concat();
        let o = lineage(&args, None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!store.exists() || std::fs::read_dir(&store).unwrap().next().is_none());
    let o = lineage(&["check", "--input", f], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn a_csv_record_longer_than_the_limit_is_refused_naming_the_line_it_starts_on() {
    let tmp = tempfile::tempdir().unwrap();
    // Line 3 is a record of two lines (a quoted newline) and 5,000 bytes in all (`csv_row`
    // takes one pair of quotes off).
    let long = format!("\"\"{}\n{}\"\"", "x".repeat(2500), "y".repeat(2500));
    let input = format!(
        "{}\n{}\n{}\n{}\n",
        csv_header(),
        csv_row(1, &[]),
        csv_row(2, &[("audit_tag", &long)]),
        csv_row(3, &[])
    );
    let file = tmp.path().join("in.csv");
    std::fs::write(&file, input).unwrap();
    refused_under_1000_bytes(
        tmp.path(),
        &file,
        "line 3: longer than 1000 bytes, the longest record accepted (--max-line-bytes raises it)",
    );
}

#[test]
fn an_arrow_or_parquet_value_longer_than_the_limit_is_refused_naming_row_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let b = contract_batch(3);
    let tags: Vec<String> = vec!["t".into(), "x".repeat(5000), "t".into()];
    let b = with(
        &b,
        "audit_tag",
        Arc::new(StringArray::from(tags)) as ArrayRef,
    );
    for (name, bytes) in [("in.arrow", ipc_file(&b)), ("in.parquet", parquet(&b))] {
        let file = tmp.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        refused_under_1000_bytes(
            tmp.path(),
            &file,
            "row 2, field `audit_tag`: a value of 5000 bytes, longer than 1000, the longest value accepted (--max-line-bytes raises it)",
        );
    }
}

/// Feed `lineage check --max-line-bytes 1000 ARGS` standard input that never ends a line
/// (up to 256 MiB), and return its output and how many bytes it took before it stopped
/// reading.
fn endless_line(args: &[&str], first: &[u8]) -> (std::process::Output, u64) {
    let mut a = vec!["--max-line-bytes", "1000"];
    a.extend_from_slice(args);
    endless(&a, first, vec![b'a'; 64 << 10])
}

/// `lineage check ARGS` fed `first`, then `chunk` again and again (up to 256 MiB) until it
/// stops reading; its output and how many bytes it took.
fn endless(args: &[&str], first: &[u8], chunk: Vec<u8>) -> (std::process::Output, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lineage"))
        .arg("check")
        .args(args)
        .env_remove("LINEAGE_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let first = first.to_vec();
    let feeder = std::thread::spawn(move || {
        let mut written = 0u64;
        if pipe.write_all(&first).is_err() {
            return written;
        }
        while written < 256 << 20 {
            match pipe.write(&chunk) {
                Ok(n) => written += n as u64,
                Err(_) => break, // the reader went away
            }
        }
        written
    });
    let o = child.wait_with_output().unwrap();
    (o, feeder.join().unwrap())
}

#[test]
fn standard_input_is_refused_at_the_first_long_line_without_reading_the_rest() {
    let header = format!("{}\n{}\n\"", csv_header(), csv_row(1, &[]));
    for (args, first, line, what) in [
        (&[][..], &b""[..], 1, "line"),
        (&["--format", "ndjson"][..], &b"{}\n{}\n"[..], 3, "line"),
        (&["--format", "csv"][..], header.as_bytes(), 3, "record"),
    ] {
        let (o, written) = endless_line(args, first);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "line {line}: longer than 1000 bytes, the longest {what} accepted"
            )),
            "{args:?}: {err}"
        );
        // Stopped at the limit: what it took is what its buffers and the pipe's hold.
        assert!(written < 16 << 20, "{args:?}: read {written} bytes");
    }
}

#[test]
fn standard_input_with_no_json_object_is_refused_without_reading_the_rest() {
    // Issue 26: 3 GB of garbage were spooled before line 1 was refused. Short lines that
    // never end, none a JSON object: refused after the first 8 MiB, as NDJSON and by
    // default (a bad first line alone is judged with the rest: every error at once).
    for args in [&[][..], &["--format", "ndjson"][..]] {
        let (o, written) = endless(args, b"", b"garbage, not json\n".repeat(4096));
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no line of its first 8 MiB starts a JSON object"),
            "{args:?}: {err}"
        );
        assert!(written < 16 << 20, "{args:?}: read {written} bytes");
    }
}

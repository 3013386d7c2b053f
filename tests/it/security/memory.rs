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
    let listed: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("error: line "))
        .collect();
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

/// A Parquet file of one string column `name`: `rows` rows of one `value_len`-byte value,
/// dictionary-encoded (the dictionary holds it once, every data page only indices), with
/// no Arrow schema stored, so readers decode it as plain strings: one value per row.
/// Built from a dictionary array: the test never holds the decoded column.
fn one_value_repeated(name: &str, rows: usize, value_len: usize) -> Vec<u8> {
    use std::sync::Arc;
    let keys = arrow_array::Int32Array::from(vec![0; rows]);
    let values = arrow_array::StringArray::from(vec!["v".repeat(value_len)]);
    let dict = arrow_array::DictionaryArray::new(keys, Arc::new(values));
    let b = arrow_array::RecordBatch::try_from_iter([(name, Arc::new(dict) as _)]).unwrap();
    let opts =
        parquet::arrow::arrow_writer::ArrowWriterOptions::new().with_skip_arrow_metadata(true);
    let mut w =
        parquet::arrow::ArrowWriter::try_new_with_options(Vec::new(), b.schema(), opts).unwrap();
    w.write(&b).unwrap();
    w.into_inner().unwrap()
}

/// Item 5: a checkpoint of a few kilobytes, 300,000 rows sharing one 10 KB dictionary
/// value, made `verify` decode 3 GB (4.3 GB peak). Its decoded bound is read from its page
/// headers and dictionary first: it is named, not decoded.
#[tokio::test]
async fn a_planted_checkpoint_repeating_one_long_value_is_named_without_decoding_it() {
    let (_tmp, root, _) = crate::security::sizes::sealed_local_store().await;
    let store = root.to_str().unwrap();
    let version = std::fs::read_dir(root.join("_delta_log"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".json")?.parse::<u64>().ok()
        })
        .min()
        .expect("a Delta version after the seal");
    let key = lineage_store::internal::keys::delta_checkpoint_key(version);
    let bomb = one_value_repeated("add", 300_000, 10_000);
    assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
    std::fs::write(root.join(&key), &bomb).unwrap();
    let (o, peak) = peak_rss_kib(&["verify", "--store", store, "--grace", "0s"]);
    let (out, err) = text(&o);
    eprintln!(
        "verify with a {}-byte checkpoint bomb: peak RSS {peak} KiB",
        bomb.len()
    );
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.contains(&format!("bad_delta_checkpoint: {key}"))
                && l.contains("decodes to more than the 268435456 bytes")
                && l.contains("--max-decoded-bytes")),
        "{out}"
    );
    assert!(peak < PEAK_KIB, "peak RSS {peak} KiB");
}

/// `part` (one of ours) made a bomb: `rows` copies of its first row, `audit_tag` one
/// `value_len`-byte dictionary value for all of them; its footer's metadata (commit id,
/// contract version, Arrow schema: `audit_tag` is a string) kept.
fn bomb_part(part: &[u8], rows: usize, value_len: usize) -> Vec<u8> {
    use std::sync::Arc;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::copy_from_slice(part),
    )
    .unwrap();
    let kv = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned();
    let first = reader.build().unwrap().next().unwrap().unwrap();
    let zeros = arrow_array::UInt32Array::from(vec![0u32; rows]);
    let mut fields = Vec::new();
    let mut cols: Vec<arrow_array::ArrayRef> = Vec::new();
    for (f, c) in first.schema().fields().iter().zip(first.columns()) {
        if f.name() == "audit_tag" {
            let keys = arrow_array::Int32Array::from(vec![0; rows]);
            let values = arrow_array::StringArray::from(vec!["t".repeat(value_len)]);
            let d = arrow_array::DictionaryArray::new(keys, Arc::new(values));
            let ty = arrow_array::Array::data_type(&d).clone();
            fields.push(arrow_schema::Field::new(f.name(), ty, true));
            cols.push(Arc::new(d));
        } else {
            fields.push(f.as_ref().clone());
            cols.push(arrow_select::take::take(c, &zeros, None).unwrap());
        }
    }
    let b = arrow_array::RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), cols)
        .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(kv)
        .build();
    let opts = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
        .with_properties(props)
        .with_skip_arrow_metadata(true);
    let mut w =
        parquet::arrow::ArrowWriter::try_new_with_options(Vec::new(), b.schema(), opts).unwrap();
    w.write(&b).unwrap();
    w.into_inner().unwrap()
}

/// Item 6: a crafted part of a few tens of kilobytes (100,000 rows sharing one 20 KB
/// `audit_tag`) under its pointer's digests: `verify` called it clean while `scan` and
/// `export` decoded gigabytes. Its decoded bound is over `--max-decoded-bytes`: `verify`
/// names it, and every reader refuses it (exit 1) without decoding it.
#[tokio::test]
async fn a_part_decoding_past_the_bound_is_named_by_verify_and_refused_by_its_readers() {
    let (tmp, root, ptrs) = crate::security::symlinks::local_store().await;
    let store = root.to_str().unwrap();
    let p = &ptrs[0];
    let bomb = bomb_part(
        &std::fs::read(root.join(&p.part_path)).unwrap(),
        100_000,
        20_000,
    );
    assert!(bomb.len() < 128 << 10, "{} bytes", bomb.len());
    std::fs::write(root.join(&p.part_path), &bomb).unwrap();
    let mut q = p.clone();
    q.size_bytes = bomb.len() as u64;
    q.sha256 = lineage_store::internal::encode::sha256_hex(&bomb);
    q.blake3 = None;
    q.row_count = 100_000;
    let pk = lineage_store::internal::keys::pointer_key(&p.run_id, &p.commit_id);
    std::fs::write(root.join(&pk), q.to_bytes().unwrap()).unwrap();
    // Sealed as any commit is (the readers read what the seals vouch for).
    let o = crate::support::lineage(&["seal", "--store", store], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let out_dir = tmp.path().join("out");
    let out = out_dir.to_str().unwrap();
    for args in [
        &["verify", "--store", store, "--grace", "0s"][..],
        &["scan", "--store", store, "--out", "-"][..],
        &["export", "openlineage", "--store", store, "--out", out][..],
    ] {
        let (o, peak) = peak_rss_kib(args);
        let (stdout, err) = text(&o);
        eprintln!("{args:?}: peak RSS {peak} KiB");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stdout}{err}");
        let told = format!("{stdout}{err}");
        assert!(
            told.lines().any(|l| l.contains(&p.part_path)
                && l.contains("decodes to more than the 268435456 bytes")),
            "{args:?}: {told}"
        );
        assert!(peak < PEAK_KIB, "{args:?}: peak RSS {peak} KiB");
    }
}

/// Low item: `replicate` read a pointer grown to 128 MiB whole before refusing it; it is
/// refused by its size, not read (nor its part copied), the other commits copied.
#[tokio::test]
async fn replicate_refuses_an_oversized_pointer_by_its_size_without_reading_it() {
    let (tmp, root, ptrs) = crate::security::symlinks::local_store().await;
    let store = root.to_str().unwrap();
    let replica = tmp.path().join("replica");
    let pk = lineage_store::internal::keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(root.join(&pk))
        .unwrap();
    f.set_len(128 << 20).unwrap();
    drop(f);
    let (o, peak) = peak_rss_kib(&[
        "replicate",
        "--from",
        store,
        "--to",
        replica.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    eprintln!("replicate with a 128 MiB pointer: peak RSS {peak} KiB");
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        format!("{out}{err}").lines().any(|l| l.contains(&pk)
            && l.contains("134217728 bytes; a pointer is at most 65536 (not read)")),
        "{out}{err}"
    );
    assert!(!replica.join(&pk).exists());
    assert!(
        replica.join(&ptrs[1].part_path).exists(),
        "the other commits are copied"
    );
    assert!(peak < 96 * 1024, "peak RSS {peak} KiB");
}

/// Low item: a 300 MB Delta version with no seal was read and parsed whole (a 325 MB one
/// cost `verify` 2.95 GB) though "no seal N" needs none of it: it is named, not read.
#[tokio::test]
async fn a_delta_version_without_a_seal_is_named_without_being_read() {
    let (_tmp, root, _) = crate::security::sizes::sealed_local_store().await;
    let store = root.to_str().unwrap();
    let (_, baseline) = peak_rss_kib(&["verify", "--store", store, "--grace", "0s"]);
    let next = std::fs::read_dir(root.join("_delta_log"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".json")?.parse::<u64>().ok()
        })
        .max()
        .expect("a Delta version after the seal")
        + 1;
    let key = lineage_store::internal::keys::delta_version_key(next);
    let f = std::fs::File::create(root.join(&key)).unwrap();
    f.set_len(300 << 20).unwrap();
    drop(f);
    let (o, peak) = peak_rss_kib(&["verify", "--store", store, "--grace", "0s"]);
    let (out, err) = text(&o);
    eprintln!("verify with a 300 MB version and no seal: peak RSS {peak} KiB ({baseline} clean)");
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.contains(&key) && l.contains(&format!("version {next} has no seal {next}"))),
        "{out}"
    );
    assert!(
        peak < baseline + 32 * 1024,
        "peak RSS {peak} KiB, {baseline} clean"
    );
}

//! What each fuzz target checks, shared with `tests/it/fuzz/regressions.rs`, which replays the
//! seeds and every input a fuzzer ever found through these same functions (so a finding,
//! once fixed, stays fixed in the ordinary test suite).
//!
//! Every function takes arbitrary bytes, must never panic except on a broken promise, and
//! asserts what acceptance promises.

#![allow(dead_code)]

use arrow_array::cast::AsArray;
use lineage_store::contract::col;
use lineage_store::internal::input::parse_validated;
use lineage_store::verify_proof;
use lineage_store::Format;
use lineage_store::Pointer;
use lineage_store::Proof;
use lineage_store::Seal;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sha2::{Digest, Sha256};

/// NDJSON reader into the contract.
pub fn ndjson(data: &[u8]) {
    reader(data, Format::Ndjson);
}

/// CSV reader into the contract.
pub fn csv(data: &[u8]) {
    reader(data, Format::Csv);
}

/// Arrow IPC reader (file or stream) into the contract.
pub fn arrow(data: &[u8]) {
    reader(data, Format::Arrow);
}

/// Parquet reader into the contract.
pub fn parquet(data: &[u8]) {
    reader(data, Format::Parquet);
}

/// Parse and validate `data`; what is accepted is in the contract (safe run_id,
/// canonical target_crs) and goes all the way into Parquet parts. Refusals are errors
/// with a message, never panics.
fn reader(data: &[u8], format: Format) {
    let batches = match parse_validated(bytes::Bytes::copy_from_slice(data), format) {
        Ok(b) => b,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let schema = lineage_store::contract::schema();
    for b in &batches {
        assert_eq!(
            b.schema().fields(),
            schema.fields(),
            "accepted batch not in the contract"
        );
        let run = b.column(col::RUN_ID).as_string::<i32>();
        let crs = b.column(col::TARGET_CRS).as_string::<i32>();
        for i in 0..b.num_rows() {
            assert!(
                lineage_store::internal::keys::check_run_id(run.value(i)).is_ok(),
                "accepted unsafe run_id {:?}",
                run.value(i)
            );
            let c = crs.value(i);
            assert_eq!(
                lineage_store::crs::canonicalize(c).as_deref(),
                Ok(c),
                "target_crs not canonical"
            );
        }
    }
    // Everything accepted must encode into parts (what `append` does next), and the part
    // must read back with exactly the values accepted (bit for bit: floats, timestamps).
    // (Each accepted batch as one part: the encoder does not care how rows are grouped.)
    for batch in &batches {
        let part =
            lineage_store::internal::encode::encode(batch, "01900000-0000-7000-8000-000000000000")
                .expect("an accepted flush must encode");
        let decoded: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(part.bytes.clone())
            .expect("our part is Parquet")
            .build()
            .expect("reader")
            .collect::<Result<_, _>>()
            .expect("our part decodes");
        let mut row = 0;
        for d in &decoded {
            for (c, col) in d.columns().iter().enumerate() {
                let want = batch.column(c).slice(row, d.num_rows());
                assert_eq!(
                    col.to_data(),
                    want.to_data(),
                    "column {c} changed in the part"
                );
            }
            row += d.num_rows();
        }
        assert_eq!(row, batch.num_rows(), "rows lost in the part");
    }
}

/// The CRS canonicaliser: what it accepts is `EPSG:<digits>` without leading zeros, and
/// canonicalising the canonical form gives it back unchanged.
pub fn crs(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = lineage_store::crs::canonicalize(s) {
        let code = c
            .strip_prefix("EPSG:")
            .expect("canonical form starts with EPSG:");
        assert!(
            !code.is_empty() && code.bytes().all(|b| b.is_ascii_digit()),
            "{c:?}"
        );
        assert!(!code.starts_with('0'), "leading zero in {c:?}");
        assert_eq!(
            lineage_store::crs::canonicalize(&c).as_deref(),
            Ok(c.as_str())
        );
    }
}

/// The pointer parser: a parsed pointer serialises and parses back equal.
pub fn pointer(data: &[u8]) {
    if let Ok(p) = Pointer::from_bytes("fuzz.json", data) {
        let again = Pointer::from_bytes("fuzz.json", &p.to_bytes().expect("serialise"))
            .expect("a pointer we wrote must parse");
        assert_eq!(p, again);
        // Keys are built and classified from what a pointer says: an accepted pointer is
        // within its size limit and every field within the rules of input, so no key built
        // from it can leave the store.
        assert!(data.len() <= lineage_store::internal::pointer::MAX_POINTER_BYTES);
        assert!(p.field_problem().is_none());
        assert!(lineage_store::internal::keys::check_run_id(&p.run_id).is_ok());
        assert_eq!(
            lineage_store::crs::canonicalize(&p.target_crs).as_deref(),
            Ok(p.target_crs.as_str())
        );
        assert!(matches!(
            lineage_store::internal::keys::classify(&p.part_path),
            lineage_store::internal::keys::KeyKind::Part { .. }
        ));
        assert!(!p
            .part_path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == ".."));
    }
}

/// The Parquet footer check: any footer that decodes is judged without panicking, and one
/// it passes holds together (the file's rows are its row groups', each column chunk holds
/// its row group's rows, at most 8 rows a byte of the part).
pub fn footer(data: &[u8]) {
    let Ok(meta) = parquet::file::metadata::ParquetMetaDataReader::decode_metadata(
        &bytes::Bytes::copy_from_slice(data),
    ) else {
        return;
    };
    let size = data.len() as u64;
    if lineage_store::internal::part::row_count_problem(&meta, size).is_none() {
        let sum: i128 = meta
            .row_groups()
            .iter()
            .map(|g| i128::from(g.num_rows()))
            .sum();
        assert_eq!(sum, i128::from(meta.file_metadata().num_rows()));
        assert!(sum >= 0 && sum <= i128::from(size) * 8);
        for g in meta.row_groups() {
            assert!(g.columns().iter().all(|c| c.num_values() == g.num_rows()));
        }
    }
}

/// The seal parser: a parsed seal serialises and parses back equal; its signature check
/// (against the key it names) answers, never panics.
pub fn seal(data: &[u8]) {
    if let Ok(s) = Seal::from_bytes("fuzz.json", data) {
        let again = Seal::from_bytes("fuzz.json", &s.to_bytes().expect("serialise"))
            .expect("a seal we wrote must parse");
        assert_eq!(s, again);
        let _ = s.signed_message();
        let _ = s.check_signature(None);
        if let Some(k) = &s.public_key {
            let _ = lineage_store::internal::signing::parse_public_key(k);
        }
    }
}

/// The proof verifier, against the digest of the proof's own seal (so checks beyond the
/// first gate run) and against a digest of the input: never panics; a proof accepted
/// names its commit and seal, and no proof is accepted against another head.
pub fn proof(data: &[u8]) {
    let Ok(proof) = serde_json::from_slice::<Proof>(data) else {
        return;
    };
    let own_head = hex::encode(Sha256::digest(proof.seal.as_bytes()));
    if let Ok(Ok(summary)) = verify_proof(&proof, &own_head, None, None) {
        assert_eq!(summary.commit_id, proof.commit_id);
        let seal =
            Seal::from_bytes("s", proof.seal.as_bytes()).expect("an accepted proof's seal parses");
        assert_eq!(summary.seal_seq, seal.seq);
    }
    let other = hex::encode(Sha256::digest(data));
    if other != own_head {
        assert!(
            !matches!(verify_proof(&proof, &other, None, None), Ok(Ok(_))),
            "accepted against a head that is not its seal's digest"
        );
    }
}

/// The page-header walk (`--max-page-bytes`): never panics on any column chunk; a chunk
/// accepted under a cap is accepted under any larger one, and one refused under no cap
/// at all is refused under every cap.
pub fn pages(data: &[u8]) {
    use lineage_store::internal::pages::check_pages;
    let unlimited = check_pages(data, u64::MAX);
    let capped = check_pages(data, 1 << 20);
    if capped.is_ok() {
        assert!(
            unlimited.is_ok(),
            "accepted under 1 MiB, refused without a cap"
        );
    }
    if unlimited.is_err() {
        assert!(
            capped.is_err(),
            "refused without a cap, accepted under 1 MiB"
        );
    }
}

//! A footer that lies about its rows: `verify` refuses it, `repair` never adopts it.

use std::path::Path;

use bytes::Bytes;
use lineage_store::internal::keys;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind as K;
use parquet::file::metadata::{
    FileMetaData, ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter,
};

use crate::security::symlinks::local_store;
use crate::support::audit::{later, of_kind};

/// The part at `path` with its footer rewritten: every column chunk's `num_values` set to
/// `file_rows`, and with `all` every row group's `num_rows` too (the file's `num_rows` is
/// then their sum, as the metadata writer computes it).
fn patch_footer(path: &Path, file_rows: i64, all: bool) {
    let bytes = std::fs::read(path).unwrap();
    let n = bytes.len();
    let len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let start = n - 8 - len;
    let meta =
        ParquetMetaDataReader::decode_metadata(&Bytes::copy_from_slice(&bytes[start..n - 8]))
            .unwrap();
    let f = meta.file_metadata();
    let file = FileMetaData::new(
        f.version(),
        file_rows,
        f.created_by().map(str::to_string),
        f.key_value_metadata().cloned(),
        f.schema_descr_ptr(),
        f.column_orders().cloned(),
    );
    let groups = meta
        .row_groups()
        .iter()
        .map(|rg| {
            let cols = rg
                .columns()
                .iter()
                .map(|c| {
                    c.clone()
                        .into_builder()
                        .set_num_values(file_rows)
                        .build()
                        .unwrap()
                })
                .collect();
            let rows = if all { file_rows } else { rg.num_rows() };
            rg.clone()
                .into_builder()
                .set_num_rows(rows)
                .set_column_metadata(cols)
                .build()
                .unwrap()
        })
        .collect();
    let patched = ParquetMetaData::new(file, groups);
    let mut out = bytes[..start].to_vec();
    ParquetMetaDataWriter::new(&mut out, &patched)
        .finish()
        .unwrap();
    std::fs::write(path, out).unwrap();
}

#[tokio::test]
async fn a_footer_claiming_2_pow_62_rows_is_refused_by_verify_and_never_adopted() {
    for all in [false, true] {
        let (_tmp, root, ptrs) = local_store().await;
        // An orphan: its pointer and index entry gone (as if the writer died), its footer
        // lying.
        let p = &ptrs[0];
        std::fs::remove_file(root.join(keys::pointer_key(&p.run_id, &p.commit_id))).unwrap();
        std::fs::remove_file(root.join(lineage_store::internal::index::key_of(p).unwrap()))
            .unwrap();
        patch_footer(&root.join(&p.part_path), 1 << 62, all);
        // And a committed part whose footer lies, its pointer edited to agree (size,
        // digest, rows) as a writer who can write both would.
        let q = &ptrs[1];
        patch_footer(&root.join(&q.part_path), 1 << 62, all);
        let part = std::fs::read(root.join(&q.part_path)).unwrap();
        let qk = root.join(keys::pointer_key(&q.run_id, &q.commit_id));
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&qk).unwrap()).unwrap();
        v["size_bytes"] = part.len().into();
        v["sha256"] = lineage_store::internal::encode::sha256_hex(&part).into();
        v.as_object_mut().unwrap().remove("blake3");
        v["row_count"] = (1u64 << 62).into();
        std::fs::write(&qk, serde_json::to_vec_pretty(&v).unwrap()).unwrap();

        let store = PosixPublisher::new(&root);
        let r = lineage_store::verify_with(&store, &later()).await.unwrap();
        let malformed = of_kind(&r, K::MalformedPart);
        assert_eq!(malformed.len(), 1, "all={all}: {:#?}", r.problems);
        assert_eq!(malformed[0].0, p.part_path);
        let want = if all {
            "cannot fit in"
        } else {
            "holds 4611686018427387904 values"
        };
        assert!(malformed[0].1.contains(want), "{}", malformed[0].1);
        let footer = of_kind(&r, K::FooterMismatch);
        assert!(
            footer
                .iter()
                .any(|(k, d)| k == &q.part_path && d.contains(want)),
            "all={all}: {:#?}",
            r.problems
        );
        assert!(r.rows < 1 << 40, "{}", r.rows);

        let out = lineage_store::repair(
            &store,
            chrono::Utc::now() + chrono::Duration::days(1),
            chrono::Duration::minutes(15),
            &lineage_store::Adoption::parts([p.part_path.clone()]),
            false,
        )
        .await
        .unwrap();
        assert_eq!(out.adopted, Vec::<String>::new(), "all={all}");
        assert!(
            out.refused
                .iter()
                .any(|(k, why)| k == &p.part_path && why.contains(want)),
            "all={all}: {:?}",
            out.refused
        );
        assert!(!root
            .join(keys::pointer_key(&p.run_id, &p.commit_id))
            .exists());
    }
}

/// Issue 34, 7: a footer that overstates its rows within every bound it is held to (its
/// row groups, column chunks and 8 rows a byte agree) is caught by decoding: `repair`
/// refuses to adopt it, and `verify` names it even with a pointer edited to agree.
#[tokio::test]
async fn a_footer_overstating_its_rows_plausibly_is_caught_by_decoding() {
    let (_tmp, root, ptrs) = local_store().await;
    let (p, q) = (&ptrs[0], &ptrs[1]);
    std::fs::remove_file(root.join(keys::pointer_key(&p.run_id, &p.commit_id))).unwrap();
    std::fs::remove_file(root.join(lineage_store::internal::index::key_of(p).unwrap())).unwrap();
    let mut claims = Vec::new();
    for x in [p, q] {
        let path = root.join(&x.part_path);
        // Within 8 rows a byte of the patched file (the probe's was 38,600 rows in 4.8 KB).
        let claim = 30_000;
        patch_footer(&path, claim, true);
        assert!(std::fs::metadata(&path).unwrap().len() as i64 * 8 >= claim);
        claims.push(claim);
    }
    let part = std::fs::read(root.join(&q.part_path)).unwrap();
    let qk = root.join(keys::pointer_key(&q.run_id, &q.commit_id));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&qk).unwrap()).unwrap();
    v["size_bytes"] = part.len().into();
    v["sha256"] = lineage_store::internal::encode::sha256_hex(&part).into();
    v.as_object_mut().unwrap().remove("blake3");
    v["row_count"] = claims[1].into();
    std::fs::write(&qk, serde_json::to_vec_pretty(&v).unwrap()).unwrap();

    let store = PosixPublisher::new(&root);
    let out = lineage_store::repair(
        &store,
        chrono::Utc::now() + chrono::Duration::days(1),
        chrono::Duration::minutes(15),
        &lineage_store::Adoption::parts([p.part_path.clone(), q.part_path.clone()]),
        false,
    )
    .await
    .unwrap();
    assert_eq!(out.adopted, Vec::<String>::new());
    let real = |x: &lineage_store::Pointer, claim: i64| {
        format!(
            "claims {claim} rows, but its pages hold {} (decoded)",
            x.row_count
        )
    };
    assert!(
        out.refused
            .iter()
            .any(|(k, why)| k == &p.part_path && why.contains(&real(p, claims[0]))),
        "{:?}",
        out.refused
    );
    let r = lineage_store::verify_with(&store, &later()).await.unwrap();
    let malformed = of_kind(&r, K::MalformedPart);
    assert_eq!(malformed.len(), 1, "{:#?}", r.problems);
    assert!(
        malformed[0].1.contains(&real(p, claims[0])),
        "{}",
        malformed[0].1
    );
    let footer = of_kind(&r, K::FooterMismatch);
    assert_eq!(footer.len(), 1, "{:#?}", r.problems);
    assert_eq!(footer[0].0, q.part_path);
    assert!(footer[0].1.contains(&real(q, claims[1])), "{}", footer[0].1);
    // The rows the report counts are the real ones, the lying commit's not among them.
    assert!(r.rows < 60, "{}", r.rows);
}

//! The Iceberg metadata belongs to a location (its paths are absolute): `replicate` writes
//! the destination's own, byte for byte the source's but for the location; `verify` (full
//! and `--since-seal`) names metadata that records another location
//! (`iceberg_location_mismatch`: a copy holding its source's metadata), and `replicate`
//! refuses to build on it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::keys::{iceberg_metadata_key, ICEBERG_PREFIX};
use lineage_store::replicate::{replicate, IcebergWritten, ReplicateOptions};
use lineage_store::{verify_with, ErrorKind, PosixPublisher, ProblemKind as K, VerifyOptions};

use super::{metadata, objects, seal};
use crate::support::audit::{append, later, of_kind, verify_later};

fn since(seq: Option<u64>) -> VerifyOptions {
    VerifyOptions {
        since_seal: Some(seq),
        ..later()
    }
}

/// `objects` with every occurrence of `from` replaced by `to` (both the same length, so
/// the Avro length prefixes stay as they are).
fn moved(objects: &BTreeMap<String, Bytes>, from: &str, to: &str) -> BTreeMap<String, Bytes> {
    assert_eq!(from.len(), to.len());
    objects
        .iter()
        .map(|(k, b)| {
            let mut v = b.to_vec();
            let (f, t) = (from.as_bytes(), to.as_bytes());
            let mut i = 0;
            while i + f.len() <= v.len() {
                if &v[i..i + f.len()] == f {
                    v[i..i + f.len()].copy_from_slice(t);
                    i += f.len();
                } else {
                    i += 1;
                }
            }
            (k.clone(), Bytes::from(v))
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

#[tokio::test]
async fn replicate_writes_the_destinations_own_metadata_and_verify_names_a_copy_of_the_sources() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (src_root, dst_root, cpy_root) = (root.join("src"), root.join("dst"), root.join("cpy"));
    let src = Arc::new(PosixPublisher::new(&src_root));
    let dst = Arc::new(PosixPublisher::new(&dst_root));
    // Seals 1 and 2 with `--iceberg`, seal 3 without: the replica mirrors that.
    append(src.clone(), 200, 50, 1).await;
    seal(src.as_ref(), true).await;
    append(src.clone(), 80, 40, 2).await;
    seal(src.as_ref(), true).await;
    append(src.clone(), 30, 30, 3).await;
    seal(src.as_ref(), false).await;
    let at_src = objects(src.as_ref()).await;
    assert_eq!(at_src.len(), 6);

    let r = replicate(src.clone(), dst.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    assert!(r.is_complete(), "{r:?}");
    let (s, d) = (src_root.to_str().unwrap(), dst_root.to_str().unwrap());
    assert_eq!(
        r.iceberg,
        Some(IcebergWritten {
            seq: 2,
            metadata_location: format!("{d}/{}", iceberg_metadata_key(2)),
            seals_written: 2,
        })
    );
    assert!(!r.skipped.iter().any(|n| n.key.starts_with(ICEBERG_PREFIX)));
    // Byte for byte the source's objects but for the location; every path the replica's.
    let at_dst = objects(dst.as_ref()).await;
    assert_eq!(at_dst, moved(&at_src, s, d));
    assert!(!at_dst
        .values()
        .any(|b| b.windows(s.len()).any(|w| w == s.as_bytes())));
    assert_eq!(metadata(dst.as_ref(), 2).await.location, d);
    assert!(verify_later(dst.as_ref()).await.is_clean());
    let r2 = verify_with(dst.as_ref(), &since(Some(1))).await.unwrap();
    assert!(r2.is_clean(), "{:?}", r2.problems);
    // Again: nothing to write, nothing changed.
    let again = replicate(src.clone(), dst.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    assert_eq!(again.iceberg.unwrap().seals_written, 0);
    assert_eq!(objects(dst.as_ref()).await, at_dst);
    // Through a symlink to the replica: the same location.
    let link = root.join("lnk");
    std::os::unix::fs::symlink(&dst_root, &link).unwrap();
    let via = PosixPublisher::new(&link);
    assert!(verify_later(&via).await.is_clean());

    // A copy of the source made by other means holds the source's metadata: named, by
    // a full and by a since verify, and a replicate to it builds nothing on it.
    copy_dir(&src_root, &cpy_root);
    let cpy = Arc::new(PosixPublisher::new(&cpy_root));
    let c = cpy_root.to_str().unwrap();
    for opts in [later(), since(None), since(Some(1))] {
        let r = verify_with(cpy.as_ref(), &opts).await.unwrap();
        let named: Vec<(K, String)> = r.problems.iter().map(|p| (p.kind, p.key.clone())).collect();
        assert_eq!(
            named,
            [(K::IcebergLocationMismatch, iceberg_metadata_key(2))],
            "{:?}",
            r.problems
        );
        let why = &of_kind(&r, K::IcebergLocationMismatch)[0].1;
        assert!(
            why.contains(&format!(
                "records the table at {s}, but this store is at {c}"
            )),
            "{why}"
        );
    }
    let err = replicate(src.clone(), cpy.clone(), ReplicateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains(&iceberg_metadata_key(2)), "{err}");
    assert!(
        err.to_string().contains(&format!("its location: {s}")),
        "{err}"
    );
}

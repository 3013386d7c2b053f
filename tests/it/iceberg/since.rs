//! `verify --since-seal SEQ` covers what is new under `_iceberg/`: each tampering with the
//! objects of seals SEQ and later, and anything planted there, named on its own store;
//! objects of seals before SEQ are a full verify's.

use bytes::Bytes;
use lineage_store::internal::iceberg::manifest::{
    manifest_bytes, manifest_entries, ManifestHeader,
};
use lineage_store::internal::iceberg::metadata::sync_marker;
use lineage_store::internal::keys::{
    iceberg_manifest_key, iceberg_manifest_list_key, iceberg_metadata_key,
};
use lineage_store::{
    verify_with, AtomicPublisher, MemoryPublisher, ProblemKind as K, VerifyOptions,
};

use super::{metadata, sealed_store};
use crate::support::audit::later;

fn since(seq: Option<u64>) -> VerifyOptions {
    VerifyOptions {
        since_seal: Some(seq),
        ..later()
    }
}

/// The (kind, key) problems a since verify from `seq` names, sorted.
async fn named(store: &dyn AtomicPublisher, seq: Option<u64>) -> Vec<(K, String)> {
    let r = verify_with(store, &since(seq)).await.unwrap();
    let mut got: Vec<(K, String)> = r.problems.iter().map(|p| (p.kind, p.key.clone())).collect();
    got.sort();
    got
}

/// Manifest `k` rewritten with its entries changed by `edit` (a valid manifest of ours
/// but for the entries).
async fn edit_manifest(
    mem: &MemoryPublisher,
    k: u64,
    edit: impl FnOnce(&mut Vec<lineage_store::internal::iceberg::manifest::Entry>),
) {
    let m = metadata(mem, k).await;
    let schema = m.schema().unwrap().to_json();
    let spec = m.partition_specs[0].fields_json();
    let header = ManifestHeader {
        schema_json: &schema,
        schema_id: 0,
        spec_fields_json: &spec,
    };
    let key = iceberg_manifest_key(k);
    let mut entries = manifest_entries(&mem.get(&key).await.unwrap().unwrap()).unwrap();
    edit(&mut entries);
    let bytes = manifest_bytes(&header, &entries, sync_marker(&m.table_uuid, &key));
    mem.tamper_put(&key, Bytes::from(bytes));
}

#[tokio::test]
async fn verify_since_seal_names_each_tampering_of_the_new_iceberg_objects() {
    // Seals 1-3 with `--iceberg` (seal 3 adds nothing, so writes no manifest).
    let (mem, _) = sealed_store().await;
    for seq in [None, Some(1), Some(2)] {
        assert_eq!(named(mem.as_ref(), seq).await, [], "since {seq:?}");
    }
    let hint = "_iceberg/metadata/version-hint.text".to_string();
    let v3 = iceberg_metadata_key(3);
    type Tamper = Box<dyn Fn(&MemoryPublisher)>;
    // What, the tampering, and what a since verify of the newest seal names.
    type Case = (&'static str, Tamper, Vec<(K, String)>);
    let cases: Vec<Case> = vec![
        (
            "a planted version-hint.text",
            Box::new(|m| {
                m.tamper_put(
                    "_iceberg/metadata/version-hint.text",
                    Bytes::from_static(b"3"),
                )
            }),
            vec![(K::UnknownIcebergObject, hint.clone())],
        ),
        (
            "a planted data file",
            Box::new(|m| m.tamper_put("_iceberg/data/stash.parquet", Bytes::from_static(b"PAR1"))),
            vec![(
                K::UnknownIcebergObject,
                "_iceberg/data/stash.parquet".into(),
            )],
        ),
        (
            "a manifest planted for the newest seal, which writes none",
            Box::new(|m| m.tamper_put(&iceberg_manifest_key(3), Bytes::from_static(b"Obj\x01"))),
            vec![(K::UnknownIcebergObject, iceberg_manifest_key(3))],
        ),
        (
            "the metadata of a seal the chain lacks",
            Box::new(|m| m.tamper_put(&iceberg_metadata_key(4), Bytes::from_static(b"{}"))),
            vec![(K::BadIcebergObject, iceberg_metadata_key(4))],
        ),
        (
            "the newest manifest list removed",
            Box::new(|m| {
                assert!(m.tamper_remove(&iceberg_manifest_list_key(3)));
            }),
            vec![(K::MissingIcebergObject, iceberg_manifest_list_key(3))],
        ),
    ];
    for (what, tamper, want) in cases {
        let (mem, _) = sealed_store().await;
        tamper(mem.as_ref());
        assert_eq!(named(mem.as_ref(), None).await, want, "{what}");
    }

    // The newest metadata file with another record count and seal digest.
    let (mem, _) = sealed_store().await;
    let mut m3 = metadata(mem.as_ref(), 3).await;
    m3.snapshots[2]
        .summary
        .insert("total-records".into(), "1".into());
    mem.tamper_put(&v3, Bytes::from(m3.to_bytes()));
    assert_eq!(
        named(mem.as_ref(), None).await,
        [(K::BadIcebergObject, v3.clone())]
    );
    let r = verify_with(mem.as_ref(), &since(None)).await.unwrap();
    assert!(
        r.problems[0]
            .detail
            .to_string()
            .contains("`snapshots` (snapshot ids 3)"),
        "{:?}",
        r.problems
    );

    // Seal 2's manifest adds a planted part, or drops a sealed one: named from seal 2 on
    // (built on seal 1's stored table), not by a since verify of seal 3 alone, always by a
    // full verify.
    for drop in [false, true] {
        let (mem, _) = sealed_store().await;
        edit_manifest(mem.as_ref(), 2, |e| {
            if drop {
                e.pop();
            } else {
                let mut extra = e[0].clone();
                extra.file.path =
                    "memory://run_id=x/target_crs=EPSG:4326/part-planted.parquet".into();
                e.push(extra);
            }
        })
        .await;
        let key = iceberg_manifest_key(2);
        assert_eq!(
            named(mem.as_ref(), Some(2)).await,
            [(K::BadIcebergObject, key.clone())]
        );
        let r = verify_with(mem.as_ref(), &since(Some(2))).await.unwrap();
        let why = r.problems[0].detail.to_string();
        let says = if drop {
            "which the seal adds"
        } else {
            "part-planted.parquet, which no seal adds"
        };
        assert!(why.contains(says), "{why}");
        assert_eq!(named(mem.as_ref(), Some(3)).await, []);
        let full = verify_with(mem.as_ref(), &later()).await.unwrap();
        assert!(full
            .problems
            .iter()
            .any(|p| p.kind == K::BadIcebergObject && p.key == key));
    }

    // Seal 1's metadata gone: a since verify of seal 2 rebuilds from seal 1 and still
    // names a changed newer object (not the missing older one: a full verify does).
    let (mem, _) = sealed_store().await;
    assert!(mem.tamper_remove(&iceberg_metadata_key(1)));
    let mut m2 = metadata(mem.as_ref(), 2).await;
    m2.snapshots[1]
        .summary
        .insert("added-records".into(), "7".into());
    mem.tamper_put(&iceberg_metadata_key(2), Bytes::from(m2.to_bytes()));
    assert_eq!(
        named(mem.as_ref(), Some(2)).await,
        [(K::BadIcebergObject, iceberg_metadata_key(2))]
    );
}

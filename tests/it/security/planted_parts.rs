//! Issue 34, 1: a file under a sealed commit's part name in another `target_crs`
//! directory is named by `lineage verify` (full and `--since-seal`), which exits 1; and
//! `verify --replica-of` says what it is.

use lineage_store::internal::keys;

use crate::security::symlinks::local_store;
use crate::support::{lineage, text};

/// The five directories of the probe: another EPSG code, an escaped colon, garbage, a
/// backup suffix, empty.
const PLANTED_CRS: [&str; 5] = ["EPSG:4326", "EPSG%3A25832", "garbage", "EPSG:25832.bak", ""];

#[tokio::test]
async fn a_part_planted_under_a_sealed_commits_name_is_named_by_verify_full_and_since_seal() {
    for crs in PLANTED_CRS {
        let (_tmp, root, ptrs) = local_store().await;
        let store = root.to_str().unwrap();
        let o = lineage(&["seal", "--store", store], None);
        assert!(o.status.success(), "{:?}", text(&o));
        let real = ptrs.iter().find(|p| p.target_crs != crs).unwrap();
        let key = format!(
            "run_id={}/target_crs={crs}/part-{}.parquet",
            real.run_id, real.commit_id
        );
        let path = root.join(&key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(root.join(&real.part_path), &path).unwrap();
        for since in [false, true] {
            let mut args = vec!["verify", "--store", store, "--json"];
            if since {
                args.push("--since-seal");
            }
            let o = lineage(&args, None);
            let (out, err) = text(&o);
            assert_eq!(
                o.status.code(),
                Some(1),
                "{crs:?} since {since}: {out}{err}"
            );
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let problems = v["problems"].as_array().unwrap();
            assert_eq!(problems.len(), 1, "{crs:?} since {since}: {out}");
            assert_eq!(problems[0]["kind"], "planted_part", "{out}");
            assert_eq!(problems[0]["key"], key.as_str(), "{out}");
        }
    }
    // The probe's classification: the part's own directory is the only one of ours.
    let crs_ok: Vec<bool> = PLANTED_CRS
        .iter()
        .map(|c| keys::is_crs_segment(c))
        .collect();
    assert_eq!(crs_ok, [true, false, false, false, false]);
}

#[tokio::test]
async fn verify_replica_of_labels_a_planted_part_as_planted() {
    use std::sync::Arc;

    use lineage_store::replicate::compare::{compare, ReplicaProblemKind};
    use lineage_store::{AtomicPublisher, MemoryPublisher};

    let src = Arc::new(MemoryPublisher::new());
    let ptrs = crate::support::audit::append(src.clone(), 40, 20, 5).await;
    lineage_store::seal(src.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    let dst = Arc::new(MemoryPublisher::new());
    lineage_store::replicate::replicate(src.clone(), dst.clone(), Default::default())
        .await
        .unwrap();
    let real = &ptrs[0];
    let bytes = src.get(&real.part_path).await.unwrap().unwrap();
    let other = if real.target_crs == "EPSG:4326" {
        "EPSG:25832"
    } else {
        "EPSG:4326"
    };
    let mut planted = Vec::new();
    for crs in [other, "garbage"] {
        let k = format!(
            "run_id={}/target_crs={crs}/part-{}.parquet",
            real.run_id, real.commit_id
        );
        src.put_create(&k, bytes.clone()).await.unwrap();
        planted.push(k);
    }
    let r = compare(dst.as_ref(), src.as_ref()).await.unwrap();
    assert_eq!(r.problems.len(), 2, "{:#?}", r.problems);
    for (p, k) in r.problems.iter().zip(&planted) {
        assert_eq!((p.kind, &p.key), (ReplicaProblemKind::OnlyInSource, k));
        assert!(p.detail.contains("planted_part"), "{}", p.detail);
    }
    assert!(
        r.problems[0].detail.contains(&real.part_path),
        "{}",
        r.problems[0].detail
    );
}

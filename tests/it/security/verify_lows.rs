//! Issue 34, low items: a seal dated before its predecessor is named (`seal_out_of_order`),
//! a swapped `_lineage/store.json` is named directly (`bad_identity`), and
//! `verify --witness` keeps to `--problems-per-kind`.

use std::sync::Arc;

use bytes::Bytes;
use chrono::TimeZone;
use lineage_store::internal::keys;
use lineage_store::{
    seal_with, AtomicPublisher, FixedClock, MemoryPublisher, ProblemKind as K, SealOptions,
    VerifyOptions,
};

use crate::security::symlinks::local_store;
use crate::support::audit::{append, later, of_kind, verify_later};
use crate::support::{lineage, text};

#[tokio::test]
async fn a_seal_dated_before_its_predecessor_is_named() {
    let mem = Arc::new(MemoryPublisher::new());
    let at = |y| FixedClock(chrono::Utc.with_ymd_and_hms(y, 7, 1, 12, 0, 0).unwrap());
    append(mem.clone(), 20, 10, 1).await;
    seal_with(mem.as_ref(), &at(2099), None, &SealOptions::default())
        .await
        .unwrap();
    append(mem.clone(), 20, 10, 2).await;
    // Its commits are before seal 1's watermark (in 2099): found by a rescan.
    let rescan = SealOptions {
        rescan: true,
        ..SealOptions::default()
    };
    let added = seal_with(mem.as_ref(), &at(2026), None, &rescan)
        .await
        .unwrap()
        .added;
    assert!(added > 0);
    let since = VerifyOptions {
        since_seal: Some(None),
        ..later()
    };
    for r in [
        verify_later(mem.as_ref()).await,
        lineage_store::verify_with(mem.as_ref(), &since)
            .await
            .unwrap(),
    ] {
        let bad = of_kind(&r, K::SealOutOfOrder);
        assert_eq!(bad.len(), 1, "{:#?}", r.problems);
        assert_eq!(bad[0].0, keys::seal_key(2));
        assert!(
            bad[0].1.contains("2026-07-01") && bad[0].1.contains("2099-07-01"),
            "{}",
            bad[0].1
        );
    }
}

#[tokio::test]
async fn another_stores_identity_is_named_as_swapped() {
    let a = Arc::new(MemoryPublisher::new());
    let b = Arc::new(MemoryPublisher::new());
    append(a.clone(), 20, 10, 1).await;
    append(b.clone(), 20, 10, 2).await;
    let id = |bytes: &Bytes| {
        serde_json::from_slice::<serde_json::Value>(bytes).unwrap()["store_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mine = a.get(keys::IDENTITY_KEY).await.unwrap().unwrap();
    let theirs = b.get(keys::IDENTITY_KEY).await.unwrap().unwrap();
    a.tamper_put(keys::IDENTITY_KEY, theirs.clone());
    let r = verify_later(a.as_ref()).await;
    let bad = of_kind(&r, K::BadIdentity);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert_eq!(bad[0].0, keys::IDENTITY_KEY);
    let d = &bad[0].1;
    assert!(
        d.contains(&id(&theirs)) && d.contains(&id(&mine)) && d.contains("swapped"),
        "{d}"
    );
}

#[tokio::test]
async fn verify_witness_keeps_to_problems_per_kind() {
    let (tmp, root, _) = local_store().await;
    let store = root.to_str().unwrap();
    let wit = tmp.path().join("witness");
    let wit = wit.to_str().unwrap();
    assert!(lineage(&["seal", "--store", store], None).status.success());
    let o = lineage(
        &["witness", "--store", store, "--witness", wit, "--json"],
        None,
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let w: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    let rec = std::path::Path::new(wit).join(w["record"].as_str().unwrap());
    let body: serde_json::Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    // A hostile witness: 30 records of seals the store never made.
    for seq in 100..130u64 {
        let mut r = body.clone();
        r["seq"] = seq.into();
        let key = lineage_store::witness::record_key(w["store_id"].as_str().unwrap(), seq);
        std::fs::write(
            std::path::Path::new(wit).join(key),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    }
    let o = lineage(
        &[
            "verify",
            "--store",
            store,
            "--witness",
            wit,
            "--problems-per-kind",
            "4",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let witness_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("PROBLEM witness"))
        .collect();
    let more: Vec<&&str> = witness_lines
        .iter()
        .filter(|l| l.contains("more (--json or --problems-per-kind 0"))
        .collect();
    assert!(!more.is_empty(), "{out}");
    // At most 4 of each kind, and one line saying how many more.
    assert!(witness_lines.len() <= 5 * more.len(), "{out}");
    let all = lineage(
        &[
            "verify",
            "--store",
            store,
            "--witness",
            wit,
            "--problems-per-kind",
            "0",
        ],
        None,
    );
    let n = text(&all)
        .0
        .lines()
        .filter(|l| l.starts_with("PROBLEM witness"))
        .count();
    assert!(n >= 30, "{n}");
}

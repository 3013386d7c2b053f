//! Reading since a seal (`files`/`scan --since-seal K`, [`ReadOptions::since_seal`]): only
//! seals K..N are read (counted by the metering wrapper), exactly the commits of seals
//! K+1..N come back, a tampered range is refused naming the seal, and the anchors are
//! judged on the seals read (an expected head of a seal before K is refused).

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Duration, TimeZone, Utc};
use lineage_store::internal::digest::sha256_hex;
use lineage_store::internal::keys::seal_key;
use lineage_store::internal::metered::{MeteredPublisher, Request};
use lineage_store::{
    snapshot, Anchors, AtomicPublisher, ErrorKind, FixedClock, MemoryPublisher, ReadOptions,
    Snapshot, Writer,
};
use serde_json::Value;

use super::{ok, Store};
use crate::support::audit::{append_and_seal, events};
use crate::support::text;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

/// 30 seals: the first over 300 commits (a seal far larger than the others), each later
/// one over 2 commits. Returns the store (metered, logging) and the memory under it.
async fn thirty_seals() -> (Arc<MeteredPublisher>, Arc<MemoryPublisher>) {
    let mem = Arc::new(MemoryPublisher::new());
    let m = Arc::new(MeteredPublisher::new(mem.clone(), None).with_log());
    let store: Arc<dyn AtomicPublisher> = m.clone();
    for round in 0..30u64 {
        let at = t0() + Duration::minutes(round as i64);
        let (rows, batch) = if round == 0 { (300, 1) } else { (20, 10) };
        append_and_seal(&store, at, (rows, batch, round), None).await;
    }
    (m, mem)
}

fn since(k: u64) -> ReadOptions {
    ReadOptions {
        since_seal: Some(k),
        ..ReadOptions::default()
    }
}

async fn size_of(mem: &MemoryPublisher, key: &str) -> u64 {
    mem.get(key).await.unwrap().unwrap().len() as u64
}

fn keys_of(s: &Snapshot) -> Vec<(String, u64)> {
    s.parts
        .iter()
        .map(|p| (p.pointer_key.clone(), p.sealed_by.as_ref().unwrap().seq))
        .collect()
}

#[tokio::test]
async fn since_seal_28_reads_seals_28_to_30_and_gives_the_commits_of_29_and_30() {
    let (m, mem) = thirty_seals().await;
    let full = snapshot(m.as_ref(), &ReadOptions::default()).await.unwrap();
    m.take_log();
    m.reset();
    let read = snapshot(m.as_ref(), &since(28)).await.unwrap();
    let log = m.take_log();
    let seal_gets: Vec<String> = log
        .iter()
        .filter(|(r, k)| *r == Request::Get && k.starts_with("_lineage/seals/"))
        .map(|(_, k)| k.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // 31: the head marker's walk finds no later seal.
    let want: Vec<String> = (28..=31).map(seal_key).collect();
    assert_eq!(seal_gets, want);
    // Exactly the commits of seals 29 and 30, in the full read's order.
    let new: Vec<(String, u64)> = keys_of(&full)
        .into_iter()
        .filter(|(_, by)| *by > 28)
        .collect();
    assert!(!new.is_empty());
    assert_eq!(keys_of(&read), new);
    let range = read.since.as_ref().unwrap();
    assert_eq!((range.from, range.to, range.seals.len()), (28, 30, 3));
    assert_eq!(read.seal, full.seal);
    // Bytes read: seals 28..30 and the new pointers, nothing of the 300-commit seal 1.
    let mut want_bytes = 0;
    for n in 28..=30 {
        want_bytes += size_of(&mem, &seal_key(n)).await;
    }
    for (k, _) in &new {
        want_bytes += size_of(&mem, k).await;
    }
    let got = m.snapshot().bytes_read;
    assert_eq!(got, want_bytes, "{log:?}");
    assert!(size_of(&mem, &seal_key(1)).await > 2 * got);
    // The full read reads every seal.
    m.reset();
    snapshot(m.as_ref(), &ReadOptions::default()).await.unwrap();
    let all = m
        .take_log()
        .into_iter()
        .filter(|(r, k)| *r == Request::Get && k.starts_with("_lineage/seals/"))
        .count();
    assert!(all >= 30, "{all}");
}

#[tokio::test]
async fn as_of_seal_and_the_newest_seal_bound_the_range() {
    let (m, _) = thirty_seals().await;
    let full = snapshot(m.as_ref(), &ReadOptions::default()).await.unwrap();
    let r = snapshot(
        m.as_ref(),
        &ReadOptions {
            as_of_seal: Some(29),
            ..since(27)
        },
    )
    .await
    .unwrap();
    let want: Vec<(String, u64)> = keys_of(&full)
        .into_iter()
        .filter(|(_, by)| (28..=29).contains(by))
        .collect();
    assert_eq!(keys_of(&r), want);
    assert_eq!(r.seal.as_ref().unwrap().seq, 29);
    // Nothing new: an empty answer, as of the seal given.
    let none = snapshot(m.as_ref(), &since(30)).await.unwrap();
    assert!(none.parts.is_empty());
    assert_eq!(none.seal.as_ref().unwrap().seq, 30);
    // No seal 31; a seal after the one read; seal 0.
    for (opts, says) in [
        (since(31), "the store has no seal 31"),
        (
            ReadOptions {
                as_of_seal: Some(20),
                ..since(25)
            },
            "after the seal read (20",
        ),
        (since(0), "numbered from 1"),
    ] {
        let e = snapshot(m.as_ref(), &opts).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[tokio::test]
async fn commits_after_the_newest_seal_come_from_the_index() {
    let (m, _) = thirty_seals().await;
    let store: Arc<dyn AtomicPublisher> = m.clone();
    Writer::new(store.clone())
        .with_clock(Arc::new(FixedClock(t0() + Duration::hours(1))))
        .with_batch_rows(10)
        .append(&events(30, 1, 99), |_| {})
        .await
        .unwrap();
    let with = |o: ReadOptions| ReadOptions {
        include_unsealed: true,
        ..o
    };
    let full = snapshot(m.as_ref(), &with(ReadOptions::default()))
        .await
        .unwrap();
    let want: Vec<String> = full
        .parts
        .iter()
        .filter(|p| p.sealed_by.as_ref().is_none_or(|b| b.seq > 29))
        .map(|p| p.pointer_key.clone())
        .collect();
    assert!(full.unsealed() > 0 && want.len() > full.unsealed());
    let r = snapshot(m.as_ref(), &with(since(29))).await.unwrap();
    let got: Vec<String> = r.parts.iter().map(|p| p.pointer_key.clone()).collect();
    assert_eq!(got, want);
    assert_eq!(r.unsealed(), full.unsealed());
    let e = snapshot(
        m.as_ref(),
        &with(ReadOptions {
            as_of_seal: Some(29),
            ..since(28)
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input, "{e}");
}

/// Seal `n`'s JSON, changed by `f`, put back in place of it.
async fn rewrite(mem: &MemoryPublisher, n: u64, f: impl FnOnce(&mut Value)) {
    let key = seal_key(n);
    let mut v: Value = serde_json::from_slice(&mem.get(&key).await.unwrap().unwrap()).unwrap();
    f(&mut v);
    mem.tamper_put(&key, Bytes::from(serde_json::to_vec_pretty(&v).unwrap()));
}

async fn refused(m: &MeteredPublisher, k: u64, names: &str, says: &str) {
    let e = snapshot(m, &since(k)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    let t = e.to_string();
    assert!(
        t.contains(names) && t.contains(says),
        "{names} / {says}: {t}"
    );
}

#[tokio::test]
async fn a_seal_of_the_range_rewritten_is_refused_naming_it() {
    let (m, mem) = thirty_seals().await;
    rewrite(&mem, 29, |v| {
        v["sealed_utc"] = "2026-03-01T12:28:31Z".into()
    })
    .await;
    refused(&m, 28, &seal_key(29), "records previous seal").await;
    // Before the range: not read, so not seen (a full read or verify sees it).
    let (m, mem) = thirty_seals().await;
    rewrite(&mem, 20, |v| {
        v["sealed_utc"] = "2026-03-01T12:19:31Z".into()
    })
    .await;
    snapshot(m.as_ref(), &since(28)).await.unwrap();
    assert!(snapshot(m.as_ref(), &ReadOptions::default()).await.is_err());
}

#[tokio::test]
async fn seal_k_edited_is_refused_naming_it() {
    let (m, mem) = thirty_seals().await;
    rewrite(&mem, 28, |v| {
        let f = v["frontier"].as_array_mut().unwrap();
        f[0] = "00".repeat(32).into();
    })
    .await;
    refused(&m, 28, &seal_key(28), "frontier does not give its root").await;
    // Seal 29 then names seal 28 as edited (it no longer has the digest 29 links to).
    refused(&m, 27, &seal_key(28), "records previous seal").await;
}

#[tokio::test]
async fn a_seal_of_the_range_missing_is_refused_naming_it() {
    let (m, mem) = thirty_seals().await;
    assert!(mem.tamper_remove(&seal_key(29)));
    refused(&m, 27, &seal_key(29), "is missing").await;
}

#[tokio::test]
async fn a_broken_link_or_root_in_the_range_is_refused_naming_the_seal() {
    let (m, mem) = thirty_seals().await;
    rewrite(&mem, 30, |v| v["prev_sha256"] = "ab".repeat(32).into()).await;
    refused(&m, 28, &seal_key(30), "records previous seal").await;
    let (m, mem) = thirty_seals().await;
    rewrite(&mem, 30, |v| v["root"] = "cd".repeat(32).into()).await;
    refused(&m, 28, &seal_key(30), "records tree size").await;
    // An entry of seal 29 sealed again by seal 30.
    let (m, mem) = thirty_seals().await;
    let s29: Value =
        serde_json::from_slice(&mem.get(&seal_key(29)).await.unwrap().unwrap()).unwrap();
    rewrite(&mem, 30, |v| {
        let e = v["entries"].as_array_mut().unwrap();
        e[0] = s29["entries"][0].clone();
    })
    .await;
    refused(&m, 28, &seal_key(30), "again").await;
}

#[tokio::test]
async fn seal_k_without_a_frontier_is_refused_as_a_start() {
    let (m, mem) = thirty_seals().await;
    // Seal 28 as an earlier format wrote it (its link from seal 29 is not reached).
    rewrite(&mem, 28, |v| {
        let o = v.as_object_mut().unwrap();
        o.insert("format".into(), "lineage-seal/1".into());
        for f in ["frontier", "watermark_utc", "ahead", "index_window"] {
            o.remove(f);
        }
    })
    .await;
    let e = snapshot(m.as_ref(), &since(28)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input, "{e}");
    assert!(e.to_string().contains("seal 28 records no frontier"), "{e}");
}

#[tokio::test]
async fn the_expected_head_must_be_one_of_the_seals_read() {
    let (m, mem) = thirty_seals().await;
    let read = snapshot(m.as_ref(), &since(28)).await.unwrap();
    let range = read.since.unwrap();
    let head = |n: u64| {
        let mem = mem.clone();
        async move { sha256_hex(&mem.get(&seal_key(n)).await.unwrap().unwrap()) }
    };
    let anchored = |h: String| Anchors {
        expect_head: Some(h),
        ..Anchors::default()
    };
    let e = anchored(head(27).await)
        .require_range(&range, &m.describe())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    assert!(e.to_string().contains("none of seals 28-30"), "{e}");
    for (n, says) in [
        (28, "found at seal 28; seals 29-30 came after it"),
        (30, "found at seal 30, the newest"),
    ] {
        let c = anchored(head(n).await)
            .require_range(&range, &m.describe())
            .await
            .unwrap();
        assert!(
            c.lines().iter().any(|l| l.contains(says)),
            "{:?}",
            c.lines()
        );
    }
}

/// The CLI: the store of [`Store::new`] with its unsealed commits sealed (seals 1-3).
fn three_seals() -> Store {
    let s = Store::new();
    ok(&s.run(&["seal"]));
    s
}

fn head_of(s: &Store, n: u64) -> String {
    sha256_hex(&std::fs::read(s.root().join(seal_key(n))).unwrap())
}

#[test]
fn files_since_seal_lists_the_new_parts_and_says_what_it_read() {
    let s = three_seals();
    let full = s.files_json(&[]);
    let want: Vec<&Value> = full
        .iter()
        .filter(|p| p["sealed_by"].as_u64().unwrap() > 1)
        .collect();
    assert!(!want.is_empty() && want.len() < full.len());
    let got = s.files_json(&["--since-seal", "1"]);
    assert_eq!(got.iter().collect::<Vec<_>>(), want);
    let o = s.run(&["files", "--since-seal", "2"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let n3 = full.iter().filter(|p| p["sealed_by"] == 3).count();
    assert_eq!(out.lines().count(), n3);
    let said = format!(
        "of those sealed by seal 3, as of seal 3 (sha256 {}",
        head_of(&s, 3)
    );
    assert!(err.contains(&said), "{err}");
    let evidence = format!(
        "seals 2-3 read and checked; seal 1 not re-read: vouched for by seal 2's digest {} (no anchor)",
        head_of(&s, 2)
    );
    assert!(err.contains(&evidence), "{err}");
    assert!(!err.contains("whole chain"), "{err}");
}

#[test]
fn files_since_seal_checks_the_expected_head_against_the_seals_read() {
    let s = three_seals();
    let o = s.run(&[
        "files",
        "--since-seal",
        "2",
        "--expect-head",
        &head_of(&s, 1),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(out.is_empty());
    assert!(err.contains("none of seals 2-3"), "{err}");
    assert!(err.contains(&seal_key(2)), "{err}");
    let o = s.run(&[
        "files",
        "--since-seal",
        "2",
        "--expect-head",
        &head_of(&s, 2),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!out.is_empty());
    assert!(
        err.contains("seal 1 not re-read: vouched for by seal 2's digest")
            && err.contains("found at seal 2; seal 3 came after it)"),
        "{err}"
    );
}

#[test]
fn since_seal_refuses_what_it_cannot_check() {
    let s = three_seals();
    for (args, says) in [
        (vec!["files", "--since-seal", "1", "--iceberg"], "--iceberg"),
        (
            vec!["files", "--since-seal", "1", "--as-of-time", "2030-01-01"],
            "--as-of-time",
        ),
        (
            vec!["files", "--since-seal", "4"],
            "the store has no seal 4",
        ),
    ] {
        let o = s.run(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.is_empty() && err.contains(says), "{args:?}: {err}");
    }
    // Nothing new: an empty answer.
    let o = s.run(&["files", "--since-seal", "3"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.is_empty());
    assert!(err.contains("of those sealed after seal 3: none"), "{err}");
}

#[test]
fn scan_since_seal_reads_the_rows_of_the_new_seals() {
    let s = three_seals();
    for (k, rows) in [(1, 40), (2, 10)] {
        let out = s.dir.path().join(format!("since{k}.ndjson"));
        let o = s.run(&[
            "scan",
            "--since-seal",
            &k.to_string(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let got = std::fs::read_to_string(&out).unwrap().lines().count();
        assert_eq!(got, rows, "{err}");
        assert!(
            err.contains(&format!("seals {k}-3 read and checked")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn the_signature_rules_are_judged_on_the_seals_read() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    lineage_store::keygen(&prefix).unwrap();
    let key = lineage_store::read_signing_key(&prefix.with_extension("key")).unwrap();
    let public = lineage_store::read_public_key(&prefix.with_extension("pub")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    let store: Arc<dyn AtomicPublisher> = mem.clone();
    for round in 0..5u64 {
        let at = t0() + Duration::minutes(round as i64);
        // Seals 1-3 unsigned, 4-5 signed.
        let signing = (round >= 3).then_some(&key);
        append_and_seal(&store, at, (20, 10, round), signing).await;
    }
    let keys = |from: Option<u64>| Anchors {
        public_keys: vec![public],
        signed_from: from,
        ..Anchors::default()
    };
    let range = |k: u64| {
        let store = store.clone();
        async move {
            snapshot(store.as_ref(), &since(k))
                .await
                .unwrap()
                .since
                .unwrap()
        }
    };
    // Seals 1-3 unsigned are not read from seal 4 on: every seal read is signed.
    let c = keys(None)
        .require_range(&range(4).await, &store.describe())
        .await
        .unwrap();
    assert!(
        c.lines()
            .iter()
            .any(|l| l.contains("of seals 4-5 (those read): seals 4-5 signed by key")),
        "{:?}",
        c.lines()
    );
    // From seal 3: seal 3 must be signed too unless signing started at seal 4.
    let e = keys(None)
        .require_range(&range(3).await, &store.describe())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    assert!(
        e.to_string().contains(&seal_key(3)) && e.to_string().contains("is not signed"),
        "{e}"
    );
    keys(Some(4))
        .require_range(&range(3).await, &store.describe())
        .await
        .unwrap();
}

/// `export openlineage --since-seal K` reads as `files --since-seal K` does: seals K..N and
/// the Delta versions from K-1 on (each rebuilt from the one before it and its seal), not
/// the seals and versions before; and it exports exactly the commits seals K+1..N sealed.
#[tokio::test]
async fn an_export_since_seal_k_reads_seals_k_to_n_and_their_delta_versions_only() {
    use lineage_store::export::{collect, Selection};
    let (m, _) = thirty_seals().await;
    let url = m.describe();
    let full = collect(m.as_ref(), &url, &Selection::default())
        .await
        .unwrap();
    m.take_log();
    m.reset();
    let sel = Selection {
        since_seal: Some(28),
        ..Selection::default()
    };
    let since = collect(m.as_ref(), &url, &sel).await.unwrap();
    let log = m.take_log();
    let gets = |prefix: &str| -> std::collections::BTreeSet<String> {
        log.iter()
            .filter(|(r, k)| *r == Request::Get && k.starts_with(prefix))
            .map(|(_, k)| k.clone())
            .collect()
    };
    let want: std::collections::BTreeSet<String> = (28..=31).map(seal_key).collect();
    assert_eq!(gets("_lineage/seals/"), want);
    let versions: Vec<u64> = gets("_delta_log/")
        .iter()
        .filter_map(|k| {
            k.strip_prefix("_delta_log/")?
                .strip_suffix(".json")?
                .parse()
                .ok()
        })
        .collect();
    assert!(
        !versions.is_empty() && versions.iter().all(|v| *v >= 27),
        "{versions:?}"
    );
    let ids = |s: &lineage_store::export::Snapshot, after: u64| -> Vec<String> {
        let mut v: Vec<String> = s
            .runs
            .iter()
            .flat_map(|r| &r.commits)
            .filter(|c| c.sealed_by.as_ref().is_some_and(|b| b.seq > after))
            .map(|c| c.pointer.commit_id.clone())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&since, 0), ids(&full, 28));
    assert!(!ids(&since, 0).is_empty());
}

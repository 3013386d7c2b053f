//! A witness as the anchor of a read since a seal (`files`/`scan --since-seal K --witness
//! W`, [`Anchors::require_range`]): the records of seals K..N are checked against the
//! seals read, those of earlier seals counted (not checked), a record of a seal after the
//! newest is a cut-off; nothing of the store beyond seals K..N is read.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Duration, TimeZone, Utc};
use lineage_store::internal::digest::sha256_hex;
use lineage_store::internal::keys::seal_key;
use lineage_store::internal::metered::{MeteredPublisher, Request};
use lineage_store::witness::Witness;
use lineage_store::{
    seal_with, snapshot, Anchors, AtomicPublisher, ErrorKind, FixedClock, MemoryPublisher,
    ReadOptions, SealOptions,
};

use super::{ok, Store};
use crate::support::audit::events;
use crate::support::{sample, text};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

/// `n` seals of 2 commits each (metered store over memory), witnessed (in `wit`) right
/// after each seal of `witnessed`.
async fn seals(
    n: u64,
    witnessed: &[u64],
) -> (
    Arc<MeteredPublisher>,
    Arc<MemoryPublisher>,
    Arc<MemoryPublisher>,
) {
    let mem = Arc::new(MemoryPublisher::new());
    let wit = Arc::new(MemoryPublisher::new());
    let m = Arc::new(MeteredPublisher::new(mem.clone(), None).with_log());
    let store: Arc<dyn AtomicPublisher> = m.clone();
    for seq in 1..=n {
        let at = t0() + Duration::minutes(seq as i64);
        lineage_store::Writer::new(store.clone())
            .with_clock(Arc::new(FixedClock(at)))
            .with_batch_rows(10)
            .append(&events(20, 1, seq), |_| {})
            .await
            .unwrap();
        let clock = FixedClock(at + Duration::seconds(30));
        seal_with(store.as_ref(), &clock, None, &SealOptions::default())
            .await
            .unwrap();
        if witnessed.contains(&seq) {
            let o = lineage_store::witness::witness(store.as_ref(), wit.as_ref(), &clock)
                .await
                .unwrap();
            assert_eq!((o.seq, o.created), (seq, true), "{:?}", o.problems);
        }
    }
    (m, mem, wit)
}

fn witness_of(wit: &Arc<MemoryPublisher>) -> Anchors {
    Anchors {
        witness: Some(Arc::new(Witness::new(wit.clone()))),
        ..Anchors::default()
    }
}

fn since(k: u64) -> ReadOptions {
    ReadOptions {
        since_seal: Some(k),
        ..ReadOptions::default()
    }
}

/// A read of `m` with `opts`, its anchors judged against witness `wit` on the seals read.
async fn judged(
    m: &MeteredPublisher,
    wit: &Arc<MemoryPublisher>,
    opts: ReadOptions,
) -> lineage_store::Result<lineage_store::AnchorCheck> {
    let read = snapshot(m, &opts).await.unwrap();
    witness_of(wit)
        .require_range(read.since.as_ref().unwrap(), &m.describe())
        .await
}

/// Seals `from..=to` (their bytes) rewritten: seal `from` made one microsecond later (its
/// time's last digit), each later one re-linked to the new bytes before it, as a writer
/// rewriting history from seal `from` would.
fn rewritten(seals: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for (i, bytes) in seals.iter().enumerate() {
        let mut s = lineage_store::Seal::from_bytes("seal", bytes).unwrap();
        match out.last() {
            None => {
                let mut t = s.sealed_utc.clone().into_bytes();
                let at = t.len() - 2;
                t[at] = if t[at] == b'9' { b'8' } else { t[at] + 1 };
                s.sealed_utc = String::from_utf8(t).unwrap();
            }
            Some(prev) => s.prev_sha256 = Some(sha256_hex(prev)),
        }
        let b = s.to_bytes().unwrap();
        assert_ne!(&b, bytes, "seal {i} of the range unchanged");
        out.push(b);
    }
    out
}

#[tokio::test]
async fn the_records_of_the_seals_read_are_checked_and_only_those_seals_are_read() {
    let (m, _mem, wit) = seals(10, &[3, 7, 8]).await;
    m.take_log();
    m.reset();
    let read = snapshot(m.as_ref(), &since(6)).await.unwrap();
    let range = read.since.as_ref().unwrap();
    let c = witness_of(&wit)
        .require_range(range, &m.describe())
        .await
        .unwrap();
    let lines = c.lines().join("\n");
    assert!(
        lines.contains("records of seals 6-10 (those read) hold: 2 records of store")
            && lines.contains("(newest witnessed: seal 8 on ")
            && lines.contains(
                "; 1 record of seals before 6 not checked (vouched for by seal 6's digest)"
            )
            && lines.contains("; 2 newer seals not witnessed yet"),
        "{lines}"
    );
    // The store's seals read: 6..10, and 11, the head marker's probe that finds none.
    let seal_gets: std::collections::BTreeSet<String> = m
        .take_log()
        .into_iter()
        .filter(|(r, k)| *r == Request::Get && k.starts_with("_lineage/seals/"))
        .map(|(_, k)| k)
        .collect();
    let want: std::collections::BTreeSet<String> = (6..=11).map(seal_key).collect();
    assert_eq!(seal_gets, want);
    // Since seal 9: no record of seals 9-10, so nothing confirmed, three not checked.
    let c = judged(&m, &wit, since(9)).await.unwrap();
    let lines = c.lines().join("\n");
    assert!(
        lines.contains("no record of seals 9-10 (those read), so none checked")
            && lines.contains("3 records of seals before 9 not checked"),
        "{lines}"
    );
    // As of seal 7: the record of seal 8 is after the read, not checked.
    let c = judged(
        &m,
        &wit,
        ReadOptions {
            as_of_seal: Some(7),
            ..since(6)
        },
    )
    .await
    .unwrap();
    let lines = c.lines().join("\n");
    assert!(
        lines.contains("hold: 1 record of store")
            && lines.contains("1 record of seals after 7 not checked (the read is as of seal 7)"),
        "{lines}"
    );
}

#[tokio::test]
async fn a_witnessed_read_since_a_seal_reads_the_records_from_the_seal_before_it_only() {
    let witnessed: Vec<u64> = (1..=30).collect();
    let (m, _mem, wit) = seals(30, &witnessed).await;
    let metered = Arc::new(MeteredPublisher::new(wit.clone(), None).with_log());
    let anchors = Anchors {
        witness: Some(Arc::new(Witness::new(metered.clone()))),
        ..Anchors::default()
    };
    let read = snapshot(m.as_ref(), &since(28)).await.unwrap();
    let c = anchors
        .require_range(read.since.as_ref().unwrap(), &m.describe())
        .await
        .unwrap();
    let lines = c.lines().join("\n");
    assert!(
        lines.contains("records of seals 28-30 (those read) hold: 3 records of store")
            && lines.contains("27 records of seals before 28 not checked"),
        "{lines}"
    );
    // The witness's records read: the first (what it replaces), seal 27's (28's link) and
    // those of the seals read; each once.
    let gets: Vec<String> = metered
        .take_log()
        .into_iter()
        .filter(|(r, _)| *r == Request::Get)
        .map(|(_, k)| k)
        .collect();
    let seqs: Vec<u64> = gets
        .iter()
        .map(|k| k.rsplit('/').next().unwrap()[..20].parse().unwrap())
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .collect();
    assert_eq!(seqs, [1, 27, 28, 29, 30], "{gets:?}");
    assert_eq!(gets.len(), 5, "each record read once: {gets:?}");
    // A copy of the newest record planted under the last seal number there is: refused
    // (it records seal 30), not a panic.
    let newest = gets.iter().max().unwrap();
    let copy = wit.get(newest).await.unwrap().unwrap();
    let planted = newest.replace("00000000000000000030", &u64::MAX.to_string());
    wit.put_create(&planted, copy).await.unwrap();
    let refused = anchors
        .require_range(read.since.as_ref().unwrap(), &m.describe())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Integrity, "{refused}");
}

#[tokio::test]
async fn a_seal_rewritten_after_it_was_witnessed_is_refused_naming_it() {
    let (m, mem, wit) = seals(10, &[3, 7, 8]).await;
    let mut old = Vec::new();
    for n in 7..=10 {
        old.push(mem.get(&seal_key(n)).await.unwrap().unwrap().to_vec());
    }
    for (n, b) in (7..=10).zip(rewritten(old)) {
        mem.tamper_put(&seal_key(n), Bytes::from(b));
    }
    // The range read itself finds nothing wrong: the rewrite is re-linked.
    let e = judged(&m, &wit, since(6)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    let said = e.to_string();
    for n in [7, 8] {
        assert!(
            said.contains(&seal_key(n))
                && said.contains(&format!(
                    "witnessed_seal_rewritten: has sha256 {}",
                    sha256_hex(&mem.get(&seal_key(n)).await.unwrap().unwrap())
                ))
                && said.contains("history was rewritten after the witness saw it"),
            "{said}"
        );
    }
    // From seal 9 on, no record of a seal read: not checked (seal 9's digest is the
    // rewritten history's, which only a full read checks against the records).
    judged(&m, &wit, since(9)).await.unwrap();
}

#[tokio::test]
async fn a_witnessed_seal_cut_off_is_refused() {
    let (m, mem, wit) = seals(12, &[3, 8, 12]).await;
    // Cut back to seal 10: seals 11 and 12 and their head markers gone.
    for n in [11u64, 12] {
        assert!(mem.tamper_remove(&seal_key(n)));
        let marker = format!("-{n:020}");
        for o in mem.list("_lineage/heads/").await.unwrap() {
            if o.key.ends_with(&marker) {
                assert!(mem.tamper_remove(&o.key));
            }
        }
    }
    m.reset();
    m.take_log();
    let read = snapshot(m.as_ref(), &since(6)).await.unwrap();
    let range = read.since.as_ref().unwrap();
    assert_eq!((range.from, range.to), (6, 10));
    let e = witness_of(&wit)
        .require_range(range, &m.describe())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    let said = e.to_string();
    assert!(
        said.contains(&seal_key(12))
            && said.contains("witnessed_seal_missing: seal 12 was witnessed")
            && said.contains(
                "the store has no seal 12 (its newest is 10): the newest seals were cut off"
            ),
        "{said}"
    );
    let seal_gets = m
        .take_log()
        .into_iter()
        .filter(|(r, k)| *r == Request::Get && k.starts_with("_lineage/seals/"))
        .count();
    assert_eq!(seal_gets, 6, "seals 6-10 and the probe of 11");
}

#[tokio::test]
async fn a_store_the_witness_never_recorded_here_is_not_witnessed() {
    let (m, _mem, _) = seals(3, &[]).await;
    let empty = Arc::new(MemoryPublisher::new());
    let e = judged(&m, &empty, since(2)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    assert!(
        e.to_string()
            .contains("not_witnessed: the witness holds no record of a store at this location"),
        "{e}"
    );
}

/// The CLI: a store of `n` seals on local disk, witnessed after seal `at`.
fn cli_store(n: u64, at: u64, w: &str) -> Store {
    let s = Store::new(); // seals 1 and 2, 10 rows unsealed
    let rows = sample::events(80 + 6 * n as i64);
    if at <= 2 {
        ok(&s.run(&["witness", "--witness", w]));
    }
    for seq in 3..=n {
        let from = 80 + 6 * (seq as usize - 3);
        s.append(&rows[from..from + 6]);
        ok(&s.run(&["seal"]));
        if seq == at {
            ok(&s.run(&["witness", "--witness", w]));
        }
    }
    s
}

#[test]
fn files_since_seal_with_a_witness_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w").display().to_string();
    let s = cli_store(6, 4, &w);
    let o = s.run(&["files", "--since-seal", "3", "--witness", &w]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!out.is_empty());
    assert!(
        err.contains(&format!(
            "witness file://{w}: records of seals 3-6 (those read) hold: 1 record of store"
        )) && err.contains("; 2 newer seals not witnessed yet")
            && err.contains("seals 1-2 not re-read: vouched for by seal 3's digest")
            && err.contains("(witness file://"),
        "{err}"
    );
    let scan = dir.path().join("rows.ndjson");
    let o = s.run(&[
        "scan",
        "--since-seal",
        "5",
        "--witness",
        &w,
        "--out",
        scan.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("1 record of seals before 5 not checked (vouched for by seal 5's digest)")
            && err.contains("seals 1-4 not re-read: vouched for by seal 5's digest")
            && err.contains("(no anchor)"),
        "{err}"
    );
    // Seals 4-6 rewritten from seal 4: refused as the full read refuses, nothing printed.
    let root = s.root();
    let old: Vec<Vec<u8>> = (4..=6)
        .map(|n| std::fs::read(root.join(seal_key(n))).unwrap())
        .collect();
    for (n, b) in (4..=6).zip(rewritten(old)) {
        let p = root.join(seal_key(n));
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, b).unwrap();
    }
    let full = s.run(&["files", "--witness", &w]);
    let o = s.run(&["files", "--since-seal", "3", "--witness", &w]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), full.status.code(), "{err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(&seal_key(4)) && err.contains("witnessed_seal_rewritten"),
        "{err}"
    );
}

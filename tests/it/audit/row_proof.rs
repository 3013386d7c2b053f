//! Row proofs (`prove --event-id`, checked offline by `verify-proof`) and each row's
//! provenance (`scan --with-provenance`), compacted rows included.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch, StringArray, UInt64Array};
use base64::Engine;
use futures::TryStreamExt;
use lineage_store::compact::{compact, CompactOptions};
use lineage_store::{
    keygen, prove_row, read_public_key, read_signing_key, scan, seal, snapshot, verify_proof,
    MemoryPublisher, ProveAgainst, ReadOptions, ScanOptions, SystemClock, V7Ids,
};

use crate::support::audit::append;
use crate::support::lineage;

/// (commit_id, sealed_by_seal, part_path, feature_id) of every row, by event_id.
type Provenance = BTreeMap<String, (String, Option<u64>, String, String)>;

fn strings<'a>(b: &'a RecordBatch, name: &str) -> &'a StringArray {
    b.column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
}

async fn provenance(store: Arc<MemoryPublisher>, prefer_compacted: bool) -> Provenance {
    let snap = snapshot(
        store.as_ref(),
        &ReadOptions {
            prefer_compacted,
            ..ReadOptions::default()
        },
    )
    .await
    .unwrap();
    let opts = ScanOptions {
        provenance: true,
        ..ScanOptions::default()
    };
    let batches: Vec<RecordBatch> = scan(store, &snap, &opts)
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    let mut out = Provenance::new();
    for b in &batches {
        let seals = b
            .column_by_name("sealed_by_seal")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap();
        for i in 0..b.num_rows() {
            let row = (
                strings(b, "commit_id").value(i).to_string(),
                seals.is_valid(i).then(|| seals.value(i)),
                strings(b, "part_path").value(i).to_string(),
                strings(b, "feature_id").value(i).to_string(),
            );
            out.insert(strings(b, "event_id").value(i).to_string(), row);
        }
    }
    out
}

#[tokio::test]
async fn a_row_proof_shows_the_row_its_commit_and_seal_and_fails_on_any_change() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("owner");
    keygen(&prefix).unwrap();
    let sk = read_signing_key(&prefix.with_extension("key")).unwrap();
    let pk = read_public_key(&prefix.with_extension("pub")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    let first = append(mem.clone(), 150, 20, 1).await;
    let s1 = seal(mem.as_ref(), &SystemClock, Some(&sk)).await.unwrap();
    let second = append(mem.clone(), 90, 20, 2).await;
    let s2 = seal(mem.as_ref(), &SystemClock, Some(&sk)).await.unwrap();
    // Compact every sealed commit (seal 3): proofs and provenance still name the originals.
    let c = compact(
        mem.clone(),
        &SystemClock,
        &V7Ids,
        Some(&sk),
        &CompactOptions {
            target_rows: 10_000,
            ..CompactOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(c.seal.is_some(), "the compaction was sealed: {c:?}");

    // Provenance: every row, its own commit, the seal that sealed it, its original part.
    let prov = provenance(mem.clone(), false).await;
    assert_eq!(prov.len(), 240);
    for (ptrs, seq) in [(&first, 1), (&second, 2)] {
        for p in ptrs.iter() {
            let rows: Vec<_> = prov.values().filter(|r| r.0 == p.commit_id).collect();
            assert_eq!(rows.len() as u64, p.row_count, "{}", p.commit_id);
            assert!(rows.iter().all(|r| r.1 == Some(seq) && r.2 == p.part_path));
        }
    }
    // Every record of one feature, with its provenance: the same rows and commits.
    let (_, probe) = prov.iter().nth(17).unwrap();
    let feature = probe.3.clone();
    let snap = snapshot(mem.as_ref(), &ReadOptions::default())
        .await
        .unwrap();
    let opts = ScanOptions {
        provenance: true,
        feature_id: Some(feature.clone()),
        ..ScanOptions::default()
    };
    let batches: Vec<RecordBatch> = scan(mem.clone(), &snap, &opts)
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    let mut got: Vec<(String, String)> = Vec::new();
    for b in &batches {
        for i in 0..b.num_rows() {
            got.push((
                strings(b, "event_id").value(i).to_string(),
                strings(b, "commit_id").value(i).to_string(),
            ));
        }
    }
    got.sort();
    let want: Vec<(String, String)> = prov
        .iter()
        .filter(|(_, r)| r.3 == feature)
        .map(|(e, r)| (e.clone(), r.0.clone()))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);

    // A snapshot of compacted parts has no per-row commit: refused, naming --originals.
    let snap = snapshot(
        mem.as_ref(),
        &ReadOptions {
            prefer_compacted: true,
            ..ReadOptions::default()
        },
    )
    .await
    .unwrap();
    let opts = ScanOptions {
        provenance: true,
        ..ScanOptions::default()
    };
    let e = scan(mem.clone(), &snap, &opts).unwrap_err().to_string();
    assert!(
        e.contains("compacted parts") && e.contains("--originals"),
        "{e}"
    );

    // An event of the second seal's commit second[1], proven at seal 2.
    let (event, row) = prov
        .iter()
        .find(|(_, r)| r.0 == second[1].commit_id)
        .unwrap();
    let proof = prove_row(mem.clone(), event, &ProveAgainst::Seq(2))
        .await
        .unwrap();
    assert_eq!(proof.format, "lineage-row-proof/1");
    let ok = verify_proof(&proof, &s2.head, Some(&pk), None)
        .unwrap()
        .unwrap();
    assert_eq!(
        (ok.commit_id.as_str(), ok.seal_seq, ok.part_sha256.as_str()),
        (second[1].commit_id.as_str(), 2, second[1].sha256.as_str())
    );
    let r = ok.row.clone().unwrap();
    assert_eq!(r.event_id, *event);
    assert_eq!(r.values["event_id"], event.as_str());
    assert_eq!(r.values["feature_id"], row.3.as_str());
    assert_eq!(r.values.as_object().unwrap().len(), 15, "{}", r.values);
    // The proof carries that one part, not the archive.
    let carried = proof.row.as_ref().unwrap().part_base64.len() as u64;
    assert_eq!(carried, second[1].size_bytes.div_ceil(3) * 4);

    // An event of seal 2 does not exist as of seal 1; one of seal 1 proves there.
    let e = prove_row(mem.clone(), event, &ProveAgainst::Seq(1))
        .await
        .unwrap_err();
    assert_eq!(e.kind().exit_code(), 2);
    let want = format!("in the {} commits sealed up to seal 1", first.len());
    assert!(e.to_string().contains(&want), "{e}");
    let (old, _) = prov.iter().find(|(_, r)| r.1 == Some(1)).unwrap();
    let p1 = prove_row(mem.clone(), old, &ProveAgainst::Head(s1.head.clone()))
        .await
        .unwrap();
    let ok1 = verify_proof(&p1, &s1.head, Some(&pk), None)
        .unwrap()
        .unwrap();
    assert_eq!((ok1.seal_seq, ok1.row.unwrap().event_id), (1, old.clone()));
    let e = prove_row(mem.clone(), "no-such-event", &ProveAgainst::Newest)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("\"no-such-event\""), "{e}");

    // Any change fails offline, saying what.
    let fails = |p: &lineage_store::Proof| {
        verify_proof(p, &s2.head, Some(&pk), None)
            .unwrap()
            .unwrap_err()
    };
    let mut bad = proof.clone();
    bad.row.as_mut().unwrap().values["feature_id"] = "forged".into();
    assert!(fails(&bad).contains("the proof shows"), "{}", fails(&bad));
    let mut bad = proof.clone();
    bad.row.as_mut().unwrap().row_index += 1;
    let why = fails(&bad);
    assert!(
        why.contains("is event") && why.contains(event.as_str()),
        "{why}"
    );
    let mut bad = proof.clone();
    bad.row.as_mut().unwrap().row_index = 1_000_000;
    assert!(fails(&bad).contains("no row 1000000"), "{}", fails(&bad));
    let mut bad = proof.clone();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut bytes = b64.decode(&bad.row.as_ref().unwrap().part_base64).unwrap();
    bytes[100] ^= 1;
    bad.row.as_mut().unwrap().part_base64 = b64.encode(&bytes);
    let why = fails(&bad);
    assert!(why.contains(&second[1].sha256), "{why}");
    let mut bad = proof.clone();
    bad.format = "lineage-proof/1".into();
    assert!(fails(&bad).contains("with a row"), "{}", fails(&bad));
    let mut bad = proof.clone();
    bad.row = None;
    assert!(fails(&bad).contains("without a row"), "{}", fails(&bad));
    // The row's commit proven against the wrong seal's head.
    assert!(verify_proof(&proof, &s1.head, Some(&pk), None)
        .unwrap()
        .unwrap_err()
        .contains("not the head digest"));
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = lineage(args, None);
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn prove_event_id_and_scan_with_provenance_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let (c, _, e) = run(&[
        "demo",
        "--no-seal",
        "--store",
        &store,
        "--events",
        "2000",
        "--batch-rows",
        "250",
    ]);
    assert_eq!(c, 0, "{e}");
    let (c, out, e) = run(&["seal", "--store", &store]);
    assert_eq!(c, 0, "{e}");
    let head = out
        .lines()
        .find_map(|l| l.strip_prefix("head "))
        .unwrap()
        .to_string();

    let rows = dir.path().join("rows.ndjson");
    let rows_s = rows.display().to_string();
    let (c, _, e) = run(&[
        "scan",
        "--store",
        &store,
        "--with-provenance",
        "--out",
        &rows_s,
    ]);
    assert_eq!(c, 0, "{e}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&rows)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2000);
    let row = &lines[1234];
    assert_eq!(row["sealed_by_seal"], 1);
    let (event, commit) = (
        row["event_id"].as_str().unwrap(),
        row["commit_id"].as_str().unwrap(),
    );
    let part = row["part_path"].as_str().unwrap();
    assert!(Path::new(&store).join(part).is_file(), "{part}");
    assert!(part.contains(commit), "{part} {commit}");

    let proof = dir.path().join("row.json").display().to_string();
    let (c, _, e) = run(&[
        "prove",
        "--store",
        &store,
        "--event-id",
        event,
        "--out",
        &proof,
    ]);
    assert_eq!(c, 0, "{e}");
    let (c, out, e) = run(&["verify-proof", &proof, "--head", &head]);
    assert_eq!(c, 0, "{e}");
    assert!(
        out.starts_with(&format!("valid: event {event} is row ")),
        "{out}"
    );
    assert!(out.contains(&format!("valid: commit {commit} ")), "{out}");
    let (c, out, _) = run(&["verify-proof", &proof, "--head", &head, "--json"]);
    assert_eq!(c, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["summary"]["row"]["values"]["feature_id"],
        row["feature_id"]
    );
    assert_eq!(v["summary"]["seal_seq"], 1);

    // A forged value: exit 1, said why.
    let text = std::fs::read_to_string(&proof).unwrap();
    let mut p: serde_json::Value = serde_json::from_str(&text).unwrap();
    p["row"]["values"]["feature_id"] = "forged".into();
    std::fs::write(&proof, serde_json::to_string(&p).unwrap()).unwrap();
    let (c, _, e) = run(&["verify-proof", &proof, "--head", &head]);
    assert_eq!(c, 1);
    assert!(
        e.contains("INVALID") && e.contains("the proof shows"),
        "{e}"
    );
    // An unknown event: exit 2, naming it; a commit id and --event-id together: usage.
    let (c, _, e) = run(&["prove", "--store", &store, "--event-id", "nope"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("\"nope\"") && e.contains("sealed up to seal 1"),
        "{e}"
    );
    let (c, _, _) = run(&["prove", "--store", &store, commit, "--event-id", event]);
    assert_eq!(c, 2);
}

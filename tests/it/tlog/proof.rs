//! Compact proofs (issue 36 item 3): `lineage prove` writes `c2sp.org/tlog-proof@v1`, a
//! few hundred bytes to a few KB disclosing no other commit; `verify-proof` checks it
//! offline against the seal key (and `--part`), and so do `signed_note` and `tlog_tiles`,
//! which nobody here wrote. Tampered proofs are refused by both; the older
//! `lineage-proof/1` is still written (`--embed-seal`) and read.

use std::path::Path;

use lineage_store::internal::checkpoint as cp;
use lineage_store::internal::tlog_proof;
use signed_note::{Note, StandardVerifier, VerifierList};
use tlog_tiles::{check_record, record_hash, Checkpoint, Hash};

use crate::support::{lineage, ndjson, text};

/// A store of `seals` signed seals of 5-row commits; returns (dir, store, key prefix).
fn signed_store(dir: &Path, seals: usize) -> (String, String) {
    let s = dir.join("s").to_str().unwrap().to_string();
    let k = dir.join("k").to_str().unwrap().to_string();
    let o = lineage(
        &["keygen", "--out", &k, "--origin", "example.org/proofs"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    for i in 0..seals {
        let input = ndjson(&format!("run-{i}"), 40, &format!("t{i}"));
        let args = ["append", "--store", &s, "--batch-rows", "5"];
        let o = lineage(&args, Some(input.as_bytes()));
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        let key = format!("{k}.key");
        let args = [
            "seal",
            "--store",
            &s,
            "--signing-key",
            &key,
            "--origin",
            "example.org/proofs",
        ];
        let o = lineage(&args, None);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    }
    (s, k)
}

/// Every (commit id, part path) of the store.
fn commits(store: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for run in std::fs::read_dir(Path::new(store).join("_lineage/commits")).unwrap() {
        for f in std::fs::read_dir(run.unwrap().path()).unwrap() {
            let b = std::fs::read(f.unwrap().path()).unwrap();
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            out.push((
                v["commit_id"].as_str().unwrap().to_string(),
                v["part_path"].as_str().unwrap().to_string(),
            ));
        }
    }
    out.sort();
    out
}

fn verify_proof(file: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["verify-proof", file];
    args.extend_from_slice(extra);
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    (o.status.code(), out, err)
}

#[test]
fn a_compact_proof_discloses_one_commit_and_is_checked_by_us_and_independently() {
    let dir = tempfile::tempdir().unwrap();
    let (s, k) = signed_store(dir.path(), 3);
    let all = commits(&s);
    assert_eq!(all.len(), 24);
    let (id, part) = &all[13];
    let file = dir.path().join("c.tlog-proof");
    let file = file.to_str().unwrap();
    let o = lineage(&["prove", "--store", &s, id, "--out", file], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let proof = std::fs::read_to_string(file).unwrap();
    assert!(
        proof.starts_with("c2sp.org/tlog-proof@v1\nextra "),
        "{proof}"
    );
    assert!(proof.len() < 3000, "{} bytes", proof.len());
    for (other, _) in all.iter().filter(|(o, _)| o != id) {
        assert!(!proof.contains(other.as_str()), "discloses {other}");
    }
    let pubk = format!("{k}.pub");
    let partf = Path::new(&s).join(part);
    let (code, out, err) = verify_proof(
        file,
        &["--public-key", &pubk, "--part", partf.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&format!("valid: commit {id}")), "{out}");
    assert!(
        out.contains("the checkpoint example.org/proofs of 24 commits"),
        "{out}"
    );
    assert!(out.contains("the part file matches"), "{out}");

    // Independently: the checkpoint's signature, and the leaf's inclusion in its root.
    let vkey = std::fs::read_to_string(format!("{k}.vkey")).unwrap();
    let p = tlog_proof::parse(&proof).unwrap();
    let v = VerifierList::new(vec![Box::new(StandardVerifier::new(vkey.trim()).unwrap())]);
    let note = Note::from_bytes(p.checkpoint.as_bytes()).unwrap();
    note.verify(&v).unwrap();
    let c = Checkpoint::from_bytes(note.text()).unwrap();
    let leaf = record_hash(&sha256(p.extra.as_deref().unwrap()));
    let path: Vec<Hash> = p.path.iter().map(|h| Hash(*h)).collect();
    check_record(&path, c.size(), *c.hash(), p.index, leaf).unwrap();

    // Tampered: refused by both.
    let tampered = [
        (
            "another index",
            proof.replacen(
                &format!("index {}", p.index),
                &format!("index {}", p.index + 1),
                1,
            ),
        ),
        ("a path hash", {
            let mut q = p.clone();
            q.path[0][0] ^= 1;
            tlog_proof::render(&q)
        }),
        ("the pointer", {
            let mut q = p.clone();
            let e = String::from_utf8(q.extra.clone().unwrap()).unwrap();
            q.extra = Some(
                e.replacen("\"row_count\": 5", "\"row_count\": 6", 1)
                    .into_bytes(),
            );
            assert_ne!(q.extra, p.extra);
            tlog_proof::render(&q)
        }),
        ("the checkpoint's size", {
            let mut q = p.clone();
            let cpk = cp::parse(&q.checkpoint).unwrap();
            q.checkpoint = q.checkpoint.replacen(
                &format!("\n{}\n", cpk.tree_size),
                &format!("\n{}\n", cpk.tree_size + 1),
                1,
            );
            tlog_proof::render(&q)
        }),
    ];
    for (what, t) in tampered {
        assert_ne!(t, proof, "{what}");
        let f = dir.path().join("t.tlog-proof");
        std::fs::write(&f, &t).unwrap();
        let (code, out, err) = verify_proof(f.to_str().unwrap(), &["--public-key", &pubk]);
        assert_eq!(code, Some(1), "{what}: {out}{err}");
        assert!(err.contains("INVALID proof"), "{what}: {err}");
        let q = tlog_proof::parse(&t).unwrap();
        let independent = Note::from_bytes(q.checkpoint.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(|n| n.verify(&v).map(|_| n).map_err(|e| e.to_string()))
            .and_then(|n| Checkpoint::from_bytes(n.text()).map_err(|e| e.to_string()))
            .and_then(|c| {
                let path: Vec<Hash> = q.path.iter().map(|h| Hash(*h)).collect();
                let leaf = record_hash(&sha256(q.extra.as_deref().unwrap()));
                check_record(&path, c.size(), *c.hash(), q.index, leaf).map_err(|e| e.to_string())
            });
        assert!(
            independent.is_err(),
            "{what}: the independent verifier accepts it"
        );
    }

    // A part file that is not the commit's.
    let other = Path::new(&s).join(&all[0].1);
    let (code, _, err) = verify_proof(
        file,
        &["--public-key", &pubk, "--part", other.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "{err}");
    // Without the key, or with --head: refused as usage, naming the flags.
    let (code, _, err) = verify_proof(file, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--public-key"), "{err}");
    let (code, _, err) = verify_proof(file, &["--public-key", &pubk, "--head", &"0".repeat(64)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--head") && err.contains("--embed-seal"),
        "{err}"
    );
}

#[test]
fn the_older_proof_with_the_whole_seal_is_still_written_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let (s, k) = signed_store(dir.path(), 1);
    let (id, _) = &commits(&s)[2];
    let file = dir.path().join("p.json");
    let file = file.to_str().unwrap();
    let o = lineage(
        &["prove", "--store", &s, id, "--out", file, "--embed-seal"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(v["format"], "lineage-proof/1");
    let head = v["seal_sha256"].as_str().unwrap().to_string();
    let pubk = format!("{k}.pub");
    let (code, out, err) = verify_proof(file, &["--head", &head, "--public-key", &pubk]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("is in seal 1 of"), "{out}");
    let (code, _, err) = verify_proof(file, &["--public-key", &pubk]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--head"), "{err}");
}

fn sha256(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

/// The head digest of seal `seq` (sha256 of its bytes).
fn head_of(store: &str, seq: u64) -> String {
    let key = lineage_store::internal::keys::seal_key(seq);
    hex::encode(sha256(&std::fs::read(Path::new(store).join(key)).unwrap()))
}

#[test]
fn a_consistency_proof_between_two_heads_is_checked_by_us_and_independently() {
    let dir = tempfile::tempdir().unwrap();
    let (s, k) = signed_store(dir.path(), 4);
    let (h1, h3) = (head_of(&s, 1), head_of(&s, 3));
    let file = dir.path().join("c.json");
    let file = file.to_str().unwrap();
    let args = [
        "prove",
        "--store",
        &s,
        "--consistency",
        "--from-head",
        &h1,
        "--to-head",
        &h3,
        "--out",
        file,
    ];
    let o = lineage(&args, None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let pubk = format!("{k}.pub");
    let (code, out, err) = verify_proof(file, &["--public-key", &pubk]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("the checkpoint example.org/proofs of 24 commits extends the one of 8"),
        "{out}"
    );

    // Independently: both checkpoints signed, and the proof by tlog_tiles' CheckTree.
    let vkey = std::fs::read_to_string(format!("{k}.vkey")).unwrap();
    let v = VerifierList::new(vec![Box::new(StandardVerifier::new(vkey.trim()).unwrap())]);
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let open = |field: &str| {
        let n = Note::from_bytes(p[field].as_str().unwrap().as_bytes()).unwrap();
        n.verify(&v).unwrap();
        Checkpoint::from_bytes(n.text()).unwrap()
    };
    let (old, new) = (open("old_checkpoint"), open("new_checkpoint"));
    let hashes: Vec<Hash> = p["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| Hash(b64(h.as_str().unwrap()).try_into().unwrap()))
        .collect();
    tlog_tiles::check_tree(&hashes, new.size(), *new.hash(), old.size(), *old.hash()).unwrap();
    let mut bad = hashes.clone();
    bad[0].0[0] ^= 1;
    assert!(
        tlog_tiles::check_tree(&bad, new.size(), *new.hash(), old.size(), *old.hash()).is_err()
    );

    // A changed hash: refused by verify-proof too.
    let mut q = p.clone();
    let first = q["proof"][0].as_str().unwrap().to_string();
    let mut raw = b64(&first);
    raw[0] ^= 1;
    q["proof"][0] = serde_json::Value::String(base64::engine::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        raw,
    ));
    let f = dir.path().join("bad.json");
    std::fs::write(&f, q.to_string()).unwrap();
    let (code, out, err) = verify_proof(f.to_str().unwrap(), &["--public-key", &pubk]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("does not show"), "{err}");

    // The newest seal by default; an older --to-head than --from-head is refused.
    let args = ["prove", "--store", &s, "--consistency", "--from-head", &h3];
    let o = lineage(&args, None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(text(&o)
        .0
        .contains("\"format\": \"lineage-consistency-proof/1\""));
    let args = [
        "prove",
        "--store",
        &s,
        "--consistency",
        "--from-head",
        &h3,
        "--to-head",
        &h1,
    ];
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("--from-head"), "{err}");
}

fn b64(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

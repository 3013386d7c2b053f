//! Row proofs of a signed seal (`prove --event-id`) in the compact `lineage-row-proof/2`:
//! the commit's `c2sp.org/tlog-proof@v1` instead of the whole seal, so the proof is the part
//! it carries plus a few KB however many commits the seal holds. Checked offline against the
//! seal key by `verify-proof` (and its commit proof by `tlog_tiles`, which nobody here
//! wrote); a changed row, pointer, path or checkpoint is refused; `--embed-seal` still
//! writes the `lineage-row-proof/1`, still read.

use base64::Engine;
use lineage_store::internal::checkpoint as cp;
use lineage_store::internal::tlog_proof;
use tlog_tiles::{check_record, record_hash, Hash};

use crate::support::lineage;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = lineage(args, None);
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_row_proof_of_a_signed_seal_carries_the_compact_commit_proof() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    let (store, key) = (d("store"), d("k"));
    let args = ["demo", "--no-seal", "--store", &store, "--events", "3000"];
    let (c, _, e) = run(&[&args[..], &["--batch-rows", "10"]].concat());
    assert_eq!(c, 0, "{e}");
    let (c, _, e) = run(&["keygen", "--out", &key]);
    assert_eq!(c, 0, "{e}");
    let sk = format!("{key}.key");
    let pk = format!("{key}.pub");
    let (c, out, e) = run(&["seal", "--store", &store, "--signing-key", &sk]);
    assert_eq!(c, 0, "{e}");
    let head = out
        .lines()
        .find_map(|l| l.strip_prefix("head "))
        .unwrap()
        .to_string();
    let rows = d("rows.ndjson");
    let (c, _, e) = run(&["scan", "--store", &store, "--out", &rows]);
    assert_eq!(c, 0, "{e}");
    let text = std::fs::read_to_string(&rows).unwrap();
    let row: serde_json::Value = serde_json::from_str(text.lines().nth(1234).unwrap()).unwrap();
    let event = row["event_id"].as_str().unwrap();

    let (compact, full) = (d("row.json"), d("row-full.json"));
    let prove = ["prove", "--store", &store, "--event-id", event, "--out"];
    assert_eq!(run(&[&prove[..], &[&compact]].concat()).0, 0);
    assert_eq!(run(&[&prove[..], &[&full, "--embed-seal"]].concat()).0, 0);
    let bytes = std::fs::read_to_string(&compact).unwrap();
    let v: serde_json::Value = serde_json::from_str(&bytes).unwrap();
    assert_eq!(v["format"], "lineage-row-proof/2");
    // The size bound: the part it carries, the row's values, and at most 4 KB besides
    // (the commit's tlog proof: pointer, path, checkpoint); the seal is not in it.
    let part_b64 = v["row"]["part_base64"].as_str().unwrap().len();
    let values = v["row"]["values"].to_string().len();
    assert!(
        bytes.len() <= part_b64 + values + 4096,
        "{} bytes",
        bytes.len()
    );
    let full_len = std::fs::metadata(&full).unwrap().len() as usize;
    let seals = std::path::Path::new(&store).join("_lineage/seals/00000000000000000001.json");
    let seal_len = std::fs::metadata(seals).unwrap().len() as usize;
    assert!(
        full_len > bytes.len() + seal_len,
        "{full_len} vs {}",
        bytes.len()
    );

    // Checked against the key; the row and commit said.
    let (c, out, e) = run(&["verify-proof", &compact, "--public-key", &pk]);
    assert_eq!(c, 0, "{out}{e}");
    assert!(
        out.starts_with(&format!("valid: event {event} is row ")),
        "{out}"
    );
    assert!(out.contains("is in the checkpoint lineage-store/"), "{out}");
    assert!(
        out.contains(&format!("valid: commit {} ", row_commit(&v))),
        "{out}"
    );
    // Not against a head (it has no seal), nor without the key.
    assert_eq!(
        run(&[
            "verify-proof",
            &compact,
            "--head",
            &head,
            "--public-key",
            &pk
        ])
        .0,
        2
    );
    assert_eq!(run(&["verify-proof", &compact]).0, 2);
    // The older form is still written and read.
    let (c, out, e) = run(&["verify-proof", &full, "--head", &head, "--public-key", &pk]);
    assert_eq!(c, 0, "{out}{e}");

    // The commit proof inside is checked by tlog_tiles.
    let p = tlog_proof::parse(v["commit_proof"].as_str().unwrap()).unwrap();
    let c = cp::parse(&p.checkpoint).unwrap();
    let path: Vec<Hash> = p.path.iter().map(|h| Hash(*h)).collect();
    let leaf = record_hash(&sha256(p.extra.as_deref().unwrap()));
    check_record(&path, c.tree_size, Hash(c.root), p.index, leaf).unwrap();

    // Every change is refused, saying why.
    let refused = |name: &str, changed: serde_json::Value, why: &str| {
        let f = d(name);
        std::fs::write(&f, serde_json::to_string_pretty(&changed).unwrap()).unwrap();
        let (c, out, e) = run(&["verify-proof", &f, "--public-key", &pk]);
        assert_eq!(c, 1, "{name}: {out}{e}");
        assert!(e.contains(why), "{name}: {e}");
    };
    let mut forged = v.clone();
    forged["row"]["values"]["feature_id"] = "forged".into();
    refused("value.json", forged, "the proof shows");
    let mut other_row = v.clone();
    other_row["row"]["row_index"] = (v["row"]["row_index"].as_u64().unwrap() ^ 1).into();
    refused("index.json", other_row, "row ");
    let mut part = v.clone();
    let mut b = base64::engine::general_purpose::STANDARD
        .decode(v["row"]["part_base64"].as_str().unwrap())
        .unwrap();
    b[100] ^= 1;
    part["row"]["part_base64"] = base64::engine::general_purpose::STANDARD.encode(b).into();
    refused("part.json", part, "the proof's part");
    let commit_proof = v["commit_proof"].as_str().unwrap();
    let mut moved = v.clone();
    let index = format!("index {}\n", p.index);
    let other = format!("index {}\n", p.index ^ 1);
    moved["commit_proof"] = commit_proof.replacen(&index, &other, 1).into();
    refused(
        "leaf.json",
        moved,
        "the commit's proof: the audit path does not lead",
    );
    let mut resized = v.clone();
    let size = format!("\n{}\n", c.tree_size);
    let bigger = format!("\n{}\n", c.tree_size + 1);
    resized["commit_proof"] = commit_proof.replacen(&size, &bigger, 1).into();
    refused(
        "checkpoint.json",
        resized,
        "the commit's proof: the checkpoint",
    );
    let mut tag = v.clone();
    tag["format"] = "lineage-row-proof/3".into();
    let f = d("tag.json");
    std::fs::write(&f, tag.to_string()).unwrap();
    assert_ne!(run(&["verify-proof", &f, "--public-key", &pk]).0, 0);
}

/// The commit a compact row proof's pointer names.
fn row_commit(v: &serde_json::Value) -> String {
    let p = tlog_proof::parse(v["commit_proof"].as_str().unwrap()).unwrap();
    let pointer: serde_json::Value = serde_json::from_slice(&p.extra.unwrap()).unwrap();
    pointer["commit_id"].as_str().unwrap().to_string()
}

fn sha256(b: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(b).to_vec()
}

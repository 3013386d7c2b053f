//! The audit commands end to end through the `lineage` binary: outputs and exit codes.

use std::path::Path;
use std::process::{Command, Output};

fn lineage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineage"))
        .args(args)
        .env_remove("LINEAGE_STORE")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn demo_store(dir: &Path) -> String {
    let s = dir.join("store").display().to_string();
    let o = lineage(&[
        "demo",
        "--no-seal",
        "--store",
        &s,
        "--events",
        "3000",
        "--batch-rows",
        "400",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    s
}

#[test]
fn seal_sign_verify_prove_and_verify_proof() {
    let dir = tempfile::tempdir().unwrap();
    let store = demo_store(dir.path());
    let key = dir.path().join("k").display().to_string();
    let o = lineage(&["keygen", "--out", &key]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !stdout(&o).contains("lineage-ed25519-secret"),
        "never print the secret"
    );
    let (sk, pk) = (format!("{key}.key"), format!("{key}.pub"));

    let o = lineage(&["seal", "--store", &store, "--signing-key", &sk]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let head = stdout(&o)
        .lines()
        .find_map(|l| l.strip_prefix("head ").map(str::to_string))
        .unwrap();
    assert_eq!(head.len(), 64);

    let o = lineage(&[
        "verify",
        "--store",
        &store,
        "--public-key",
        &pk,
        "--expect-head",
        &head,
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("clean: no problems"));
    assert!(stdout(&o).contains(&head));

    let o = lineage(&[
        "verify",
        "--store",
        &store,
        "--json",
        "--sample",
        "2",
        "--sample-seed",
        "3",
    ]);
    assert_eq!(code(&o), 0);
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["parts_hashed"], 2);
    assert_eq!(r["problems"].as_array().unwrap().len(), 0);
    assert_eq!(r["head"].as_str().unwrap(), head);

    // Prove one commit and check it offline, with the part file.
    let o = lineage(&["log", "--store", &store, "--json"]);
    let first: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let commit = first["commit_id"].as_str().unwrap();
    let part = Path::new(&store).join(first["part_path"].as_str().unwrap());
    let proof = dir.path().join("proof.json").display().to_string();
    // (The proof that embeds the seal, checked against the head digest; the compact
    // c2sp.org/tlog-proof@v1 is tests/it/tlog/proof.rs.)
    let o = lineage(&[
        "prove",
        "--store",
        &store,
        commit,
        "--out",
        &proof,
        "--embed-seal",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let part_s = part.display().to_string();
    let o = lineage(&[
        "verify-proof",
        &proof,
        "--head",
        &head,
        "--public-key",
        &pk,
        "--part",
        &part_s,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with(&format!("valid: commit {commit}")),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("the part file matches"));
    let wrong = "0".repeat(64);
    let o = lineage(&["verify-proof", &proof, "--head", &wrong]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("not the head digest"), "{}", stderr(&o));
    let o = lineage(&["verify-proof", &proof, "--head", "xyz"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));

    // Tamper: flip a byte of that part. Exit 1, the part named, in text and JSON.
    let mut b = std::fs::read(&part).unwrap();
    b[8] ^= 1;
    std::fs::write(&part, &b).unwrap();
    let o = lineage(&["verify", "--store", &store, "--public-key", &pk]);
    assert_eq!(code(&o), 1);
    let rel = first["part_path"].as_str().unwrap();
    assert!(
        stdout(&o).contains(&format!("PROBLEM digest_mismatch: {rel}")),
        "{}",
        stdout(&o)
    );
    let o = lineage(&["verify", "--store", &store, "--json"]);
    assert_eq!(code(&o), 1);
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(r["problems"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["kind"] == "digest_mismatch" && p["key"] == rel));
}

#[test]
fn verify_usage_and_access_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = demo_store(dir.path());
    let missing = dir.path().join("nope.pub").display().to_string();
    for args in [
        vec!["verify", "--store", &store, "--public-key", &missing],
        vec!["verify", "--store", &store, "--expect-head", "abc"],
        vec!["verify", "--store", "s3x://bucket"],
        vec!["verify", "--store", &missing],
        vec!["verify", "--store", &store, "--grace", "soon"],
        vec!["verify", "--store", &store, "--since-seal", "7"],
    ] {
        let o = lineage(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    }
    // A secret key given as the public key: refused without echoing it.
    let key = dir.path().join("k").display().to_string();
    assert_eq!(code(&lineage(&["keygen", "--out", &key])), 0);
    let o = lineage(&[
        "verify",
        "--store",
        &store,
        "--public-key",
        &format!("{key}.key"),
    ]);
    assert_eq!(code(&o), 2);
    let secret = std::fs::read_to_string(format!("{key}.key")).unwrap();
    let b64 = secret.trim().rsplit(':').next().unwrap();
    assert!(!stderr(&o).contains(b64));
}

#[test]
fn repair_and_sweep_on_a_clean_store_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = demo_store(dir.path());
    let o = lineage(&["repair", "--store", &store, "--grace", "1m"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("0 adopted, 0 missing, 0 refused, 0 orphans not adopted"),
        "{}",
        stdout(&o)
    );
    let o = lineage(&["sweep", "--store", &store, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["removed"].as_array().unwrap().len(), 0);
    let o = lineage(&["sweep", "--store", &store, "--older-than", "10s"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("at least 60s"));
}

//! `lineage seal --tsa URL` and `lineage verify --tsa-root CA.pem` end to end, with the
//! stored request and response then checked by `openssl ts -verify` alone, as
//! docs/audit-guide.md shows an auditor.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use lineage_store::internal::keys;

use super::tsa::{self, Answer, Pki, Setup, Tsa};
use crate::support::{lineage, ndjson, text};

fn append(store: &str, tag: &str) {
    let o = lineage(
        &["append", "--store", store],
        Some(ndjson("r1", 4, tag).as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

fn seal(store: &str, tsa: &str) -> (i32, String) {
    let o = lineage(&["seal", "--store", store, "--tsa", tsa], None);
    let (out, err) = text(&o);
    (o.status.code().unwrap(), format!("{out}{err}"))
}

/// `openssl ts -verify` with these arguments, run in the store's directory: (ok, output).
fn openssl_verify(dir: &Path, args: &[&str]) -> (bool, String) {
    let o = Command::new("openssl")
        .arg("ts")
        .arg("-verify")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success() && all.contains("Verification: OK"), all)
}

#[test]
fn seal_tsa_stores_a_token_that_verify_and_openssl_accept() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let server = Tsa::start(pki.clone());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().to_str().unwrap();
    append(store, "a");
    let (code, out) = seal(store, &server.url);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("time of seal 1 backed by {}", server.url)),
        "{out}"
    );
    let tsq = keys::timestamp_query_key(1);
    let tsr = keys::timestamp_reply_key(1);
    let seal1 = keys::seal_key(1);
    assert!(out.contains(&tsr), "{out}");
    let ca = pki.path("ca.pem");
    let ca = ca.to_str().unwrap();

    // Our verify: checked with the root, listed without.
    let o = lineage(&["verify", "--store", store, "--tsa-root", ca], None);
    let (v, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert!(
        v.contains("1 of 1 seals' times backed by a TSA token that checked against --tsa-root"),
        "{v}"
    );
    assert!(v.contains("signed by CN=Test TSA"), "{v}");
    let o = lineage(&["verify", "--store", store], None);
    let (v, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert!(
        v.contains("1 seals carry an RFC 3161 request or token, NOT checked"),
        "{v}"
    );
    let o = lineage(
        &["verify", "--store", store, "--tsa-root", ca, "--json"],
        None,
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["seal_times"][0]["seq"], 1);
    assert_eq!(j["seal_times"][0]["checked"], true);
    assert_eq!(j["seal_times_checked"], true);

    // The audit report: the TSA's time beside `sealed_utc`, checked.
    let tsa_utc = j["seal_times"][0]["tsa_utc"].as_str().unwrap().to_string();
    let sealed_utc = j["seal_times"][0]["sealed_utc"]
        .as_str()
        .unwrap()
        .to_string();
    let o = lineage(
        &[
            "report",
            "--store",
            store,
            "--tsa-root",
            ca,
            "--format",
            "md",
            "--out",
            "-",
        ],
        None,
    );
    let (md, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{md}");
    assert!(
        md.contains(&format!("sealed {sealed_utc}, TSA time {tsa_utc} (RFC 3161 token checked against the given TSA root)")),
        "{md}"
    );
    let o = lineage(
        &["report", "--store", store, "--format", "json", "--out", "-"],
        None,
    );
    let rj: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rj["checked"]["head"]["tsa_utc"], tsa_utc.as_str());
    assert_eq!(rj["checked"]["head"]["tsa_checked"], false);
    assert_eq!(rj["timeline"]["points"][0]["tsa_utc"], tsa_utc.as_str());

    // OpenSSL alone: the token against the stored request (imprint and nonce), and
    // against the seal's own bytes.
    let (ok, why) = openssl_verify(
        dir.path(),
        &["-queryfile", &tsq, "-in", &tsr, "-CAfile", ca],
    );
    assert!(ok, "{why}");
    let (ok, why) = openssl_verify(dir.path(), &["-data", &seal1, "-in", &tsr, "-CAfile", ca]);
    assert!(ok, "{why}");

    // A changed seal: OpenSSL refuses its token, our verify names it.
    let path = dir.path().join(&seal1);
    let bytes = std::fs::read(&path).unwrap();
    let mut changed = bytes.clone();
    let i = changed.iter().position(|&b| b == b'{').unwrap();
    changed.insert(i + 1, b' ');
    std::fs::write(&path, &changed).unwrap();
    let (ok, why) = openssl_verify(dir.path(), &["-data", &seal1, "-in", &tsr, "-CAfile", ca]);
    assert!(!ok, "{why}");
    assert!(why.contains("message imprint mismatch"), "{why}");
    let o = lineage(&["verify", "--store", store, "--tsa-root", ca], None);
    let (v, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{v}");
    assert!(v.contains(&format!("PROBLEM bad_timestamp: {tsq}")), "{v}");
    std::fs::write(&path, &bytes).unwrap();

    // A changed token: both refuse it.
    let rpath = dir.path().join(&tsr);
    let good = std::fs::read(&rpath).unwrap();
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 10] ^= 0x55;
    std::fs::write(&rpath, &bad).unwrap();
    let (ok, why) = openssl_verify(
        dir.path(),
        &["-queryfile", &tsq, "-in", &tsr, "-CAfile", ca],
    );
    assert!(!ok, "{why}");
    let o = lineage(&["verify", "--store", store, "--tsa-root", ca], None);
    let (v, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{v}");
    assert!(v.contains(&format!("PROBLEM bad_timestamp: {tsr}")), "{v}");
    std::fs::write(&rpath, &good).unwrap();
    let o = lineage(&["verify", "--store", store, "--tsa-root", ca], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn a_tsa_that_is_down_does_not_stop_sealing_and_the_next_seal_catches_up() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().to_str().unwrap();
    append(store, "a");
    let (code, out) = seal(store, &tsa::down_url());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("sealed _lineage/seals/"), "{out}");
    assert!(out.contains("time of seal 1 NOT backed:"), "{out}");
    assert!(out.contains("could not connect"), "{out}");
    assert!(
        out.contains("the next `lineage seal --tsa URL` asks again"),
        "{out}"
    );
    assert!(dir.path().join(keys::seal_key(1)).exists());
    assert!(!dir.path().join(keys::timestamp_reply_key(1)).exists());
    let ca = pki.path("ca.pem");
    let ca = ca.to_str().unwrap();
    let o = lineage(
        &[
            "verify",
            "--store",
            store,
            "--tsa-root",
            ca,
            "--grace",
            "0s",
        ],
        None,
    );
    let (v, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{v}");
    assert!(
        v.contains(&format!(
            "PROBLEM seal_time_unbacked: {}",
            keys::seal_key(1)
        )),
        "{v}"
    );

    // A TSA answering garbage: still sealed, still said.
    let server = Tsa::start(pki.clone());
    server.set(Answer::Garbage);
    append(store, "b");
    let (code, out) = seal(store, &server.url);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("time of seal 1 NOT backed: the TSA's answer: not a TimeStampResp"),
        "{out}"
    );
    assert!(
        out.contains("1 more seals await a TSA time (seals 1, 2)"),
        "{out}"
    );

    // Back up: nothing new to seal, and both times are added, oldest first.
    server.set(Answer::Token);
    let (code, out) = seal(store, &server.url);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing new since seal 2"), "{out}");
    let s1 = out
        .find("time of seal 1 backed")
        .unwrap_or_else(|| panic!("{out}"));
    let s2 = out
        .find("time of seal 2 backed")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(s1 < s2, "{out}");
    let o = lineage(
        &[
            "verify",
            "--store",
            store,
            "--tsa-root",
            ca,
            "--grace",
            "0s",
        ],
        None,
    );
    let (v, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert!(v.contains("2 of 2 seals' times backed"), "{v}");
}

#[test]
fn bad_tsa_arguments_are_refused_before_sealing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().to_str().unwrap();
    append(store, "a");
    let o = lineage(
        &["seal", "--store", store, "--tsa", "ftp://tsa.example/"],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--tsa"), "{err}");
    assert!(!dir.path().join(keys::seal_key(1)).exists());
    let notpem = dir.path().join("not.pem");
    std::fs::write(&notpem, "hello").unwrap();
    let o = lineage(
        &[
            "verify",
            "--store",
            store,
            "--tsa-root",
            notpem.to_str().unwrap(),
        ],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--tsa-root"), "{err}");
}

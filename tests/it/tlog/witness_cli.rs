//! Outside witnesses on the command line (issue 36 item 5): `seal --witness-url
//! --witness-key` pushes each checkpoint and survives a witness that never answers (exit
//! 0, the witness named); `verify --witness-key [--witness-quorum]` names the keys that held.
//! The witnesses are the test doubles of [`super::witness_double`].

use lineage_store::internal::keys;

use super::witness_double::{Silent, Witness};
use crate::support::{lineage, ndjson, text};

#[test]
fn the_cli_pushes_on_seal_survives_a_silent_witness_and_verify_names_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    let prefix = dir.path().join("k");
    let prefix = prefix.to_str().unwrap();
    let o = lineage(
        &["keygen", "--out", prefix, "--origin", "example.org/wit"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let log = std::fs::read_to_string(format!("{prefix}.vkey")).unwrap();
    let key = format!("{prefix}.key");
    let w = Witness::start("witness.example/cli", 51);
    w.trust(log.trim());
    let silent = Silent::start();
    let mute = Witness::start("witness.example/mute", 52);
    let o = lineage(
        &["append", "--store", s],
        Some(ndjson("run-a", 5, "a").as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let wk = w.vkey();
    let mk = mute.vkey();
    let args = [
        "seal",
        "--store",
        s,
        "--signing-key",
        &key,
        "--origin",
        "example.org/wit",
        "--witness-url",
        &w.url,
        "--witness-key",
        &wk,
        "--witness-url",
        &silent.url,
        "--witness-key",
        &mk,
        "--witness-timeout",
        "1s",
    ];
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    // The seal succeeds (exit 0); the silent witness is named with why.
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let k1 = keys::cosignature_key(1, &wk);
    assert!(
        out.lines().any(|l| l
            .starts_with("checkpoint of seal 1 cosigned by witness witness.example/cli (")
            && l.ends_with(&format!("(consistency proof from size 0): {k1}"))),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("witness witness.example/mute (")
                && l.contains(
                    "did NOT cosign seal 1 (unreachable): no answer: no answer within the timeout"
                )
                && l.contains("the seal stands")),
        "{out}"
    );
    assert!(std::path::Path::new(s).join(&k1).exists());

    // Nothing new to seal: the newest checkpoint's stored cosignature stands, nothing sent.
    let args = [
        "seal",
        "--store",
        s,
        "--signing-key",
        &key,
        "--origin",
        "example.org/wit",
        "--witness-url",
        &w.url,
        "--witness-key",
        &wk,
    ];
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("nothing new since seal 1"), "{out}");
    assert!(
        out.lines().any(|l| l
            .starts_with("checkpoint of seal 1 cosigned by witness witness.example/cli (")
            && l.ends_with(&format!("(stored before): {k1}"))),
        "{out}"
    );
    assert_eq!(w.seen(), vec![(0, 200)]);

    // A URL without its key is refused before anything is sealed.
    let o = lineage(
        &[
            "seal",
            "--store",
            s,
            "--signing-key",
            &key,
            "--witness-url",
            &w.url,
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("give one --witness-key per --witness-url"),
        "{err}"
    );

    // verify: the witness that cosigned held; the one that did not is named.
    let o = lineage(&["verify", "--store", s, "--witness-key", &wk], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("anchor witness_keys held: seal 1's checkpoint cosigned by 1 of 1 witness keys (quorum 1): witness.example/cli cosigned at "), "{out}");
    let o = lineage(
        &[
            "verify",
            "--store",
            s,
            "--witness-key",
            &wk,
            "--witness-key",
            &mk,
            "--json",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["witness_keys"][0]["cosigned"], true);
    assert_eq!(v["witness_keys"][1]["cosigned"], false);
    let p = &v["problems"][0];
    assert_eq!(p["kind"], "bad_cosignature");
    assert_eq!(p["key"], keys::cosignature_key(1, &mk));
    // A quorum above the keys given, and a log key given as a witness key, are refused.
    let o = lineage(
        &[
            "verify",
            "--store",
            s,
            "--witness-key",
            &wk,
            "--witness-quorum",
            "2",
        ],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--witness-quorum 2: must be from 1 to the number of witness keys given (1)"),
        "{err}"
    );
    let o = lineage(&["verify", "--store", s, "--witness-key", log.trim()], None);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--witness-key") && err.contains("a log's signing key (type 0x01)"),
        "{err}"
    );
}

//! `--witness-key VKEY… [--witness-quorum K]` on every command that reads sealed history
//! (issue 38): `files`, `scan`, `export openlineage` refuse (exit 1, nothing on standard
//! output, the key named) unless the quorum of witnesses cosigned the newest seal's
//! checkpoint, and say on standard error which did; `report` states the quorum among its
//! anchors. The cosignatures are made by the witness doubles of [`super::witness_double`]
//! through `seal --witness-url`, as `lineage` stores them.

use lineage_store::internal::keys;

use super::witness_double::Witness;
use crate::support::{lineage, ndjson, text};

/// A store with one signed seal whose checkpoint witnesses `a` and `b` cosigned, and the
/// verifier keys of `a`, `b` and of `mute` (which never saw it).
struct Sealed {
    _dir: tempfile::TempDir,
    store: String,
    a: String,
    b: String,
    mute: String,
}

fn sealed() -> Sealed {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s").to_str().unwrap().to_string();
    let prefix = dir.path().join("k").to_str().unwrap().to_string();
    let o = lineage(
        &["keygen", "--out", &prefix, "--origin", "example.org/wk"],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let log = std::fs::read_to_string(format!("{prefix}.vkey")).unwrap();
    let (wa, wb) = (
        Witness::start("witness.example/a", 61),
        Witness::start("witness.example/b", 62),
    );
    wa.trust(log.trim());
    wb.trust(log.trim());
    let rows = ndjson("run-a", 4, "a");
    let o = lineage(&["append", "--store", &store], Some(rows.as_bytes()));
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let (a, b) = (wa.vkey(), wb.vkey());
    let key = format!("{prefix}.key");
    let args = [
        "seal",
        "--store",
        &store,
        "--signing-key",
        &key,
        "--origin",
        "example.org/wk",
        "--witness-url",
        &wa.url,
        "--witness-key",
        &a,
        "--witness-url",
        &wb.url,
        "--witness-key",
        &b,
    ];
    let o = lineage(&args, None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let mute = Witness::start("witness.example/mute", 63).vkey();
    Sealed {
        _dir: dir,
        store,
        a,
        b,
        mute,
    }
}

/// `cmd` with the store and `extra` arguments.
fn run(cmd: &[&str], s: &Sealed, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args: Vec<&str> = cmd.to_vec();
    args.extend(["--store", &s.store]);
    args.extend(extra);
    let o = lineage(&args, None);
    let (out, err) = text(&o);
    (o.status.code(), out, err)
}

/// The quorum met, missed, and a malformed key, for a command that refuses before reading.
fn refuses_unless_cosigned(cmd: &[&str]) {
    let s = sealed();
    let both = ["--witness-key", &s.a, "--witness-key", &s.b];
    let (code, out, err) = run(cmd, &s, &both);
    assert_eq!(code, Some(0), "{cmd:?}: {out}{err}");
    assert!(!out.is_empty(), "{cmd:?}: {err}");
    assert!(
        err.lines().any(|l| l.starts_with(
            "anchor witness_keys held: seal 1's checkpoint cosigned by 2 of 2 witness keys (quorum 2): witness.example/a cosigned at "
        ) && l.contains("; witness.example/b cosigned at ")),
        "{cmd:?}: {err}"
    );

    // The mute witness never cosigned: refused, naming it and its object; nothing read.
    let missed = ["--witness-key", &s.a, "--witness-key", &s.mute];
    let (code, out, err) = run(cmd, &s, &missed);
    assert_eq!(code, Some(1), "{cmd:?}: {out}{err}");
    assert_eq!(out, "", "{cmd:?}: {err}");
    assert!(
        err.contains("no cosignature by witness witness.example/mute of seal 1, the newest")
            && err.contains(&keys::cosignature_key(1, &s.mute)),
        "{cmd:?}: {err}"
    );
    assert!(!err.contains("anchor witness_keys held"), "{cmd:?}: {err}");
    // One of the two is the quorum asked for: held.
    let one = [&missed[..], &["--witness-quorum", "1"]].concat();
    let (code, out, err) = run(cmd, &s, &one);
    assert_eq!(code, Some(0), "{cmd:?}: {out}{err}");
    assert!(
        err.contains("cosigned by 1 of 2 witness keys (quorum 1)")
            && err.contains("witness.example/mute did NOT: no cosignature stored"),
        "{cmd:?}: {err}"
    );

    // A key that is no witness key: a usage error naming the flag and the key.
    let (code, out, err) = run(cmd, &s, &["--witness-key", "witness.example/x+zz"]);
    assert_eq!(code, Some(2), "{cmd:?}: {out}{err}");
    assert_eq!(out, "", "{cmd:?}: {err}");
    assert!(
        err.contains("--witness-key witness.example/x+zz"),
        "{cmd:?}: {err}"
    );
}

#[test]
fn files_refuses_unless_the_witnesses_cosigned() {
    refuses_unless_cosigned(&["files"]);
}

#[test]
fn scan_refuses_unless_the_witnesses_cosigned() {
    refuses_unless_cosigned(&["scan", "--out", "-"]);
}

#[test]
fn export_openlineage_refuses_unless_the_witnesses_cosigned() {
    refuses_unless_cosigned(&["export", "openlineage"]);
}

#[test]
fn a_read_since_a_seal_judges_the_quorum_on_the_newest_seal() {
    let s = sealed();
    let missed = ["--since-seal", "1", "--witness-key", &s.mute];
    let (code, out, err) = run(&["files"], &s, &missed);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("no cosignature by witness witness.example/mute of seal 1, the newest"),
        "{err}"
    );
    let (code, out, err) = run(
        &["files"],
        &s,
        &["--since-seal", "1", "--witness-key", &s.a],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("anchor witness_keys held: seal 1's checkpoint cosigned by 1 of 1"),
        "{err}"
    );
}

#[test]
fn the_report_states_the_quorum_among_its_anchors() {
    let s = sealed();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let json = json.to_str().unwrap();
    let report = |keys: &[&str]| {
        let mut extra = vec!["--format", "json", "--out", json, "--force"];
        extra.extend(keys);
        let r = run(&["report"], &s, &extra);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        (r, v)
    };
    let ((code, out, err), v) = report(&["--witness-key", &s.a, "--witness-key", &s.b]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("anchor witness_keys held: seal 1's checkpoint cosigned by 2 of 2 witness keys (quorum 2)"), "{out}");
    let anchors = v["verdict"]["anchors"].as_array().unwrap();
    assert_eq!(anchors.len(), 1, "{anchors:?}");
    assert_eq!(anchors[0]["anchor"], "witness_keys");
    assert_eq!(anchors[0]["held"], true);
    let found = v["checked"]["witness_keys"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0]["name"], "witness.example/a");
    assert_eq!(found[1]["cosigned"], true);

    // The mute witness: the report is written, the verdict names it (exit 1).
    let ((code, out, err), v) = report(&["--witness-key", &s.a, "--witness-key", &s.mute]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("anchor witness_keys FAILED"), "{out}");
    assert_eq!(v["verdict"]["clean"], false);
    assert_eq!(v["verdict"]["anchors"][0]["held"], false);
    assert_eq!(v["checked"]["witness_keys"][1]["cosigned"], false);
    let groups = serde_json::to_string(&v["verdict"]["groups"]).unwrap();
    assert!(
        groups.contains("no cosignature by witness witness.example/mute of seal 1, the newest"),
        "{groups}"
    );
    let (code, _, err) = run(
        &["report"],
        &s,
        &["--out", json, "--force", "--witness-key", "x"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--witness-key x"), "{err}");
}

#[test]
fn seals_and_show_judge_the_quorum_too() {
    let s = sealed();
    // seals: listed all the same, the key that did not cosign named, exit 1.
    let (code, out, err) = run(
        &["seals"],
        &s,
        &["--witness-key", &s.a, "--witness-key", &s.mute],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.starts_with("seal 1 "), "{out}");
    assert!(
        err.contains("PROBLEM ")
            && err.contains("no cosignature by witness witness.example/mute of seal 1, the newest"),
        "{err}"
    );
    let (code, out, err) = run(&["seals"], &s, &["--witness-key", &s.a]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("anchor witness_keys held: seal 1's checkpoint cosigned by 1 of 1"),
        "{err}"
    );
    // show: refused before anything is shown.
    let (code, out, err) = run(&["show", "1"], &s, &["--witness-key", &s.mute]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(out, "", "{err}");
    assert!(err.contains("witness.example/mute"), "{err}");
    let (code, out, err) = run(&["show", "1"], &s, &["--witness-key", &s.b]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("witness.example/b cosigned at "), "{err}");
}

//! Disk full and permission denied on local disk, through the CLI where the machine allows
//! the real condition:
//!
//! - **ENOSPC**: the store lives on a tmpfs of its own with a size limit (mounting needs
//!   root or CAP_SYS_ADMIN), filled until `append` runs out of space in the middle of
//!   writing a part, and then exactly at the pointer (the part fits, its pointer does not).
//! - **EACCES**: the store's directories are made read-only (mode 0555). Root ignores mode
//!   bits, so as root the CLI runs with dropped privileges (`setpriv` to uid/gid 65534,
//!   with the store owned by that user); as any other user it runs as is.
//!
//! Where neither is possible the test runs the same checks in-process with an injected
//! writer error ([`InjectedWriteError`]: the temp is created and partly written, then the
//! write fails), and says so on stderr: it never passes silently. Each test prints which
//! variant ran. `LINEAGE_TEST_INJECTED_DISK_FAULTS=1` forces the fallbacks.
//!
//! Expected every time: exit 2 with an error naming the object and the OS error, the temp
//! removed, nothing partial visible, every prior byte unchanged, `verify` clean (or, when
//! the part landed and its pointer did not, exactly the orphan the failure table
//! documents, which `repair` adopts).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use lineage_store::internal::input::parse_validated;
use lineage_store::internal::posix::InjectedWriteError;
use lineage_store::verify_with;
use lineage_store::Format;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind;
use lineage_store::VerifyOptions;
use lineage_store::{ErrorKind, Writer};

use crate::support::{self, text};

const ENOSPC: i32 = 28;
const EACCES: i32 = 13;
/// Uid and gid the CLI drops to when the test runs as root (`nobody` on most systems).
const UNPRIVILEGED: u32 = 65_534;

/// Say which variant ran, where it is seen (libtest captures `eprintln!`).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// NDJSON of one run and one CRS whose strings do not compress (so a part spans many
/// pages), `n` events.
fn noisy_ndjson(run_id: &str, n: usize) -> String {
    use sha2::{Digest, Sha256};
    let mut s = String::new();
    for i in 0..n {
        let h = hex::encode(Sha256::digest(format!("{run_id}/{i}")));
        s.push_str(
            &serde_json::json!({
                "event_id": format!("{run_id}-{i}-{h}"),
                "run_id": run_id,
                "sequence": i as i64,
                "event_time_utc": "2026-07-13T06:00:00Z",
                "stage": "reproject",
                "event_type": "crs_transform",
                "feature_id": h,
                "source_crs": "EPSG:4326",
                "target_crs": "EPSG:3857",
                "outcome": "transformed",
                "strategy_index": 0,
                "accuracy_m": (i as f64) / 7.0,
                "rejection_reason": null,
                "tool_version": "test/1",
                "audit_tag": &h[..16],
            })
            .to_string(),
        );
        s.push('\n');
    }
    s
}

/// Every file under `root` (hidden ones too) → sha256, and every directory.
fn snapshot(root: &Path) -> (BTreeMap<String, String>, Vec<String>) {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, String>, dirs: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if p.is_dir() {
                dirs.push(rel);
                walk(root, &p, files, dirs);
            } else {
                let b = std::fs::read(&p).unwrap();
                files.insert(rel, lineage_store::internal::encode::sha256_hex(&b));
            }
        }
    }
    let (mut files, mut dirs) = (BTreeMap::new(), Vec::new());
    walk(root, root, &mut files, &mut dirs);
    dirs.sort();
    (files, dirs)
}

/// Temps anywhere in the store.
fn temps(root: &Path) -> Vec<String> {
    snapshot(root)
        .0
        .into_keys()
        .filter(|k| k.ends_with(".tmp"))
        .collect()
}

/// Files added since `before` (the prior files must all be unchanged).
fn added_since(before: &BTreeMap<String, String>, root: &Path) -> Vec<String> {
    let (now, _) = snapshot(root);
    for (k, sha) in before {
        assert_eq!(now.get(k), Some(sha), "prior file {k} changed or vanished");
    }
    now.into_keys()
        .filter(|k| !before.contains_key(k))
        .collect()
}

/// Run the CLI, optionally under a command prefix (e.g. `setpriv ...`).
fn cli(prefix: &[String], args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let bin = env!("CARGO_BIN_EXE_lineage");
    let mut cmd = match prefix.split_first() {
        Some((p, rest)) => {
            let mut c = Command::new(p);
            c.args(rest).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let mut child = cmd
        .args(args)
        .env_remove("LINEAGE_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.as_bytes()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// The prior content every test starts from, through the CLI: run `prior`, 2 commits.
fn append_prior(store: &Path) {
    let prior = support::ndjson("prior", 20, "prior");
    let s = store.to_str().unwrap();
    let o = cli(&[], &["append", "--store", s, "--batch-rows", "10"], &prior);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(
        snapshot(store).0.len(),
        7,
        "2 parts, 2 pointers, 2 commit-index entries and the store's identity"
    );
}

fn append(prefix: &[String], store: &Path, stdin: &str) -> Output {
    let s = store.to_str().unwrap();
    cli(prefix, &["append", "--store", s, "--json"], stdin)
}

/// `lineage verify --json` (as the test's own user), parsed.
fn verify_json(store: &Path, grace: &str) -> (Option<i32>, serde_json::Value) {
    let o = cli(
        &[],
        &[
            "verify",
            "--store",
            store.to_str().unwrap(),
            "--json",
            "--grace",
            grace,
        ],
        "",
    );
    let (out, err) = text(&o);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (o.status.code(), v)
}

/// Assert a verify report is clean with `commits` commits.
fn assert_clean(store: &Path, commits: u64) {
    let (code, v) = verify_json(store, "0s");
    assert_eq!(code, Some(0), "{v:#}");
    assert_eq!(v["commits"], commits, "{v:#}");
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v:#}");
}

/// The error line of a failed append, which must be exit 2.
fn error_line(o: &Output) -> String {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "stdout: {out}\nstderr: {err}");
    assert!(out.is_empty(), "a failed append printed a commit: {out}");
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"))
        .to_string();
    say(&format!("  exit 2, {line}"));
    line
}

/// `LINEAGE_TEST_INJECTED_DISK_FAULTS=1` runs the injected fallbacks even where the real
/// conditions can be made (to test the fallbacks themselves).
fn forced_fallback() -> Option<String> {
    (std::env::var("LINEAGE_TEST_INJECTED_DISK_FAULTS").as_deref() == Ok("1"))
        .then(|| "LINEAGE_TEST_INJECTED_DISK_FAULTS=1".to_string())
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("probe");
    std::fs::write(&f, b"").unwrap();
    std::fs::metadata(&f).unwrap().uid() == 0
}

/// A size-limited tmpfs, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, bytes: u64) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let o = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={bytes},mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// Bytes still free.
    fn free(&self) -> u64 {
        let s = rustix::fs::statvfs(&self.dir).unwrap();
        s.f_bavail * s.f_frsize
    }

    /// Grow or shrink the filler file until exactly `bytes` are free (page-aligned).
    fn leave_free(&self, bytes: u64) {
        let filler = self.dir.join("filler");
        let have = std::fs::metadata(&filler).map(|m| m.len()).unwrap_or(0);
        let want = have + self.free() - bytes;
        std::fs::write(&filler, vec![0xa5u8; want as usize]).unwrap();
        assert_eq!(self.free(), bytes, "tmpfs accounting");
    }

    fn remove_filler(&self) {
        std::fs::remove_file(self.dir.join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

const PAGE: u64 = 4096;

/// How big the part of `input` is, from an append to a scratch store on ordinary disk.
fn part_size(scratch: &Path, input: &str) -> u64 {
    let o = append(&[], scratch, input);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let p: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    p["size_bytes"].as_u64().unwrap()
}

#[test]
fn disk_full_mid_part_and_at_the_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small-fs");
    let fs = match forced_fallback().map_or_else(|| Tmpfs::mount(&mnt, 8 << 20), Err) {
        Ok(fs) => fs,
        Err(why) => {
            say(&format!(
                "disk_full: RAN THE INJECTED FALLBACK (an ENOSPC writer error in-process), not a real full disk: {why}"
            ));
            return injected_disk_full(dir.path());
        }
    };
    say("disk_full: real ENOSPC on an 8 MiB tmpfs, through the CLI");
    let store = mnt.join("store");
    append_prior(&store);
    let (before, _) = snapshot(&store);

    let big = noisy_ndjson("big", 3000);
    let size = part_size(&dir.path().join("scratch"), &big);
    let pages = size.div_ceil(PAGE);
    assert!(pages > 8, "the part should span many pages: {size} bytes");

    // 1. The part does not fit: ENOSPC in the middle of writing its temp.
    fs.leave_free((pages / 2) * PAGE);
    let line = error_line(&append(&[], &store, &big));
    assert!(line.contains("No space left on device"), "{line}");
    assert!(
        line.contains(store.to_str().unwrap())
            && line.contains("run_id=big/target_crs=EPSG:3857/.part-"),
        "the error names the part being written: {line}"
    );
    assert_eq!(temps(&store), Vec::<String>::new(), "the temp was removed");
    assert_eq!(
        added_since(&before, &store),
        Vec::<String>::new(),
        "nothing new is visible"
    );
    fs.remove_filler();
    assert_clean(&store, 2);

    // 2. The part fits exactly, its pointer does not: the failure table's orphan part.
    fs.leave_free(pages * PAGE);
    let line = error_line(&append(&[], &store, &big));
    assert!(line.contains("No space left on device"), "{line}");
    assert!(line.contains("_lineage/commits/run_id=big/."), "{line}");
    assert_eq!(
        temps(&store),
        Vec::<String>::new(),
        "the pointer's temp was removed"
    );
    let added = added_since(&before, &store);
    assert_eq!(added.len(), 1, "only the complete part: {added:?}");
    assert!(
        added[0].starts_with("run_id=big/target_crs=EPSG:3857/part-"),
        "{added:?}"
    );
    assert_eq!(
        std::fs::metadata(store.join(&added[0])).unwrap().len(),
        size
    );
    fs.remove_filler();
    let (code, v) = verify_json(&store, "0s");
    assert_eq!(code, Some(1), "{v:#}");
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{v:#}");
    assert_eq!(problems[0]["kind"], "orphan_part", "{v:#}");
    assert_eq!(problems[0]["key"], added[0].as_str(), "{v:#}");
    // Recovery: repair adopts it by name, and the store verifies clean with the third
    // commit once the adopted commit is accepted (the operator knows its writer).
    let o = cli(
        &[],
        &[
            "repair",
            "--store",
            store.to_str().unwrap(),
            "--grace",
            "0s",
            "--adopt",
            &added[0],
        ],
        "",
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let (code, v) = verify_json(&store, "0s");
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["problems"][0]["kind"], "adopted_commit", "{v:#}");
    let o = cli(
        &[],
        &[
            "verify",
            "--store",
            store.to_str().unwrap(),
            "--grace",
            "0s",
            "--accept-adopted",
            "--json",
        ],
        "",
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (v["commits"].as_u64(), v["adopted"].as_u64()),
        (Some(3), Some(1)),
        "{v:#}"
    );
    added_since(&before, &store);
    drop(fs);
}

/// The fallback: the same checks in-process, with an ENOSPC injected into the temp write.
fn injected_disk_full(dir: &Path) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let root = dir.join("store");
        append_prior(&root);
        let plain = PosixPublisher::new(&root);
        let (before, _) = snapshot(&root);
        let big = parse_validated(noisy_ndjson("big", 3000).into(), Format::Ndjson).unwrap();
        for (key, landed) in [("run_id=big/", 0), ("_lineage/commits/run_id=big/", 1)] {
            let full = PosixPublisher::new(&root).with_injected_write_error(InjectedWriteError {
                key_contains: key.into(),
                after_bytes: 100,
                errno: ENOSPC,
            });
            let e = Writer::new(Arc::new(full))
                .append(&big, |_| {})
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Io, "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains("No space left on device") && msg.contains(key),
                "{msg}"
            );
            assert_eq!(temps(&root), Vec::<String>::new());
            assert_eq!(added_since(&before, &root).len(), landed);
        }
        let report = verify_with(
            &plain,
            &VerifyOptions {
                grace: chrono::Duration::zero(),
                ..VerifyOptions::default()
            },
        )
        .await
        .unwrap();
        let kinds: Vec<ProblemKind> = report.problems.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            vec![ProblemKind::OrphanPart],
            "{:?}",
            report.problems
        );
    });
}

/// How the CLI runs so that a read-only directory denies it: as is (not root), or with
/// dropped privileges (root, through setpriv); `None` when neither works.
fn unprivileged_prefix() -> Result<Vec<String>, String> {
    if !is_root() {
        return Ok(Vec::new());
    }
    let prefix: Vec<String> = [
        "setpriv",
        &format!("--reuid={UNPRIVILEGED}"),
        &format!("--regid={UNPRIVILEGED}"),
        "--clear-groups",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let o = Command::new(&prefix[0])
        .args(&prefix[1..])
        .arg(env!("CARGO_BIN_EXE_lineage"))
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run setpriv: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "setpriv cannot drop to uid {UNPRIVILEGED} or run the binary as it: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(prefix)
}

/// Owner and mode of every directory of the store (files keep theirs).
fn set_dirs(root: &Path, owner: Option<u32>, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let mut all = vec![root.to_path_buf()];
    all.extend(snapshot(root).1.into_iter().map(|d| root.join(d)));
    for d in &all {
        if let Some(uid) = owner {
            std::os::unix::fs::chown(d, Some(uid), Some(uid)).unwrap();
        }
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    if let Some(uid) = owner {
        for f in snapshot(root).0.keys() {
            std::os::unix::fs::chown(root.join(f), Some(uid), Some(uid)).unwrap();
        }
    }
}

#[test]
fn permission_denied_on_a_read_only_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    append_prior(&store);
    let prefix = match forced_fallback().map_or_else(unprivileged_prefix, Err) {
        Ok(p) => p,
        Err(why) => {
            say(&format!(
                "permission_denied: RAN THE INJECTED FALLBACK (an EACCES writer error in-process), not a real read-only directory: {why}"
            ));
            return injected_permission_denied(&store);
        }
    };
    if prefix.is_empty() {
        say("permission_denied: real EACCES, read-only directories, CLI as the test's own user");
    } else {
        say(&format!(
            "permission_denied: real EACCES, read-only directories, CLI run by root with dropped privileges (setpriv to uid {UNPRIVILEGED})"
        ));
        // The unprivileged user must reach the store at all, and own it (so only the mode
        // bits deny it).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let owner = (!prefix.is_empty()).then_some(UNPRIVILEGED);
    set_dirs(&store, owner, 0o555);
    let (before, dirs_before) = snapshot(&store);

    // An existing partition (the temp cannot be created) and a new run (its directory
    // cannot be created): both refused, naming what could not be written.
    for (input, names) in [
        (
            support::ndjson("prior", 5, "more"),
            "run_id=prior/target_crs=EPSG:",
        ),
        (
            support::ndjson("fresh", 5, "fresh"),
            "run_id=fresh/target_crs=EPSG:",
        ),
    ] {
        let line = error_line(&append(&prefix, &store, &input));
        assert!(line.contains("Permission denied"), "{line}");
        assert!(
            line.contains(store.to_str().unwrap()) && line.contains(names),
            "{line}"
        );
        assert_eq!(temps(&store), Vec::<String>::new());
        assert_eq!(added_since(&before, &store), Vec::<String>::new());
        assert_eq!(snapshot(&store).1, dirs_before, "no directory was created");
    }
    set_dirs(&store, owner, 0o755);
    assert_clean(&store, 2);
}

/// The fallback: an EACCES injected when the temp is written, in-process.
fn injected_permission_denied(root: &Path) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (before, _) = snapshot(root);
        let denied = PosixPublisher::new(root).with_injected_write_error(InjectedWriteError {
            key_contains: "run_id=prior/".into(),
            after_bytes: 0,
            errno: EACCES,
        });
        let e = Writer::new(Arc::new(denied))
            .append(&support::batches("prior", 5, "more"), |_| {})
            .await
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("Permission denied") && msg.contains(".part-"),
            "{msg}"
        );
        assert_eq!(temps(root), Vec::<String>::new());
        assert_eq!(added_since(&before, root), Vec::<String>::new());
    });
    assert_clean(root, 2);
}

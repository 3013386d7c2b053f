//! `lineage replicate` and `verify --replica-of` through the CLI, on every pair of
//! backends the test command runs: local disk → LocalStack, LocalStack → Azurite,
//! Azurite → local disk, moto → LocalStack. Each pair: several runs, partitions, a commit
//! key and seals; SIGKILLed replications at seeded points, resumed; again (nothing
//! copied); append + seal (only the new objects); a conflict and a corrupt source part;
//! then `verify --replica-of` clean, behind, and naming deleted, edited and extra objects
//! on either side. Signals (`--follow`, SIGTERM, SIGINT) and per-side credentials run on
//! one pair each.

use std::collections::BTreeSet;

use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::keys;
use lineage_store::internal::keys::seal_key;
use lineage_store::read_pointers;
use lineage_store::verify_with;
use lineage_store::ProblemKind;
use lineage_store::VerifyOptions;
use serde_json::Value;

use crate::support::replica::{
    json, kinds_and_keys, replicate_args, rewritten_seal, run, Rng, Running, Side,
};
use crate::support::{self, text, Emulator};

/// Seed of the interruption points: `LINEAGE_TEST_SEED` replays a failure.
fn seed() -> u64 {
    std::env::var("LINEAGE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).unwrap();
            u64::from_le_bytes(b)
        })
}

/// A destination interrupted anywhere is a valid store: at worst orphan parts (and, on
/// local disk, temps of the publishes the kill cut short); and all it holds is the
/// source's bytes under the source's keys.
async fn assert_valid_partial(src: &Side, dst: &Side, ctx: &str) {
    let store = dst.open().await;
    let later = VerifyOptions {
        now: chrono::Utc::now() + chrono::Duration::days(1),
        ..VerifyOptions::default()
    };
    let r = verify_with(store.as_ref(), &later).await.unwrap();
    assert!(
        r.problems
            .iter()
            .all(|p| matches!(p.kind, ProblemKind::OrphanPart | ProblemKind::StaleTemp)),
        "{ctx}: {:#?}",
        r.problems
    );
    let (s, d) = (src.snapshot().await, dst.snapshot().await);
    for (k, digest) in &d {
        assert_eq!(
            s.get(k),
            Some(digest),
            "{ctx}: {k} is not the source's object"
        );
    }
}

/// The source of a pair: two runs over two CRSs, a keyed append, two seals.
/// Returns the number of objects.
async fn build_source(src: &Side) -> usize {
    src.append("run-a", 40, 8, None).await; // 2 CRSs × 20 rows / 8 → 6 commits
    src.seal().await;
    src.append("run-b", 30, 8, Some("job-b")).await; // 4 commits and a claim
    src.seal().await;
    src.snapshot().await.len()
}

fn copied(v: &Value, what: &str) -> u64 {
    v["copied"][what].as_u64().unwrap()
}

async fn pair(src: Side, dst: Side) {
    let seed = seed();
    let ctx = format!("{} → {} (LINEAGE_TEST_SEED={seed})", src.name, dst.name);
    let mut rng = Rng::new(seed);
    let total = build_source(&src).await;
    // The identity, 10 parts, 10 pointers, a claim, 2 seals; 10 index entries, 10 leaf
    // locators, a level-0 tile per seal, 3 Delta versions and 2 head markers; per seal a
    // C2SP tile and entry bundle.
    assert_eq!(
        total,
        1 + 10 + 10 + 1 + 2 + 10 + 10 + 2 + 3 + 2 + 4,
        "{ctx}"
    );

    // Interrupted twice by SIGKILL at seeded points (concurrency 1, then 4), resumed.
    for (round, conc) in [(1, "1"), (2, "4")] {
        let have = dst.snapshot().await.len() as u64;
        // Leave at least one object for the resumed run (and half for round 2).
        let left = total as u64 - have;
        let hi = if round == 1 { left / 2 } else { left - 1 };
        if hi == 0 {
            continue;
        }
        let n = rng.between(1, hi);
        Running::held(&replicate_args(&src, &dst, &["--concurrency", conc]), n).kill();
        assert_valid_partial(
            &src,
            &dst,
            &format!("{ctx}: SIGKILL {round} after {n} publishes"),
        )
        .await;
        assert!(dst.snapshot().await.len() as u64 >= have + n, "{ctx}");
    }
    let before = dst.snapshot().await.len() as u64;
    let o = run(&replicate_args(&src, &dst, &["--json"]), &[]);
    assert_eq!(o.status.code(), Some(0), "{ctx}: {:?}", text(&o));
    let s = json(&o);
    assert_eq!(copied(&s, "objects"), total as u64 - before, "{ctx}: {s}");
    assert_eq!(s["already_present"].as_u64(), Some(before), "{ctx}: {s}");
    assert_eq!(dst.snapshot().await, src.snapshot().await, "{ctx}");
    assert_eq!(s["destination_head"], s["source_head"], "{ctx}");

    // The replica verifies on its own, with the source's head, and against the source.
    let mut a = vec!["verify".to_string()];
    a.extend(dst.args("store"));
    a.push("--json".into());
    let o = run(&a, &[]);
    assert_eq!(o.status.code(), Some(0), "{ctx}: {:?}", text(&o));
    assert_eq!(json(&o)["head"], s["source_head"]["sha256"], "{ctx}");
    let replica_of = |extra: &[&str]| {
        let mut a = vec!["verify".to_string()];
        a.extend(dst.args("store"));
        a.extend(src.args("replica-of"));
        a.extend(extra.iter().map(|s| s.to_string()));
        run(&a, &[])
    };
    let o = replica_of(&["--json"]);
    assert_eq!(o.status.code(), Some(0), "{ctx}: {:?}", text(&o));
    let r = json(&o);
    assert_eq!(r["replica"]["relation"], "identical", "{ctx}: {r}");
    assert_eq!(
        r["replica"]["objects_compared"].as_u64(),
        Some(total as u64)
    );

    // Again: nothing to copy.
    let o = run(&replicate_args(&src, &dst, &[]), &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}: {err}");
    assert!(
        out.contains(&format!(
            "nothing to copy: the destination already holds all {total} objects"
        )),
        "{ctx}: {out}"
    );

    // Append and seal: only the new objects.
    let new = src.append("run-c", 20, 5, None).await; // 2 × 10 / 5 → 4 commits
    src.seal().await;
    let o = run(&replicate_args(&src, &dst, &["--json"]), &[]);
    let s = json(&o);
    assert_eq!(
        (
            copied(&s, "parts"),
            copied(&s, "pointers"),
            copied(&s, "seals"),
            copied(&s, "claims")
        ),
        (new as u64, new as u64, 1, 0),
        "{ctx}: {s}"
    );
    // Per commit a part, a pointer, an index entry and a locator; the seal, its tile, its
    // Delta version and its head marker, its C2SP tile and entry bundle.
    assert_eq!(copied(&s, "objects"), 4 * new as u64 + 6);

    // Behind is not a problem, and is said.
    src.append("run-d", 4, 5, None).await; // 2 commits
    let o = replica_of(&[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}: {out} {err}");
    assert!(
        // Each commit: a part, a pointer and an index entry.
        out.contains("the replica is behind by 2 commits (6 objects)"),
        "{ctx}: {out}"
    );
    assert_eq!(
        run(&replicate_args(&src, &dst, &[]), &[]).status.code(),
        Some(0)
    );

    // Deleted, edited and extra objects on either side, each named.
    let ptrs = read_pointers(src.open().await.as_ref(), Some("run-a"))
        .await
        .unwrap();
    let pkey = |i: usize| keys::pointer_key(&ptrs[i].run_id, &ptrs[i].commit_id);
    dst.raw_delete(&ptrs[0].part_path).await; // deleted from the replica
    src.raw_put(&pkey(1), b"{\"edited\": true}\n").await; // edited at the source
    dst.raw_put("extra.txt", b"dropped in").await; // extra in the replica
    src.raw_put("stray/notes.txt", b"dropped in").await; // extra in the source
    src.raw_delete(&pkey(2)).await; // deleted from the source
    let s1 = dst.get(&seal_key(1)).await.unwrap();
    dst.raw_put(&seal_key(1), &rewritten_seal(&s1)).await; // edited in the replica
    let o = replica_of(&["--json"]);
    assert_eq!(o.status.code(), Some(1), "{ctx}: {:?}", text(&o));
    let r = json(&o);
    let got: BTreeSet<(String, String)> = kinds_and_keys(&r["replica"]["problems"])
        .into_iter()
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("only_in_source", ptrs[0].part_path.clone()),
        ("differs", pkey(1)),
        ("only_in_replica", "extra.txt".into()),
        ("only_in_source", "stray/notes.txt".into()),
        ("only_in_replica", pkey(2)),
        ("differs", seal_key(1)),
        ("diverged", seal_key(1)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(got, want, "{ctx}: {r}");
    let edited_digest = sha256_hex(b"{\"edited\": true}\n");
    assert!(r.to_string().contains(&edited_digest), "{ctx}");
}

/// A fresh pair: a conflicting object at the destination and a corrupt part at the
/// source. Exit 3, both named with their digests, nothing overwritten, the corrupt part
/// (and everything naming it) not copied, the rest copied.
async fn conflict_and_corrupt_source(src: Side, dst: Side) {
    let ctx = format!("{} → {}", src.name, dst.name);
    src.append("run-x", 16, 4, None).await; // 2 × 8 / 4 → 4 commits
    src.seal().await;
    let ptrs = read_pointers(src.open().await.as_ref(), None)
        .await
        .unwrap();
    let pkey = |i: usize| keys::pointer_key(&ptrs[i].run_id, &ptrs[i].commit_id);
    let part0 = ptrs[0].part_path.clone();
    let mut b = src.get(&part0).await.unwrap().to_vec();
    b[20] ^= 0xff; // same size, other bytes
    src.raw_put(&part0, &b).await;
    let theirs = b"{\"someone\": \"else\"}\n";
    dst.raw_put(&pkey(1), theirs).await;
    let ours = sha256_hex(&src.get(&pkey(1)).await.unwrap());

    let o = run(&replicate_args(&src, &dst, &[]), &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{ctx}: {out} {err}");
    assert!(
        err.contains(&format!(
            "conflict at {}: destination sha256 {}, source sha256 {ours}; nothing was overwritten",
            pkey(1),
            sha256_hex(theirs)
        )),
        "{ctx}: {err}"
    );
    assert!(
        out.contains(&format!(
            "REFUSED {part0}: sha256 {} at the source, but its pointer {} records {}",
            sha256_hex(&b),
            pkey(0),
            ptrs[0].sha256
        )),
        "{ctx}: {out}"
    );
    assert!(
        out.contains(&format!("REFUSED {}: ", seal_key(1))),
        "{ctx}: {out}"
    );
    assert_eq!(
        dst.get(&pkey(1)).await.unwrap().as_ref(),
        theirs,
        "{ctx}: overwritten"
    );
    assert!(
        dst.get(&part0).await.is_none() && dst.get(&pkey(0)).await.is_none(),
        "{ctx}"
    );
    assert!(dst.get(&seal_key(1)).await.is_none(), "{ctx}");
    for i in [2, 3] {
        assert!(
            dst.get(&pkey(i)).await.is_some(),
            "{ctx}: commit {i} not copied"
        );
    }
    // A second run says the same and still changes nothing.
    let before = dst.snapshot().await;
    let o = run(&replicate_args(&src, &dst, &["--json"]), &[]);
    assert_eq!(o.status.code(), Some(3));
    let s = json(&o);
    assert_eq!(
        s["conflicts"][0]["key"],
        Value::String(pkey(1)),
        "{ctx}: {s}"
    );
    assert_eq!(copied(&s, "objects"), 0);
    assert_eq!(dst.snapshot().await, before);
}

/// Where a pair's stores are: a fresh source and destination for a test name (`None`
/// when an emulator is switched off), local disks under `dir`.
#[derive(Clone, Copy)]
enum Backend {
    Local,
    LocalStack,
    Moto,
    Azurite,
    SeaweedFs,
}

async fn side(b: Backend, dir: &std::path::Path, test: &str) -> Option<Side> {
    match b {
        Backend::Local => Some(Side::posix(dir, test)),
        Backend::LocalStack => Side::s3(Emulator::LocalStack, test).await,
        Backend::Moto => Side::s3(Emulator::Moto, test).await,
        Backend::Azurite => Side::azurite(test).await,
        Backend::SeaweedFs => Side::s3(Emulator::SeaweedFs, test).await,
    }
}

/// Both scenarios of a pair of backends, each on fresh stores.
async fn backends(from: Backend, to: Backend, test: &str) {
    let dir = tempfile::tempdir().unwrap();
    for (i, run) in ["", "_conflict"].iter().enumerate() {
        let (s, d) = (format!("{test}{run}_src"), format!("{test}{run}_dst"));
        let (Some(src), Some(dst)) = (
            side(from, dir.path(), &s).await,
            side(to, dir.path(), &d).await,
        ) else {
            return;
        };
        if i == 0 {
            pair(src, dst).await;
        } else {
            conflict_and_corrupt_source(src, dst).await;
        }
    }
}

/// Runs everywhere, with no emulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_disk_to_local_disk() {
    backends(Backend::Local, Backend::Local, "repl_local_local").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_disk_to_localstack() {
    backends(Backend::Local, Backend::LocalStack, "repl_local_ls").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localstack_to_azurite() {
    backends(Backend::LocalStack, Backend::Azurite, "repl_ls_az").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_to_local_disk() {
    backends(Backend::Azurite, Backend::Local, "repl_az_local").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moto_to_localstack() {
    backends(Backend::Moto, Backend::LocalStack, "repl_moto_ls").await;
}

/// SeaweedFS (a real S3 server that lists in its own order) as destination and source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_disk_to_seaweedfs_to_local_disk() {
    backends(Backend::Local, Backend::SeaweedFs, "repl_local_sw").await;
    backends(Backend::SeaweedFs, Backend::Local, "repl_sw_local").await;
}

/// Nothing half-published after a signal: every part at the destination has its pointer,
/// and no temp is left.
async fn assert_complete_commits(dst: &Side) -> u64 {
    let store = dst.open().await;
    let later = VerifyOptions {
        now: chrono::Utc::now() + chrono::Duration::days(1),
        ..VerifyOptions::default()
    };
    let r = verify_with(store.as_ref(), &later).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.in_flight, 0);
    r.commits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_follow_once_the_commit_in_flight_is_published() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (
        Side::posix(dir.path(), "src"),
        Side::posix(dir.path(), "dst"),
    );
    build_source(&src).await;
    // Held right after the first part (the second object, after the store's identity):
    // the signal comes between a part and its pointer.
    let args = replicate_args(
        &src,
        &dst,
        &[
            "--follow",
            "--interval",
            "1h",
            "--concurrency",
            "1",
            "--json",
        ],
    );
    // Held after the identity and the first part.
    let mut r = Running::held(&args, 2);
    r.signal("TERM");
    r.until("replicate: stopping once the objects in flight are published");
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(0), "{out} {err:#?}");
    let s: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(s["stopped"], true);
    assert_eq!(
        (
            copied(&s, "parts"),
            copied(&s, "pointers"),
            copied(&s, "seals")
        ),
        (1, 1, 0),
        "{s}"
    );
    assert_eq!(assert_complete_commits(&dst).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_copies_new_commits_as_they_land_until_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (
        Side::posix(dir.path(), "src"),
        Side::posix(dir.path(), "dst"),
    );
    let total = build_source(&src).await;
    let mut r = Running::start(
        &replicate_args(&src, &dst, &["--follow", "--interval", "1s"]),
        &[],
    );
    let first = r.until("replicate: pass:");
    assert!(
        first.contains(&format!("copied {total} objects")),
        "{first}"
    );
    let new = src.append("run-later", 10, 5, None).await;
    src.seal().await;
    // Passes before the append copy nothing; the one after copies exactly the new objects.
    let next = r.until("replicate: pass: copied");
    assert!(
        // Per commit a part, a pointer, an index entry and a locator; the seal, its tile,
        // its Delta version and its head marker, its C2SP tile and entry bundle.
        next.contains(&format!("copied {} objects", 4 * new + 6)),
        "{next}"
    );
    r.signal("TERM");
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(0), "{out} {err:#?}");
    assert!(out.contains("stopped by a signal"), "{out}");
    assert_eq!(dst.snapshot().await, src.snapshot().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_interrupts_a_one_shot_run_with_exit_130_and_the_next_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (
        Side::posix(dir.path(), "src"),
        Side::posix(dir.path(), "dst"),
    );
    let total = build_source(&src).await;
    let r = Running::held(&replicate_args(&src, &dst, &["--concurrency", "2"]), 5);
    r.signal("INT");
    let (code, out, err) = r.finish();
    assert_eq!(code, Some(130), "{out} {err:#?}");
    assert!(out.contains("stopped by a signal"), "{out}");
    let commits = assert_complete_commits(&dst).await;
    assert!((2..total as u64).contains(&commits), "{commits}");
    let o = run(&replicate_args(&src, &dst, &[]), &[]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(dst.snapshot().await, src.snapshot().await);
}

/// Each side's own variables reach only that side: the GCS fake accepts only its token,
/// given as `LINEAGE_TO_GOOGLE_BEARER_TOKEN` while `GOOGLE_BEARER_TOKEN` holds a wrong one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_side_credentials_reach_only_their_side() {
    let fake = support::gcs_fake::GcsFake::start("lineage-side-bucket")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = Side::posix(dir.path(), "src");
    let total = build_source(&src).await;
    let url = format!("gs://{}/{}", fake.bucket(), support::unique_prefix("side"));
    let base = fake.base_url();
    let mut args = vec!["replicate".to_string()];
    args.extend(src.args("from"));
    args.extend(["--to".to_string(), url.clone(), "--json".into()]);
    let wrong = [
        ("GOOGLE_BEARER_TOKEN", "not-the-token"),
        ("LINEAGE_TO_GOOGLE_BASE_URL", base.as_str()),
    ];
    let o = run(&args, &wrong);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("401") || err.contains("Unauthorized"), "{err}");
    let mut right = wrong.to_vec();
    right.push(("LINEAGE_TO_GOOGLE_BEARER_TOKEN", support::FAKE_GCS_TOKEN));
    let o = run(&args, &right);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(copied(&json(&o), "objects"), total as u64);
    // The replica, with the plain variables, against its source.
    let mut v = vec!["verify".to_string(), "--store".into(), url];
    v.extend(src.args("replica-of"));
    let o = run(
        &v,
        &[
            ("GOOGLE_BEARER_TOKEN", support::FAKE_GCS_TOKEN),
            ("GOOGLE_BASE_URL", base.as_str()),
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out} {err}");
    assert!(out.contains("the same seals"), "{out}");
}

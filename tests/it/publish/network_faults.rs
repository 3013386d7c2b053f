//! Injected network faults against real servers: `lineage append` (the CLI, several
//! flushes, with and without `--commit-key`) runs many times through a TCP fault proxy
//! (tests/it/support/fault_proxy.rs) in front of LocalStack and Azurite. The proxy, from a
//! seeded schedule, drops connections before forwarding and after the write landed,
//! stalls past the client's timeout (also delivering the request only after the client
//! gave up), and answers 503/429/500 before or after forwarding.
//!
//! After every run, read directly from the server (not through the proxy):
//! - a run either succeeded with exactly one part and one pointer per flush, or failed
//!   with exit 2 and an error naming the object;
//! - never two parts or two pointers for one flush; every commit the CLI printed is
//!   stored, exactly as printed; no object once seen ever changes or disappears;
//! - `verify` reports nothing but orphan parts of failed runs (the failure table), and a
//!   job retried with its commit key leaves none;
//! - at the end, `repair` adopts the orphans and `verify` is clean.
//!
//! The client timeout is shortened through object_store's own `AWS_TIMEOUT` /
//! `AZURE_TIMEOUT` variables (see src/store/cloud.rs), in the CLI's environment only.
//! `LINEAGE_FAULT_SEED` and `LINEAGE_FAULT_RUNS` repeat or widen a run; the counts of
//! injected faults and outcomes are printed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use lineage_store::internal::keys;
use lineage_store::internal::keys::KeyKind;
use lineage_store::internal::part::read_facts;
use lineage_store::internal::store;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::Pointer;
use lineage_store::ProblemKind;
use lineage_store::StoreOptions;
use lineage_store::VerifyOptions;

use crate::support::fault_proxy::{Counts, Fault, FaultProxy, Schedule};
use crate::support::{self, Emulator};

/// Events per run: two CRS groups of 30, 10 rows per flush → 6 flushes.
const EVENTS: usize = 60;
const BATCH_ROWS: &str = "10";
const FLUSHES: usize = 6;
/// The CLI's request timeout: what a stall waits out.
const CLIENT_TIMEOUT: &str = "2s";
/// Attempts of a keyed job under faults; one more, fault-free, follows if all failed
/// (the platform retries until the network heals).
const KEYED_ATTEMPTS: u64 = 3;

fn seed() -> u64 {
    std::env::var("LINEAGE_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_130)
}

fn runs() -> u64 {
    std::env::var("LINEAGE_FAULT_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
}

/// Faults per 1,000 requests.
fn per_mille() -> u64 {
    std::env::var("LINEAGE_FAULT_PER_MILLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

fn schedule(epoch: u64) -> Schedule {
    Schedule {
        seed: seed(),
        epoch,
        per_mille: per_mille(),
        mix: vec![
            (Fault::DropBefore, 3),
            (Fault::DropAfter, 3),
            (Fault::StallBefore, 1),
            (Fault::StallAfter, 1),
            (Fault::DeliverLate, 1),
            (Fault::Status(503), 2),
            (Fault::Status(429), 1),
            (Fault::Status(500), 1),
            (Fault::StatusAfter(500), 2),
            (Fault::StatusAfter(503), 1),
        ],
        max_stalls: 1,
    }
}

/// One backend under test: the store read directly, and how the CLI reaches it through
/// the proxy.
struct Target {
    name: &'static str,
    url: String,
    direct: Arc<dyn AtomicPublisher>,
    proxy: FaultProxy,
    cli_args: Vec<String>,
    cli_env: Vec<(String, String)>,
}

impl Target {
    /// Run the CLI through the proxy (on a blocking thread: the proxy runs on this runtime).
    async fn run(&self, extra: &[String], stdin: String) -> std::process::Output {
        let mut args = vec!["append".to_string(), "--store".into(), self.url.clone()];
        args.extend(self.cli_args.iter().cloned());
        args.extend(extra.iter().cloned());
        let env = self.cli_env.clone();
        let out = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            support::lineage_env(&args, &env, Some(stdin.as_bytes()))
        })
        .await
        .unwrap();
        // The CLI has exited and its connections are closed; wait until every request the
        // proxy forwarded has its answer, so nothing lands after the checks below.
        self.proxy.idle().await;
        out
    }
}

async fn localstack_target(test: &str) -> Option<Target> {
    s3_target(Emulator::LocalStack, "LocalStack", test).await
}

async fn s3_target(emu: Emulator, name: &'static str, test: &str) -> Option<Target> {
    let endpoint = emu.endpoint(test)?;
    let proxy = FaultProxy::start(&endpoint).await.unwrap();
    let url = support::s3_url(&support::s3_bucket(), test);
    let direct = store::open(&url, &StoreOptions::new().endpoint_url(Some(endpoint)))
        .await
        .unwrap();
    Some(Target {
        name,
        url,
        direct,
        cli_args: vec!["--endpoint-url".into(), proxy.url()],
        cli_env: vec![("AWS_TIMEOUT".into(), CLIENT_TIMEOUT.into())],
        proxy,
    })
}

async fn azurite_target(test: &str) -> Option<Target> {
    let endpoint = Emulator::Azurite.endpoint(test)?;
    let proxy = FaultProxy::start(&endpoint).await.unwrap();
    let url = support::az_url(test);
    let direct = store::open(&url, &Default::default()).await.unwrap();
    Some(Target {
        name: "Azurite",
        url,
        direct,
        cli_args: vec![],
        cli_env: vec![
            ("AZURITE_BLOB_STORAGE_URL".into(), proxy.url()),
            ("AZURE_TIMEOUT".into(), CLIENT_TIMEOUT.into()),
        ],
        proxy,
    })
}

/// Every object ever seen: its size, modification time and sha256 when first seen. An
/// object that later differs in any of them, or disappears, was overwritten or removed.
#[derive(Default)]
struct Ledger {
    seen: BTreeMap<String, (u64, Option<DateTime<Utc>>, String)>,
}

impl Ledger {
    async fn update(&mut self, store: &dyn AtomicPublisher) {
        let listed: BTreeMap<String, (u64, Option<DateTime<Utc>>)> = store
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|o| (o.key, (o.size, o.modified)))
            .collect();
        for (k, (size, modified, _)) in &self.seen {
            let now = listed.get(k);
            assert_eq!(
                now,
                Some(&(*size, *modified)),
                "{k} was overwritten or removed (size, modified before: {size}, {modified:?})"
            );
        }
        for (k, (size, modified)) in listed {
            if let std::collections::btree_map::Entry::Vacant(slot) = self.seen.entry(k) {
                let b = store.get(slot.key()).await.unwrap().unwrap();
                assert_eq!(b.len() as u64, size, "{}", slot.key());
                slot.insert((
                    size,
                    modified,
                    lineage_store::internal::encode::sha256_hex(&b),
                ));
            }
        }
    }

    /// Read every object again and compare its bytes with what was first seen.
    async fn recheck_bytes(&self, store: &dyn AtomicPublisher) {
        for (k, (_, _, sha)) in &self.seen {
            let b = store.get(k).await.unwrap().unwrap();
            assert_eq!(
                &lineage_store::internal::encode::sha256_hex(&b),
                sha,
                "{k} changed since first seen"
            );
        }
    }
}

/// A flush, as the test knows it: (target_crs, first sequence).
type FlushId = (String, i64);

/// The pointers and parts of one run, per flush, read directly from the store.
async fn run_state(
    store: &dyn AtomicPublisher,
    run_id: &str,
) -> (
    BTreeMap<FlushId, Vec<Pointer>>,
    BTreeMap<FlushId, Vec<String>>,
) {
    let mut pointers: BTreeMap<FlushId, Vec<Pointer>> = BTreeMap::new();
    let mut parts: BTreeMap<FlushId, Vec<String>> = BTreeMap::new();
    for o in store.list("").await.unwrap() {
        match keys::classify(&o.key) {
            KeyKind::Pointer { run_id: r, .. } if r == run_id => {
                let b = store.get(&o.key).await.unwrap().unwrap();
                let p = Pointer::from_bytes(&o.key, &b).unwrap();
                pointers
                    .entry((p.target_crs.clone(), p.first_sequence))
                    .or_default()
                    .push(p);
            }
            KeyKind::Part {
                run_id: r,
                target_crs,
                ..
            } if r == run_id => {
                let facts = read_facts(store, &o.key, o.size, true).await.unwrap();
                let first = facts.sequence.unwrap().0;
                parts.entry((target_crs, first)).or_default().push(o.key);
            }
            _ => {}
        }
    }
    (pointers, parts)
}

/// What happened, counted.
#[derive(Debug, Default)]
struct Outcomes {
    counts: BTreeMap<&'static str, u64>,
    /// The first error a failed attempt printed, as an example for the output.
    example_error: Option<String>,
}

impl Outcomes {
    fn add(&mut self, what: &'static str) {
        *self.counts.entry(what).or_insert(0) += 1;
    }
}

/// Check one attempt's outcome; returns whether it succeeded.
fn judge_attempt(
    t: &Target,
    run_id: &str,
    o: &std::process::Output,
    acknowledged: &mut Vec<Pointer>,
    outcomes: &mut Outcomes,
) -> bool {
    let (out, err) = support::text(o);
    let printed: Vec<Pointer> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    acknowledged.extend(printed.iter().cloned());
    match o.status.code() {
        Some(0) => {
            assert_eq!(printed.len(), FLUSHES, "{}: {run_id}: {out}", t.name);
            true
        }
        Some(2) => {
            // A clear error: one `error:` line naming the object (its URL and key).
            let line = err
                .lines()
                .rev()
                .find(|l| l.starts_with("error: "))
                .unwrap_or_else(|| panic!("{}: {run_id}: no error line: {err}", t.name));
            assert!(
                line.contains(&t.url) && line.contains(run_id)
                    || line.contains("_lineage/commit-keys/"),
                "{}: {run_id}: the error does not name the object: {line}",
                t.name
            );
            // ... and why: object_store's own message for a timeout or a reset ends in
            // "error sending request"; the CLI adds the cause.
            assert!(
                !line.trim_end().ends_with("error sending request"),
                "{}: {run_id}: the error does not say why: {line}",
                t.name
            );
            outcomes.example_error.get_or_insert_with(|| line.to_string());
            false
        }
        other => panic!(
            "{}: {run_id}: exit {other:?} (only 0, or 2 with a clear error, are acceptable)\n{err}\nfaults so far: {:#?}",
            t.name,
            t.proxy.log()
        ),
    }
}

/// After an attempt: never two parts or two pointers for a flush; every acknowledged
/// commit stored exactly as printed; on success, exactly one of each per flush.
async fn check_run(t: &Target, run_id: &str, acknowledged: &[Pointer], succeeded: bool) {
    let (pointers, parts) = run_state(t.direct.as_ref(), run_id).await;
    for (f, ps) in &pointers {
        assert_eq!(
            ps.len(),
            1,
            "{}: two pointers for flush {f:?}: {ps:#?}",
            t.name
        );
    }
    for (f, ks) in &parts {
        assert_eq!(ks.len(), 1, "{}: two parts for flush {f:?}: {ks:?}", t.name);
    }
    for a in acknowledged {
        let stored = pointers
            .get(&(a.target_crs.clone(), a.first_sequence))
            .and_then(|v| v.first());
        assert_eq!(
            stored,
            Some(a),
            "{}: acknowledged commit {} is missing or differs",
            t.name,
            a.commit_id
        );
    }
    if succeeded {
        assert_eq!(
            (pointers.len(), parts.len()),
            (FLUSHES, FLUSHES),
            "{}: {run_id} succeeded without one part and one pointer per flush",
            t.name
        );
    }
}

/// `verify` with no grace period: nothing but orphan parts of runs left failed.
async fn check_verify(t: &Target, failed_runs: &BTreeSet<String>) -> u64 {
    let opts = VerifyOptions {
        grace: chrono::Duration::zero(),
        // The only orphans adopted are the failed runs' own.
        accept_adopted: true,
        ..VerifyOptions::default()
    };
    let report = verify_with(t.direct.as_ref(), &opts).await.unwrap();
    let mut orphans = 0;
    for p in &report.problems {
        let from_failed_run = match keys::classify(&p.key) {
            KeyKind::Part { run_id, .. } => failed_runs.contains(&run_id),
            _ => false,
        };
        assert!(
            p.kind == ProblemKind::OrphanPart && from_failed_run,
            "{}: verify reports what the failure table does not allow: {p:?}\nall: {:#?}",
            t.name,
            report.problems
        );
        orphans += 1;
    }
    orphans
}

/// The whole exercise on one backend.
async fn exercise(t: Target) {
    let mut ledger = Ledger::default();
    let mut outcomes = Outcomes::default();
    let mut failed_runs = BTreeSet::new();
    let mut all_acknowledged = Vec::new();
    let mut orphans_seen = 0;
    for run in 0..runs() {
        let keyed = run % 2 == 1;
        let run_id = format!("faults-{run}");
        let input = support::ndjson(&run_id, EVENTS, &run_id);
        let mut args = vec![
            "--json".to_string(),
            "--batch-rows".into(),
            BATCH_ROWS.into(),
        ];
        if keyed {
            args.extend(["--commit-key".to_string(), format!("job-{run}")]);
        }
        let mut acknowledged = Vec::new();
        let mut attempt = 0;
        let succeeded = loop {
            let healed = keyed && attempt == KEYED_ATTEMPTS;
            t.proxy.set_schedule(if healed {
                Schedule::none()
            } else {
                schedule(run * 16 + attempt)
            });
            let o = t.run(&args, input.clone()).await;
            let ok = judge_attempt(&t, &run_id, &o, &mut acknowledged, &mut outcomes);
            outcomes.add(match (keyed, ok, attempt) {
                (false, true, _) => "plain: succeeded",
                (false, false, _) => "plain: failed with a clear error",
                (true, true, 0) => "keyed: succeeded at once",
                (true, true, _) if healed => "keyed: succeeded once faults stopped",
                (true, true, _) => "keyed: succeeded on a retry",
                (true, false, _) => "keyed: attempt failed with a clear error",
            });
            check_run(&t, &run_id, &acknowledged, ok).await;
            ledger.update(t.direct.as_ref()).await;
            if ok || !keyed {
                break ok;
            }
            attempt += 1;
        };
        if !succeeded {
            failed_runs.insert(run_id.clone());
        }
        orphans_seen = orphans_seen.max(check_verify(&t, &failed_runs).await);
        all_acknowledged.extend(acknowledged);
    }

    // Recovery as the operations guide says: repair lists the orphans; the operator, who
    // knows they are its own failed runs' parts, adopts them by name; verify is then
    // clean with the adopted commits accepted.
    let listed = lineage_store::repair(
        t.direct.as_ref(),
        Utc::now(),
        chrono::Duration::zero(),
        &lineage_store::Adoption::none(),
        false,
    )
    .await
    .unwrap();
    assert!(listed.adopted.is_empty(), "{:?}", listed.adopted);
    let repaired = lineage_store::repair(
        t.direct.as_ref(),
        Utc::now(),
        chrono::Duration::zero(),
        &lineage_store::Adoption::parts(listed.orphans.iter().map(|(k, _)| k.clone())),
        false,
    )
    .await
    .unwrap();
    assert!(repaired.refused.is_empty(), "{:?}", repaired.refused);
    assert_eq!(repaired.adopted.len(), listed.orphans.len());
    assert_eq!(check_verify(&t, &BTreeSet::new()).await, 0, "{}", t.name);
    ledger.update(t.direct.as_ref()).await;
    ledger.recheck_bytes(t.direct.as_ref()).await;
    for a in &all_acknowledged {
        let k = keys::pointer_key(&a.run_id, &a.commit_id);
        let b = t.direct.get(&k).await.unwrap().unwrap();
        assert_eq!(&Pointer::from_bytes(&k, &b).unwrap(), a);
    }

    let counts = t.proxy.counts();
    report(&t, &outcomes, &counts, repaired.adopted.len(), orphans_seen);
    assert!(counts.proxy_errors.is_empty(), "{:?}", counts.proxy_errors);
    assert_eq!(
        counts.stalls_expired, 0,
        "a stalled request was never given up by the client: its timeout is not in effect"
    );
    // The schedule must actually have exercised the faults, or this proves nothing.
    assert!(counts.total_injected() >= runs(), "{counts:?}");
    for f in [Fault::DropBefore, Fault::DropAfter, Fault::StatusAfter(500)] {
        assert!(
            counts.injected.contains_key(&f.name()),
            "{} was never injected: {counts:?}",
            f.name()
        );
    }
    let under_faults = [
        "plain: succeeded",
        "keyed: succeeded at once",
        "keyed: succeeded on a retry",
    ];
    assert!(
        under_faults.iter().any(|k| outcomes.counts.contains_key(k)),
        "no run succeeded under faults: {outcomes:?}"
    );
}

/// Print the counts where they are seen (libtest captures `eprintln!` of passing tests).
fn report(t: &Target, o: &Outcomes, c: &Counts, adopted: usize, orphans: u64) {
    use std::io::Write;
    let mut s = format!(
        "fault proxy, {} (seed {}, {} faults per 1,000 requests, {} runs of {} flushes; client timeout {}):\n  requests passed untouched: {}\n",
        t.name,
        seed(),
        per_mille(),
        runs(),
        FLUSHES,
        CLIENT_TIMEOUT,
        c.passed
    );
    for (k, v) in &c.injected {
        s.push_str(&format!("  injected {k}: {v}\n"));
    }
    for (k, v) in &o.counts {
        s.push_str(&format!("  outcome {k}: {v}\n"));
    }
    if let Some(e) = &o.example_error {
        s.push_str(&format!("  example error: {e}\n"));
    }
    s.push_str(&format!(
        "  orphan parts left by failed runs (verify, no grace): {orphans}; adopted by repair: {adopted}\n"
    ));
    let _ = std::io::stderr().write_all(s.as_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_through_faults_to_localstack() {
    if let Some(t) = localstack_target("faults_localstack").await {
        exercise(t).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_through_faults_to_seaweedfs() {
    if let Some(t) = s3_target(Emulator::SeaweedFs, "SeaweedFS", "faults_seaweedfs").await {
        exercise(t).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_through_faults_to_azurite() {
    if let Some(t) = azurite_target("faults_azurite").await {
        exercise(t).await;
    }
}

//! `lineage append` → `log` → `verify` → `seal` → `verify` end to end through the CLI against `s3://`
//! (LocalStack, moto), `az://` (Azurite) and `gs://` (the GCS fake), and commit keys for
//! retried jobs on every backend, POSIX included.

use std::collections::BTreeMap;
use std::sync::Arc;

use lineage_store::internal::keys;
use lineage_store::internal::keys::KeyKind;
use lineage_store::AtomicPublisher;
use serde_json::Value;

use crate::support::{self, gcs_fake::GcsFake, lineage_env, text, Emulator};

/// A store as the CLI sees it: URL, extra arguments and environment.
struct Cli {
    url: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Cli {
    fn run(&self, cmd: &str, extra: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
        let mut args: Vec<&str> = vec![cmd, "--store", &self.url];
        args.extend(self.args.iter().map(String::as_str));
        args.extend_from_slice(extra);
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        lineage_env(&args, &env, stdin)
    }
}

fn s3_cli(emu: Emulator, test: &str) -> Option<Cli> {
    let ep = emu.endpoint(test)?;
    Some(Cli {
        url: support::s3_url(&support::s3_bucket(), test),
        args: vec!["--endpoint-url".into(), ep],
        env: vec![],
    })
}

fn azurite_cli(test: &str) -> Option<Cli> {
    Emulator::Azurite.endpoint(test)?;
    Some(Cli {
        url: support::az_url(test),
        args: vec![],
        env: vec![],
    })
}

fn gcs_fake_cli(fake: &GcsFake, test: &str) -> Cli {
    Cli {
        url: format!("gs://{}/{}", fake.bucket(), support::unique_prefix(test)),
        args: vec![],
        // Base URL and a bearer token: the client never asks a metadata server.
        env: vec![
            ("GOOGLE_BASE_URL".into(), fake.base_url()),
            ("GOOGLE_BEARER_TOKEN".into(), support::FAKE_GCS_TOKEN.into()),
        ],
    }
}

/// Every object (key → sha256) of the store the CLI writes to, read through the library.
async fn snapshot(cli: &Cli) -> BTreeMap<String, String> {
    let store = open(cli).await;
    let mut out = BTreeMap::new();
    for o in store.list("").await.unwrap() {
        let b = store.get(&o.key).await.unwrap().unwrap();
        out.insert(o.key, lineage_store::internal::encode::sha256_hex(&b));
    }
    out
}

async fn open(cli: &Cli) -> Arc<dyn AtomicPublisher> {
    if cli.url.starts_with("gs://") {
        // The library test process has no GOOGLE_* variables; build the fake's client.
        let (bucket, prefix) = cli.url["gs://".len()..].split_once('/').unwrap();
        let base = cli
            .env
            .iter()
            .find(|(k, _)| k == "GOOGLE_BASE_URL")
            .unwrap()
            .1
            .clone();
        let gcs = object_store::gcp::GoogleCloudStorageBuilder::new()
            .with_bucket_name(bucket)
            .with_base_url(&base)
            .with_bearer_token(support::FAKE_GCS_TOKEN)
            .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
            .build()
            .unwrap();
        return Arc::new(
            lineage_store::internal::object::ObjectStorePublisher::new(
                Arc::new(gcs),
                lineage_store::internal::object::Backend::Gcs,
                prefix,
                cli.url.clone(),
            )
            .unwrap(),
        );
    }
    let opts = lineage_store::StoreOptions::new().endpoint_url(
        cli.args
            .iter()
            .position(|a| a == "--endpoint-url")
            .map(|i| cli.args[i + 1].clone()),
    );
    lineage_store::open(&cli.url, &opts).await.unwrap()
}

fn counts(snap: &BTreeMap<String, String>) -> (usize, usize) {
    let parts = snap
        .keys()
        .filter(|k| matches!(keys::classify(k), KeyKind::Part { .. }))
        .count();
    let ptrs = snap
        .keys()
        .filter(|k| matches!(keys::classify(k), KeyKind::Pointer { .. }))
        .count();
    (parts, ptrs)
}

/// append → log → verify through the CLI.
async fn check_append_log_verify(cli: &Cli) {
    let input = support::ndjson("run-e2e", 40, "e2e");
    let o = cli.run(
        "append",
        &["--batch-rows", "10", "--json"],
        Some(input.as_bytes()),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "append to {}: {err}", cli.url);
    let pointers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 40 events, two CRS of 20 each, 10 rows per flush → 4 commits.
    assert_eq!(pointers.len(), 4, "{out}");

    let o = cli.run("log", &["--json"], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "log: {err}");
    let logged: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 4);
    let mut want: Vec<&str> = pointers
        .iter()
        .map(|p| p["commit_id"].as_str().unwrap())
        .collect();
    let mut got: Vec<&str> = logged
        .iter()
        .map(|p| p["commit_id"].as_str().unwrap())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(want, got);
    assert_eq!(
        logged
            .iter()
            .map(|p| p["row_count"].as_u64().unwrap())
            .sum::<u64>(),
        40
    );

    let o = cli.run("verify", &["--json"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "verify: {out} {err}");
    let r: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(r["commits"], 4);
    assert_eq!(r["parts_ok"], 4);
    assert_eq!(r["rows"], 40);
    assert_eq!(r["problems"].as_array().unwrap().len(), 0, "{out}");
    assert!(r["store"].as_str().unwrap().ends_with(&cli.url), "{out}");

    // The audit layer on the same store: seal, then verify the seal chain too.
    let o = cli.run("seal", &[], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "seal: {err}");
    assert!(out.contains("seal 1 adds 4 commits"), "{out}");
    let o = cli.run("verify", &[], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "verify after seal: {out} {err}");
    assert!(
        out.contains("seals: 1") && out.contains("4 commits sealed"),
        "{out}"
    );
}

/// A job retried with its commit key ends with one part and one pointer per flush; the
/// same key with another payload is refused naming both digests, with nothing published.
async fn check_commit_key_retries(cli: &Cli) {
    let input = support::ndjson("run-key", 30, "payload-1");
    let args = [
        "--batch-rows",
        "8",
        "--commit-key",
        "job-42/attempt-independent",
        "--json",
    ];
    let first = cli.run("append", &args, Some(input.as_bytes()));
    let (out1, err) = text(&first);
    assert!(first.status.success(), "first attempt: {err}");
    let after_first = snapshot(cli).await;
    // two CRS groups of 15 rows, 8 per flush → 2 + 2 flushes
    assert_eq!(counts(&after_first), (4, 4), "{after_first:?}");

    // The platform retries the job (twice): same keys, nothing added, nothing changed.
    for _ in 0..2 {
        let again = cli.run("append", &args, Some(input.as_bytes()));
        let (out2, err) = text(&again);
        assert!(again.status.success(), "retry: {err}");
        let ids = |s: &str| -> Vec<String> {
            s.lines()
                .map(|l| {
                    serde_json::from_str::<Value>(l).unwrap()["commit_id"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(ids(&out1), ids(&out2));
        assert_eq!(snapshot(cli).await, after_first);
    }

    // Same key, different payload: refused, both payload digests named, nothing written.
    // It has more flushes than the first (3 + 3): without the claim its extra flushes would
    // have derived ids no earlier attempt used, and would be published before the refusal.
    let other = support::ndjson("run-key", 40, "payload-2");
    let o = cli.run("append", &args, Some(other.as_bytes()));
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("already used for a different payload"),
        "{err}"
    );
    let digests: Vec<&str> = err
        .split("sha256 ")
        .skip(1)
        .map(|w| w.split(|c: char| !c.is_ascii_hexdigit()).next().unwrap())
        .filter(|w| w.len() == 64)
        .collect();
    assert_eq!(digests.len(), 2, "{err}");
    assert_ne!(digests[0], digests[1]);
    assert!(err.contains("nothing was published"), "{err}");
    assert_eq!(snapshot(cli).await, after_first);

    let o = cli.run("verify", &[], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

impl Cli {
    /// Start `lineage` without waiting (stdin written and closed).
    fn spawn(&self, cmd: &str, extra: &[&str], stdin: &[u8]) -> std::process::Child {
        use std::io::Write;
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"));
        c.arg(cmd)
            .args(["--store", &self.url])
            .args(&self.args)
            .args(extra)
            .env_remove("LINEAGE_STORE")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child
    }
}

/// Writers in separate processes, no coordinator: four appends of different payloads at
/// once all land; four retries of one keyed job racing each other all succeed and leave
/// one part and one pointer per flush.
async fn check_concurrent_processes(cli: &Cli) {
    let inputs: Vec<String> = (0..4)
        .map(|i| support::ndjson(&format!("run-proc-{i}"), 12, &format!("proc-{i}")))
        .collect();
    let children: Vec<_> = inputs
        .iter()
        .map(|inp| cli.spawn("append", &["--batch-rows", "5"], inp.as_bytes()))
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
    }
    // each: 6 rows per CRS, 5 per flush → 2 + 2 flushes
    assert_eq!(counts(&snapshot(cli).await), (16, 16));

    let keyed = support::ndjson("run-race", 12, "race");
    let args = ["--batch-rows", "5", "--commit-key", "raced-job"];
    let children: Vec<_> = (0..4)
        .map(|_| cli.spawn("append", &args, keyed.as_bytes()))
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
    }
    assert_eq!(counts(&snapshot(cli).await), (20, 20));
    let o = cli.run("verify", &["--json"], None);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let r: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (r["commits"].as_u64(), r["rows"].as_u64()),
        (Some(20), Some(4 * 12 + 12))
    );
}

async fn check_all(cli: &Cli) {
    check_append_log_verify(cli).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_localstack() {
    let Some(cli) = s3_cli(Emulator::LocalStack, "cli_localstack") else {
        return;
    };
    check_all(&cli).await;
    let cli = s3_cli(Emulator::LocalStack, "cli_localstack_key").unwrap();
    check_commit_key_retries(&cli).await;
    check_concurrent_processes(&s3_cli(Emulator::LocalStack, "cli_localstack_procs").unwrap())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_moto() {
    let Some(cli) = s3_cli(Emulator::Moto, "cli_moto") else {
        return;
    };
    check_all(&cli).await;
    let cli = s3_cli(Emulator::Moto, "cli_moto_key").unwrap();
    check_commit_key_retries(&cli).await;
    check_concurrent_processes(&s3_cli(Emulator::Moto, "cli_moto_procs").unwrap()).await;
}

/// SeaweedFS, a real distributed S3 server with its own listing order
/// (docs/object-stores.md): the same end-to-end checks as on LocalStack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_seaweedfs() {
    let Some(cli) = s3_cli(Emulator::SeaweedFs, "cli_seaweedfs") else {
        return;
    };
    check_all(&cli).await;
    let cli = s3_cli(Emulator::SeaweedFs, "cli_seaweedfs_key").unwrap();
    check_commit_key_retries(&cli).await;
    check_concurrent_processes(&s3_cli(Emulator::SeaweedFs, "cli_seaweedfs_procs").unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_azurite() {
    let Some(cli) = azurite_cli("cli_azurite") else {
        return;
    };
    check_all(&cli).await;
    let cli = azurite_cli("cli_azurite_key").unwrap();
    check_commit_key_retries(&cli).await;
    check_concurrent_processes(&azurite_cli("cli_azurite_procs").unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_gcs_fake() {
    let fake = GcsFake::start("lineage-fake-bucket").await.unwrap();
    check_all(&gcs_fake_cli(&fake, "cli_gcs")).await;
    check_commit_key_retries(&gcs_fake_cli(&fake, "cli_gcs_key")).await;
    check_concurrent_processes(&gcs_fake_cli(&fake, "cli_gcs_procs")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_posix_commit_keys() {
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli {
        url: dir.path().join("store").to_string_lossy().into_owned(),
        args: vec![],
        env: vec![],
    };
    check_append_log_verify(&cli).await;
    let cli = Cli {
        url: dir.path().join("store-key").to_string_lossy().into_owned(),
        args: vec![],
        env: vec![],
    };
    check_commit_key_retries(&cli).await;
    let cli = Cli {
        url: dir
            .path()
            .join("store-procs")
            .to_string_lossy()
            .into_owned(),
        args: vec![],
        env: vec![],
    };
    check_concurrent_processes(&cli).await;
}

//! What the tests share, one tree for every area:
//!
//! - here: where the storage emulators are, how to open each backend under a fresh prefix,
//!   sample events of one run (`ndjson`, `batches`), and the `lineage` binary;
//! - [`sample`]: sample events as JSON, store snapshots (the design note's append-only
//!   check);
//! - [`audit`]: validated demo events appended to real stores, and verify a day later;
//! - [`replica`]: the stores on both sides of a replication, for the CLI tests;
//! - [`bad_input`]: the bad-input matrix;
//! - [`fault_proxy`], [`gcs_fake`]: a TCP fault proxy, and a fake of GCS's XML API;
//! - [`own_process`]: a test that changes process-wide state runs in a child process;
//! - [`listings`]: a publisher wrapper recording every listing request.
//!
//! An emulator's endpoint comes from the variable localstack/start.sh writes into
//! .emulators/env (scripts/test.sh sources it). A missing variable fails the test loudly,
//! unless the emulator is explicitly switched off (`LINEAGE_NO_LOCALSTACK=1`,
//! `LINEAGE_NO_MOTO=1`, `LINEAGE_NO_AZURITE=1`, `LINEAGE_NO_SEAWEEDFS=1`): then the test
//! prints why and skips.

pub mod audit;
pub mod bad_input;
pub mod fault_proxy;
pub mod gcs_fake;
pub mod listings;
pub mod own_process;
pub mod replica;
pub mod sample;

use std::sync::Arc;

use lineage_store::internal::object::Backend;
use lineage_store::internal::object::ObjectStorePublisher;
use lineage_store::internal::store;
use lineage_store::AtomicPublisher;
use lineage_store::StoreOptions;

/// An emulator the tests can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emulator {
    /// LocalStack's S3 on `LINEAGE_LOCALSTACK_ENDPOINT`.
    LocalStack,
    /// moto's S3 on `LINEAGE_MOTO_ENDPOINT`.
    Moto,
    /// Azurite's blob service on `LINEAGE_AZURITE_BLOB_URL`.
    Azurite,
    /// SeaweedFS's S3 gateway on `LINEAGE_SEAWEEDFS_ENDPOINT`: a real distributed object
    /// store, not an emulator (its lock bucket has a default retention).
    SeaweedFs,
}

impl Emulator {
    fn vars(self) -> (&'static str, &'static str) {
        match self {
            Emulator::LocalStack => ("LINEAGE_LOCALSTACK_ENDPOINT", "LINEAGE_NO_LOCALSTACK"),
            Emulator::Moto => ("LINEAGE_MOTO_ENDPOINT", "LINEAGE_NO_MOTO"),
            Emulator::Azurite => ("LINEAGE_AZURITE_BLOB_URL", "LINEAGE_NO_AZURITE"),
            Emulator::SeaweedFs => ("LINEAGE_SEAWEEDFS_ENDPOINT", "LINEAGE_NO_SEAWEEDFS"),
        }
    }

    /// The endpoint, or `None` (with the reason printed) when switched off. Panics when
    /// neither the endpoint nor the switch is set: a silently skipped test proves nothing.
    pub fn endpoint(self, test: &str) -> Option<String> {
        let (var, off) = self.vars();
        if std::env::var(off).as_deref() == Ok("1") {
            skip(test, &format!("{self:?} switched off by {off}=1"));
            return None;
        }
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => Some(v),
            _ => panic!(
                "{test} needs {self:?}, but {var} is not set: run scripts/test.sh (it starts the emulators), \
                 or `localstack/start.sh && . .emulators/env`, or set {off}=1 to skip it"
            ),
        }
    }
}

/// Say that a test skips, and why, where it is seen: straight to the process's stderr
/// (libtest captures `eprintln!` of passing tests).
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// A prefix no other test (or earlier run) uses.
pub fn unique_prefix(test: &str) -> String {
    format!("t/{test}/{}", uuid::Uuid::new_v4().simple())
}

/// The test bucket (created by localstack/start.sh).
pub fn s3_bucket() -> String {
    std::env::var("LINEAGE_S3_BUCKET").unwrap_or_else(|_| "lineage-test".into())
}

/// The Object Lock bucket (created by localstack/start.sh).
pub fn s3_lock_bucket() -> String {
    std::env::var("LINEAGE_S3_LOCK_BUCKET").unwrap_or_else(|_| "lineage-lock".into())
}

/// The test container (created by localstack/start.sh).
pub fn azure_container() -> String {
    std::env::var("LINEAGE_AZURE_CONTAINER").unwrap_or_else(|_| "lineage-test".into())
}

/// The `s3://` URL of a fresh prefix in `bucket`.
pub fn s3_url(bucket: &str, test: &str) -> String {
    format!("s3://{bucket}/{}", unique_prefix(test))
}

/// Open a fresh prefix of an S3 emulator through the one URL resolver.
pub async fn open_s3(emu: Emulator, bucket: &str, test: &str) -> Option<Arc<dyn AtomicPublisher>> {
    let endpoint = emu.endpoint(test)?;
    let opts = StoreOptions::new().endpoint_url(Some(endpoint));
    let url = s3_url(bucket, test);
    Some(
        store::open(&url, &opts)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}")),
    )
}

/// The `az://` URL of a fresh prefix in the test container.
pub fn az_url(test: &str) -> String {
    format!("az://{}/{}", azure_container(), unique_prefix(test))
}

/// Open a fresh prefix of Azurite through the one URL resolver (object_store reads
/// `AZURE_STORAGE_USE_EMULATOR` and `AZURITE_BLOB_STORAGE_URL`, set by start.sh).
pub async fn open_azurite(test: &str) -> Option<Arc<dyn AtomicPublisher>> {
    Emulator::Azurite.endpoint(test)?;
    let url = az_url(test);
    Some(
        store::open(&url, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}")),
    )
}

/// The bearer token the GCS fake accepts (a fake value, not a credential).
pub const FAKE_GCS_TOKEN: &str = "fake-gcs-token";

/// A publisher on the GCS fake, under a fresh prefix. The client gets a bearer token and a
/// base URL, so it never asks a metadata server for a token.
pub fn open_gcs_fake(fake: &gcs_fake::GcsFake, test: &str) -> Arc<dyn AtomicPublisher> {
    let prefix = unique_prefix(test);
    let gcs = object_store::gcp::GoogleCloudStorageBuilder::new()
        .with_bucket_name(fake.bucket())
        .with_base_url(&fake.base_url())
        .with_bearer_token(FAKE_GCS_TOKEN)
        .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
        .build()
        .unwrap_or_else(|e| panic!("GCS client for the fake: {e}"));
    let url = format!("gs://{}/{prefix}", fake.bucket());
    Arc::new(
        ObjectStorePublisher::new(Arc::new(gcs), Backend::Gcs, &prefix, url)
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

/// `n` valid NDJSON events of one run, distinguishable by `tag`.
pub fn ndjson(run_id: &str, n: usize, tag: &str) -> String {
    let mut s = String::new();
    for i in 0..n {
        let crs = if i % 2 == 0 { "EPSG:4326" } else { "EPSG:3857" };
        s.push_str(
            &serde_json::json!({
                "event_id": format!("{tag}-{i}"),
                "run_id": run_id,
                "sequence": i as i64,
                "event_time_utc": format!("2026-07-13T06:{:02}:{:02}Z", (i / 60) % 60, i % 60),
                "stage": "reproject",
                "event_type": "crs_transform",
                "feature_id": format!("feature-{i}"),
                "source_crs": "EPSG:4326",
                "target_crs": crs,
                "outcome": "transformed",
                "strategy_index": 0,
                "accuracy_m": 0.5,
                "rejection_reason": null,
                "tool_version": "test/1",
                "audit_tag": tag,
            })
            .to_string(),
        );
        s.push('\n');
    }
    s
}

/// Validated batches of [`ndjson`] events.
pub fn batches(run_id: &str, n: usize, tag: &str) -> Vec<arrow_array::RecordBatch> {
    lineage_store::internal::input::parse_validated(
        bytes::Bytes::from(ndjson(run_id, n, tag)),
        lineage_store::Format::Ndjson,
    )
    .unwrap_or_else(|e| panic!("sample events: {e}"))
}

/// Run the `lineage` binary with arguments and optional stdin (`LINEAGE_STORE` removed
/// from the environment it inherits).
pub fn lineage(args: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    lineage_without(args, &[], &[], stdin)
}

/// [`lineage`] with extra environment variables.
pub fn lineage_env(
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&[u8]>,
) -> std::process::Output {
    lineage_without(args, env, &[], stdin)
}

/// [`lineage_env`], with some inherited variables removed first.
pub fn lineage_without(
    args: &[&str],
    env: &[(&str, &str)],
    remove: &[&str],
    stdin: Option<&[u8]>,
) -> std::process::Output {
    use std::io::Write;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lineage"));
    cmd.env_remove("LINEAGE_STORE");
    for r in remove {
        cmd.env_remove(r);
    }
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn lineage: {e}"));
    let mut pipe = child.stdin.take();
    if let (Some(input), Some(p)) = (stdin, pipe.as_mut()) {
        p.write_all(input)
            .unwrap_or_else(|e| panic!("write stdin: {e}"));
    }
    drop(pipe);
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait for lineage: {e}"))
}

/// stdout and stderr as text.
pub fn text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every file below `dir`, sorted.
pub fn files_below(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_below(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

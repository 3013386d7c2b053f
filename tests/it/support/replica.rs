//! Stores on both sides of a replication, for the CLI tests: how to name one on the
//! command line (as `--store`, `--from`, `--to`, `--replica-of`, `--witness`), open it
//! through the library, and tamper with it underneath lineage-store (delete, overwrite,
//! drop in an object) the way an attacker or an accident would.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::keys;
use lineage_store::internal::keys::KeyKind;
use lineage_store::internal::store;
use lineage_store::internal::store::cloud;
use lineage_store::StoreOptions;
use lineage_store::{AtomicPublisher, Writer};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::support::{self, Emulator};

/// The hook variable and line of `lineage replicate` (src/cli/replicate.rs).
pub const HOLD_VAR: &str = "LINEAGE_TEST_HOLD_AFTER_PUBLISHES";
pub const HOLD_LINE: &str = "lineage test hook: holding after publish";

enum Raw {
    Posix(PathBuf),
    Object {
        store: Arc<dyn ObjectStore>,
        prefix: String,
    },
}

/// One store, as the CLI and the library reach it.
pub struct Side {
    /// For messages.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// Its S3 endpoint, if any.
    pub endpoint: Option<String>,
    raw: Raw,
}

impl Side {
    /// A local-disk store in a fresh directory under `dir`.
    pub fn posix(dir: &std::path::Path, name: &str) -> Side {
        let root = dir.join(name);
        Side {
            name: format!("local disk ({name})"),
            url: root.to_string_lossy().into_owned(),
            endpoint: None,
            raw: Raw::Posix(root),
        }
    }

    /// A fresh prefix of an S3 emulator (`None` when it is switched off).
    pub async fn s3(emu: Emulator, test: &str) -> Option<Side> {
        let ep = emu.endpoint(test)?;
        Some(
            Self::object(
                format!("{emu:?}"),
                support::s3_url(&support::s3_bucket(), test),
                Some(ep),
            )
            .await,
        )
    }

    /// A fresh prefix of Azurite (`None` when it is switched off).
    pub async fn azurite(test: &str) -> Option<Side> {
        Emulator::Azurite.endpoint(test)?;
        Some(Self::object("Azurite".into(), support::az_url(test), None).await)
    }

    async fn object(name: String, url: String, endpoint: Option<String>) -> Side {
        let opts = StoreOptions::new().endpoint_url(endpoint.clone());
        let opened = store::open(&url, &opts).await.unwrap();
        let p = opened.object_store().unwrap();
        let prefix = cloud::parse(&url).unwrap().unwrap().prefix;
        Side {
            name,
            url,
            endpoint,
            raw: Raw::Object {
                store: p.inner().clone(),
                prefix,
            },
        }
    }

    /// Open it through the library.
    pub async fn open(&self) -> Arc<dyn AtomicPublisher> {
        let opts = StoreOptions::new().endpoint_url(self.endpoint.clone());
        store::open(&self.url, &opts).await.unwrap()
    }

    /// `--<flag> URL [--<flag>-endpoint-url EP]`; flag `store` gives `--store`/`--endpoint-url`.
    pub fn args(&self, flag: &str) -> Vec<String> {
        let mut v = vec![format!("--{flag}"), self.url.clone()];
        if let Some(ep) = &self.endpoint {
            v.push(if flag == "store" {
                "--endpoint-url".into()
            } else {
                format!("--{flag}-endpoint-url")
            });
            v.push(ep.clone());
        }
        v
    }

    fn obj_path(prefix: &str, key: &str) -> ObjPath {
        ObjPath::from(if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}/{key}")
        })
    }

    /// Overwrite or create `key` unconditionally, underneath lineage-store.
    pub async fn raw_put(&self, key: &str, bytes: &[u8]) {
        match &self.raw {
            Raw::Posix(root) => {
                let p = root.join(key);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
            Raw::Object { store, prefix } => {
                store
                    .put(
                        &Self::obj_path(prefix, key),
                        PutPayload::from(Bytes::copy_from_slice(bytes)),
                    )
                    .await
                    .unwrap();
            }
        }
    }

    /// Delete `key`, underneath lineage-store.
    pub async fn raw_delete(&self, key: &str) {
        match &self.raw {
            Raw::Posix(root) => std::fs::remove_file(root.join(key)).unwrap(),
            Raw::Object { store, prefix } => {
                store.delete(&Self::obj_path(prefix, key)).await.unwrap()
            }
        }
    }

    /// The bytes of `key`.
    pub async fn get(&self, key: &str) -> Option<Bytes> {
        self.open().await.get(key).await.unwrap()
    }

    /// Every object but temps: key → sha256.
    pub async fn snapshot(&self) -> BTreeMap<String, String> {
        let s = self.open().await;
        let mut out = BTreeMap::new();
        for o in s.list("").await.unwrap() {
            if keys::classify(&o.key) == KeyKind::Temp {
                continue;
            }
            let b = s.get(&o.key).await.unwrap().unwrap();
            out.insert(o.key, sha256_hex(&b));
        }
        out
    }

    /// Append `n` events of `run` (commits of at most `batch` rows), optionally with a
    /// commit key; returns the number of commits.
    pub async fn append(&self, run: &str, n: usize, batch: usize, key: Option<&str>) -> usize {
        Writer::new(self.open().await)
            .with_batch_rows(batch)
            .with_commit_key(key.map(str::to_string))
            .append(&support::batches(run, n, run), |_| {})
            .await
            .unwrap()
            .len()
    }

    /// Seal; returns the new head digest.
    pub async fn seal(&self) -> String {
        let s = self.open().await;
        lineage_store::seal(s.as_ref(), &lineage_store::SystemClock, None)
            .await
            .unwrap()
            .head
    }
}

/// Run `lineage` with these arguments (environment inherited, plus `env`).
pub fn run(args: &[String], env: &[(&str, &str)]) -> Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    support::lineage_env(&a, env, None)
}

/// `lineage replicate --from SRC --to DST` + extra arguments.
pub fn replicate_args(src: &Side, dst: &Side, extra: &[&str]) -> Vec<String> {
    let mut a = vec!["replicate".to_string()];
    a.extend(src.args("from"));
    a.extend(dst.args("to"));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// A running `lineage` and its stderr, read line by line.
pub struct Running {
    /// The process.
    pub child: Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
    /// Lines read so far.
    pub seen: Vec<String>,
}

impl Running {
    /// Start `lineage` (with extra environment).
    pub fn start(args: &[String], env: &[(&str, String)]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lineage"))
            .args(args)
            .env_remove("LINEAGE_STORE")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        Running {
            child,
            lines: std::io::BufReader::new(err).lines(),
            seen: Vec::new(),
        }
    }

    /// Start `lineage` with the hold hook at publish `n`; returns once it holds there.
    pub fn held(args: &[String], n: u64) -> Running {
        let mut r = Self::start(args, &[(HOLD_VAR, n.to_string())]);
        r.until(HOLD_LINE);
        r
    }

    /// Read stderr until a line starts with `start` and return it (blocking reads, no
    /// sleeps); panics with what was read if the process ends first.
    pub fn until(&mut self, start: &str) -> String {
        loop {
            match self.lines.next() {
                Some(Ok(l)) => {
                    self.seen.push(l.clone());
                    if l.starts_with(start) {
                        return l;
                    }
                }
                _ => {
                    let _ = self.child.kill();
                    panic!(
                        "the process ended before printing {start:?}; stderr: {:#?}",
                        self.seen
                    );
                }
            }
        }
    }

    /// Send a signal by name (`TERM`, `INT`).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([format!("-{sig}"), self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig} {}", self.child.id());
    }

    /// SIGKILL and reap.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Wait for the exit; stdout, and the rest of stderr appended to `seen`.
    pub fn finish(mut self) -> (Option<i32>, String, Vec<String>) {
        for l in self.lines.by_ref().map_while(std::result::Result::ok) {
            self.seen.push(l);
        }
        let o = self.child.wait_with_output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            self.seen,
        )
    }
}

/// The JSON object on stdout.
pub fn json(o: &Output) -> serde_json::Value {
    let (out, err) = support::text(o);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out} {err}"))
}

/// (kind, key) of every problem in a JSON list of problems.
pub fn kinds_and_keys(problems: &serde_json::Value) -> Vec<(String, String)> {
    problems
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["key"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A seal's bytes with another `sealed_utc`: a rewrite that still parses.
pub fn rewritten_seal(bytes: &[u8]) -> Vec<u8> {
    let mut s = lineage_store::Seal::from_bytes("seal", bytes).unwrap();
    s.sealed_utc = "2020-01-01T00:00:00.000000Z".into();
    s.to_bytes().unwrap()
}

/// A tiny seeded generator (xorshift), so a failing seed can be replayed.
pub struct Rng(u64);

impl Rng {
    /// From a seed (0 is mapped to 1).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + self.0 % (hi - lo + 1)
    }
}

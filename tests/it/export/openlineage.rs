//! `lineage export openlineage` end to end: the events' content against the store,
//! stability, selection, refusals, and `--post` against a local OpenLineage endpoint that
//! fails on purpose (a scripted test server, below: there is no OpenLineage server to
//! install here; Marquez needs a JVM and PostgreSQL).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::{self, sample};

pub(super) fn lineage_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lineage"));
    c.args(args)
        .env_remove("LINEAGE_STORE")
        .env_remove("OPENLINEAGE_API_KEY")
        .env_remove("OPENLINEAGE_ENDPOINT");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn ok(o: &Output) -> String {
    let (out, err) = support::text(o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    out
}

/// Two runs: run-a into EPSG:4326 and EPSG:3857, sealed; then run-b appended unsealed.
pub(super) fn store(dir: &Path) -> String {
    let s = dir.join("store").display().to_string();
    let rows = sample::events(60);
    let a: Vec<Value> = rows
        .iter()
        .filter(|r| r["run_id"] == "run-a")
        .cloned()
        .collect();
    let b: Vec<Value> = rows
        .iter()
        .filter(|r| r["run_id"] == "run-b")
        .cloned()
        .collect();
    let input = dir.join("a.ndjson");
    std::fs::write(&input, sample::ndjson(&a)).unwrap();
    ok(&support::lineage(
        &[
            "append",
            "--store",
            &s,
            "--input",
            input.to_str().unwrap(),
            "--batch-rows",
            "7",
        ],
        None,
    ));
    ok(&support::lineage(&["seal", "--store", &s], None));
    std::fs::write(&input, sample::ndjson(&b)).unwrap();
    ok(&support::lineage(
        &["append", "--store", &s, "--input", input.to_str().unwrap()],
        None,
    ));
    s
}

fn export(store: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["export", "openlineage", "--store", store];
    args.extend_from_slice(extra);
    ok(&lineage_env(&args, &[]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sha256_file(p: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
}

#[test]
fn a_start_and_a_complete_per_run_carry_commits_seals_and_counts_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let all = export(&s, &[]);
    let kinds: Vec<(&str, &str)> = all
        .iter()
        .map(|e| {
            (
                e["eventType"].as_str().unwrap(),
                e["run"]["facets"]["lineageStore_run"]["runId"]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("START", "run-a"),
            ("COMPLETE", "run-a"),
            ("START", "run-b"),
            ("COMPLETE", "run-b")
        ]
    );
    let pointers: Vec<Value> = ok(&support::lineage(&["log", "--store", &s, "--json"], None))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seal1 = sha256_file(
        &dir.path()
            .join("store/_lineage/seals/00000000000000000001.json"),
    );
    // The job's own time: START at the run's first event, COMPLETE at its last (the
    // events' event_time_utc, not when they were committed).
    for pair in all.chunks(2) {
        let run = pair[0]["run"]["facets"]["lineageStore_run"]["runId"]
            .as_str()
            .unwrap();
        let times: Vec<String> = sample::events(60)
            .iter()
            .filter(|r| r["run_id"] == run)
            .map(|r| r["event_time_utc"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            pair[0]["eventTime"].as_str(),
            times.iter().min().map(|t| t.as_str())
        );
        assert_eq!(
            pair[1]["eventTime"].as_str(),
            times.iter().max().map(|t| t.as_str())
        );
        assert_eq!(pair[0]["run"], pair[1]["run"], "one run");
        assert_eq!(pair[0]["outputs"], serde_json::json!([]));
    }
    let events: Vec<&Value> = all
        .iter()
        .filter(|e| e["eventType"] == "COMPLETE")
        .collect();
    for e in events {
        assert_eq!(
            e["schemaURL"],
            "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
        );
        let run = e["run"]["facets"]["lineageStore_run"]["runId"]
            .as_str()
            .unwrap();
        // The store's identity is part of the id: the same run_id in two stores differs.
        let id: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("store/_lineage/store.json")).unwrap(),
        )
        .unwrap();
        let store_id = id["store_id"].as_str().unwrap();
        assert_eq!(
            e["run"]["facets"]["lineageStore_run"]["storeId"].as_str(),
            Some(store_id)
        );
        let want = uuid::Uuid::new_v5(
            &uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, b"urn:lineage-store:run_id"),
            format!("{store_id}/{run}").as_bytes(),
        );
        assert_eq!(
            e["run"]["runId"],
            want.to_string(),
            "UUIDv5 of store_id/run_id"
        );
        assert_eq!(e["job"]["name"], "geostd", "the tool name of tool_version");
        let mine: Vec<&Value> = pointers.iter().filter(|p| p["run_id"] == run).collect();
        // The Delta version (= seal) that first holds the output's commits.
        for o in e["outputs"].as_array().unwrap() {
            match run {
                "run-a" => assert_eq!(o["facets"]["version"]["datasetVersion"], "1"),
                _ => assert!(o["facets"].get("version").is_none(), "run-b is not sealed"),
            }
        }
        let mut commits_seen = 0;
        for o in e["outputs"].as_array().unwrap() {
            let crs = o["outputFacets"]["lineageStore_outcomes"]["targetCrs"]
                .as_str()
                .unwrap();
            let store_abs = std::fs::canonicalize(&s).unwrap();
            assert_eq!(o["namespace"], "file");
            assert_eq!(
                o["name"],
                format!("{}/run_id={run}/target_crs={crs}", store_abs.display())
            );
            let commits = o["outputFacets"]["lineageStore_commits"]["commits"]
                .as_array()
                .unwrap();
            for c in commits {
                let p = mine
                    .iter()
                    .find(|p| p["commit_id"] == c["commitId"])
                    .unwrap();
                assert_eq!(p["target_crs"], crs);
                assert_eq!(c["sha256"], p["sha256"]);
                assert_eq!(c["rowCount"], p["row_count"]);
                let part = dir
                    .path()
                    .join("store")
                    .join(p["part_path"].as_str().unwrap());
                assert_eq!(c["sha256"].as_str().unwrap(), sha256_file(&part));
                let ptr = dir.path().join(format!(
                    "store/_lineage/commits/run_id={run}/{}.json",
                    p["commit_id"].as_str().unwrap()
                ));
                assert_eq!(c["pointerSha256"].as_str().unwrap(), sha256_file(&ptr));
                if run == "run-a" {
                    assert_eq!(c["sealedBy"]["seq"], 1);
                    assert_eq!(c["sealedBy"]["sha256"].as_str().unwrap(), seal1);
                } else {
                    assert!(c.get("sealedBy").is_none(), "run-b is not sealed: {c}");
                }
            }
            commits_seen += commits.len();
            // Outcome counts, recomputed from the input the test wrote.
            let input: Vec<Value> = sample::events(60)
                .into_iter()
                .filter(|r| r["run_id"] == run)
                .filter(|r| {
                    let t = r["target_crs"].as_str().unwrap();
                    (t == "EPSG:4326") == (crs == "EPSG:4326")
                })
                .collect();
            let rejected = input.iter().filter(|r| r["outcome"] == "rejected").count();
            let f = &o["outputFacets"]["lineageStore_outcomes"];
            assert_eq!(f["rowCount"], input.len());
            assert_eq!(f["rejected"], rejected);
            assert_eq!(f["transformed"], input.len() - rejected);
            assert_eq!(f["sourceCrs"]["EPSG:4258"], input.len());
            if rejected > 0 {
                assert_eq!(f["rejectionReasons"]["outside_area_of_use"], rejected);
            }
            assert_eq!(f["stages"]["reproject"]["rowCount"], input.len());
            assert_eq!(
                o["outputFacets"]["outputStatistics"]["rowCount"],
                input.len()
            );
        }
        assert_eq!(commits_seen, mine.len(), "every commit of the run, once");
        let rf = &e["run"]["facets"]["lineageStore_run"];
        if run == "run-a" {
            assert_eq!(rf["seal"]["seq"], 1);
            assert_eq!(rf["unsealedCommits"], 0);
        } else {
            assert!(rf.get("seal").is_none());
            assert_eq!(rf["unsealedCommits"], mine.len());
        }
    }
}

#[test]
fn exports_are_stable_and_select_by_run_seal_and_commit() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let first = ok(&lineage_env(&["export", "openlineage", "--store", &s], &[]));
    let again = ok(&lineage_env(&["export", "openlineage", "--store", &s], &[]));
    assert_eq!(first, again, "re-exports are byte-identical");
    ok(&support::lineage(&["seal", "--store", &s], None));
    let a = export(&s, &["--run-id", "run-a"]);
    assert_eq!(a.len(), 2, "START and COMPLETE");
    let a_lines: Vec<String> = a
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(
        a_lines,
        first.lines().take(2).collect::<Vec<_>>(),
        "a later seal does not change an earlier run's events"
    );
    let since = export(&s, &["--since-seal", "1"]);
    assert_eq!(since.len(), 2, "only run-b was sealed after seal 1");
    for e in &since {
        assert_eq!(e["run"]["facets"]["lineageStore_run"]["runId"], "run-b");
        assert_eq!(e["run"]["facets"]["lineageStore_run"]["seal"]["seq"], 2);
    }
    for o in since[1]["outputs"].as_array().unwrap() {
        assert_eq!(o["facets"]["version"]["datasetVersion"], "2");
    }
    assert!(export(&s, &["--since-seal", "2"]).is_empty());
    let per_commit = export(&s, &["--per", "commit", "--run-id", "run-a"]);
    let commits = ok(&support::lineage(
        &["log", "--store", &s, "--run-id", "run-a"],
        None,
    ));
    assert_eq!(per_commit.len(), commits.lines().count());
    let log: Vec<Value> = ok(&support::lineage(
        &["log", "--store", &s, "--run-id", "run-a", "--json"],
        None,
    ))
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    for e in &per_commit {
        assert_eq!(e["eventType"], "OTHER");
        let id = &e["outputs"][0]["outputFacets"]["lineageStore_commits"]["commits"][0]["commitId"];
        let p = log.iter().find(|p| &p["commit_id"] == id).unwrap();
        assert_eq!(
            e["eventTime"], p["max_event_time_utc"],
            "the commit's last event"
        );
        assert_eq!(
            e["run"]["runId"], a[0]["run"]["runId"],
            "one OpenLineage run"
        );
        assert_eq!(e["outputs"].as_array().unwrap().len(), 1);
    }
    let o = lineage_env(
        &["export", "openlineage", "--store", &s, "--since-seal", "3"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        support::text(&o).1.contains("the newest is 2"),
        "{}",
        support::text(&o).1
    );
    let o = lineage_env(
        &["export", "openlineage", "--store", &s, "--run-id", "nope"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(support::text(&o).1.contains("no commits of run_id nope"));
}

#[test]
fn a_pointer_changed_after_sealing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let ptr_dir = dir.path().join("store/_lineage/commits/run_id=run-a");
    let ptr = std::fs::read_dir(&ptr_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&ptr).unwrap();
    // committed_utc: a field only the seal protects (the part cannot contradict it).
    std::fs::write(
        &ptr,
        text.replace("\"committed_utc\": \"20", "\"committed_utc\": \"19"),
    )
    .unwrap();
    let edited = std::fs::read_to_string(&ptr).unwrap();
    assert_ne!(text, edited);
    let o = lineage_env(&["export", "openlineage", "--store", &s], &[]);
    let (out, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(out.is_empty(), "nothing exported: {out}");
    assert!(err.contains("changed after sealing"), "{err}");
    assert!(
        err.contains(ptr.file_name().unwrap().to_str().unwrap()),
        "{err}"
    );
}

/// What the scripted endpoint does with one request.
#[derive(Debug, Clone, Copy)]
enum Reply {
    Status(u16),
    /// Read the request, then close the connection without an answer.
    Hangup,
}

#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: String,
    reply: String,
}

/// A scripted HTTP endpoint on 127.0.0.1: answers requests in order from `script`
/// (then 200), recording each. Runs until the test process ends.
fn endpoint(script: Vec<Reply>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut script = script.into_iter();
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let reply = script.next().unwrap_or(Reply::Status(200));
            if let Some(s) = serve(conn, reply) {
                log.lock().unwrap().push(s);
            }
        }
    });
    (url, seen)
}

fn serve(mut conn: TcpStream, reply: Reply) -> Option<Seen> {
    let mut r = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    let reply_text = match reply {
        Reply::Hangup => "hangup".to_string(),
        Reply::Status(code) => {
            let text = if code == 200 { "" } else { "scripted failure" };
            let retry = if code == 503 {
                "Retry-After: 0\r\n"
            } else {
                ""
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {code} X\r\n{retry}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            code.to_string()
        }
    };
    Some(Seen {
        path,
        headers,
        body: String::from_utf8(body).ok()?,
        reply: reply_text,
    })
}

pub(super) fn post(store: &str, url: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "export",
        "openlineage",
        "--store",
        store,
        "--post",
        url,
        "--post-backoff-ms",
        "1",
        "--post-timeout",
        "5",
    ];
    args.extend_from_slice(extra);
    lineage_env(&args, &[("OPENLINEAGE_API_KEY", "test-secret-key")])
}

#[test]
fn post_retries_failures_and_delivers_every_event_once_with_the_standard_headers() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let want = ok(&lineage_env(
        &["export", "openlineage", "--store", &s, "--run-id", "run-a"],
        &[],
    ));
    let (url, seen) = endpoint(vec![
        Reply::Status(503),
        Reply::Hangup,
        Reply::Status(200),
        Reply::Status(500),
        Reply::Status(200),
    ]);
    let o = post(&s, &url, &["--run-id", "run-a"]);
    let (out, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("posted 2 events"), "{out}");
    assert!(out.contains("(5 attempts)"), "{out}");
    assert!(!out.contains("test-secret-key") && !err.contains("test-secret-key"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5, "{seen:?}");
    let lines: Vec<&str> = want.lines().collect();
    // Event 1 was sent three times (503, hang-up, 200), event 2 twice (500, 200).
    let bodies: Vec<&str> = seen.iter().map(|s| s.body.as_str()).collect();
    assert_eq!(bodies, [lines[0], lines[0], lines[0], lines[1], lines[1]]);
    let accepted: Vec<&str> = seen
        .iter()
        .filter(|s| s.reply == "200")
        .map(|s| s.body.as_str())
        .collect();
    assert_eq!(
        accepted, lines,
        "each event accepted exactly once, in order"
    );
    for s in &seen {
        assert_eq!(s.path, "/api/v1/lineage");
        let h = |k: &str| {
            s.headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(h("content-type"), Some("application/json"));
        assert_eq!(h("authorization"), Some("Bearer test-secret-key"));
    }
}

#[test]
fn an_event_the_endpoint_refuses_is_named_and_the_exit_code_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let out_file = dir.path().join("events.ndjson");
    // Event 1 is refused for good (400: no retry); event 2 is still sent and accepted.
    let (url, seen) = endpoint(vec![Reply::Status(400), Reply::Status(200)]);
    let o = post(
        &s,
        &url,
        &[
            "--run-id",
            "run-a",
            "--out",
            out_file.to_str().unwrap(),
            "--endpoint",
            "",
        ],
    );
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("1 of 2 events were NOT delivered"), "{err}");
    assert!(err.contains("event 1 (run_id=run-a START, "), "{err}");
    assert!(err.contains("after 1 attempt(s): HTTP 400"), "{err}");
    assert!(err.contains("scripted failure"), "{err}");
    assert!(!err.contains("test-secret-key"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/", "--endpoint '' posts to the URL itself");
    let written = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(written.lines().count(), 2, "--out holds every event");
    assert_eq!(seen[1].body, written.lines().nth(1).unwrap());

    // An endpoint that keeps failing: every attempt is made, then the event is reported.
    let (url, seen) = endpoint(vec![Reply::Status(503); 10]);
    let o = post(&s, &url, &["--run-id", "run-b", "--post-retries", "2"]);
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("event 1 (run_id=run-b START, 2 commits) after 3 attempt(s): HTTP 503"),
        "{err}"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        6,
        "START and COMPLETE, 3 attempts each"
    );

    // Nothing listening: a transport error, retried, then reported. The port is bound but
    // not listening (connections are refused) until the test ends, so no other test of
    // this process can be given it meanwhile.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind(([127, 0, 0, 1], 0).into()).unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    let o = post(&s, &url, &["--run-id", "run-b", "--post-retries", "1"]);
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("after 2 attempt(s)"), "{err}");
    for bad in ["ftp://x", "http://user:pw@127.0.0.1:1"] {
        let o = post(&s, bad, &[]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
}

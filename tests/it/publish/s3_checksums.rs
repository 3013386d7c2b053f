//! S3 buckets with Object Lock demand an integrity checksum on every upload: every object
//! lineage-store puts on S3 carries `x-amz-checksum-sha256`. LocalStack stores the checksum
//! and returns it on a HEAD with `x-amz-checksum-mode: ENABLED`, which is how this test
//! sees what was sent; moto does not return it, so there the test checks that appends to
//! an Object Lock bucket succeed and verify clean.

use base64::Engine;
use lineage_store::AtomicPublisher;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{self, lineage_env, text, Emulator};

/// The headers of a plain (unsigned) HEAD request, lower-cased names. LocalStack does not
/// check signatures by default; the request is built by hand so that the check does not
/// depend on the client under test.
async fn head(endpoint: &str, path: &str) -> Vec<(String, String)> {
    let hostport = endpoint.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(hostport).await.unwrap();
    let req = format!(
        "HEAD {path} HTTP/1.1\r\nHost: {hostport}\r\nx-amz-checksum-mode: ENABLED\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or_default().to_string();
    assert!(status.contains(" 200 "), "HEAD {path}: {status}");
    lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

fn append_and_verify(url: &str, ep: &str) {
    let input = support::ndjson("run-lock", 20, "lock");
    let o = lineage_env(
        &[
            "append",
            "--store",
            url,
            "--endpoint-url",
            ep,
            "--batch-rows",
            "5",
        ],
        &[],
        Some(input.as_bytes()),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let o = lineage_env(&["verify", "--store", url, "--endpoint-url", ep], &[], None);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_s3_upload_carries_a_sha256_checksum() {
    let Some(ep) = Emulator::LocalStack.endpoint("every_s3_upload_carries_a_sha256_checksum")
    else {
        return;
    };
    let bucket = support::s3_lock_bucket();
    let url = support::s3_url(&bucket, "checksums");
    append_and_verify(&url, &ep);
    // Read back through a store rooted at the same prefix as the CLI's.
    let opts = lineage_store::StoreOptions::new().endpoint_url(Some(ep.clone()));
    let store = lineage_store::open(&url, &opts).await.unwrap();
    let objects = store.list("").await.unwrap();
    // 4 parts, 4 pointers, 4 commit-index entries (empty objects, checksummed too) and
    // the store's identity
    assert_eq!(objects.len(), 3 * 4 + 1, "{objects:?}");
    let prefix = url
        .trim_start_matches(&format!("s3://{bucket}/"))
        .to_string();
    for o in objects {
        let bytes = store.get(&o.key).await.unwrap().unwrap();
        let want = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&bytes));
        let h = head(&ep, &format!("/{bucket}/{prefix}/{}", o.key)).await;
        let got = h
            .iter()
            .find(|(k, _)| k == "x-amz-checksum-sha256")
            .map(|(_, v)| v.as_str());
        assert_eq!(got, Some(want.as_str()), "{}: {h:?}", o.key);
    }
}

#[test]
fn appends_to_an_object_lock_bucket_on_moto() {
    let Some(ep) = Emulator::Moto.endpoint("appends_to_an_object_lock_bucket_on_moto") else {
        return;
    };
    append_and_verify(&support::s3_url(&support::s3_lock_bucket(), "lock"), &ep);
}

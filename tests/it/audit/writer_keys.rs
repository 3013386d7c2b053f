//! Writer keys (`append --signing-key`, `repair --writer-key`): a signed orphan part is
//! adopted, unsigned ones, ones signed by another key and ones whose bytes changed are
//! refused with why; `verify` names a signature that does not hold; unsigned parts are the
//! bytes they were before signatures; and the pointer's `writer` record, never a secret.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lineage_store::internal::keys;
use lineage_store::{AtomicPublisher, MapEnv, MemoryPublisher, Pointer, ProblemKind as K, Writer};

use crate::support::audit::{events, of_kind, verify_later};
use crate::support::{lineage, lineage_env, text};

/// Six events of run `golden`, one partition: the input of the byte-identity check.
fn golden_events() -> String {
    (0..6)
        .map(|i| {
            serde_json::json!({
                "event_id": format!("g-{i}"), "run_id": "golden", "sequence": i,
                "event_time_utc": format!("2026-07-13T06:00:{i:02}Z"), "stage": "reproject",
                "event_type": "crs_transform", "feature_id": format!("feature-{i}"),
                "source_crs": "EPSG:4326", "target_crs": "EPSG:4326", "outcome": "transformed",
                "strategy_index": 0, "accuracy_m": 0.5, "rejection_reason": null,
                "tool_version": "test/1", "audit_tag": "g"
            })
            .to_string()
                + "\n"
        })
        .collect()
}

/// A store whose identity is fixed (so its parts' footers are).
fn fixed_store(dir: &Path) -> PathBuf {
    let s = dir.join("store");
    std::fs::create_dir_all(s.join("_lineage")).unwrap();
    std::fs::write(
        s.join("_lineage/store.json"),
        "{\n  \"format\": \"lineage-store-id/1\",\n  \"store_id\": \"5f0c3a4e-8a7b-4c1d-9e2f-0123456789ab\",\n  \"created_utc\": \"2026-01-01T00:00:00Z\"\n}\n",
    )
    .unwrap();
    s
}

/// `lineage keygen --out DIR/NAME`: (secret, public) paths and the key id.
fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let prefix = dir.join(name);
    let o = lineage(&["keygen", "--out", prefix.to_str().unwrap()], None);
    assert!(o.status.success(), "{:?}", text(&o));
    let (out, _) = text(&o);
    let id = out.trim().rsplit(' ').next().unwrap().to_string();
    (
        prefix.with_extension("key"),
        prefix.with_extension("pub"),
        id,
    )
}

/// Append `input` to `store` (signed with `key` if given); the pointers printed.
fn append(store: &Path, input: &str, key: Option<&Path>, extra: &[&str]) -> Vec<Pointer> {
    let tag = &lineage_store::internal::digest::sha256_hex(input.as_bytes())[..12];
    let file = store.with_extension(format!("{tag}.ndjson"));
    std::fs::write(&file, input).unwrap();
    let mut args = vec![
        "append",
        "--store",
        store.to_str().unwrap(),
        "--input",
        file.to_str().unwrap(),
        "--json",
    ];
    if let Some(k) = key {
        args.extend(["--signing-key", k.to_str().unwrap()]);
    }
    args.extend(extra);
    let o = lineage(&args, None);
    assert!(o.status.success(), "{:?}", text(&o));
    text(&o)
        .0
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// As if the writer died after the part and before its pointer: the pointer and index
/// entry of `p` are removed.
fn orphan(store: &Path, p: &Pointer) {
    std::fs::remove_file(store.join(keys::pointer_key(&p.run_id, &p.commit_id))).unwrap();
    let index = lineage_store::internal::index::key_of(p).unwrap();
    std::fs::remove_file(store.join(index)).unwrap();
}

/// The footer's key-value metadata of a part file.
fn footer_kv(path: &Path) -> Vec<(String, Option<String>)> {
    let bytes = bytes::Bytes::from(std::fs::read(path).unwrap());
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes)
        .unwrap();
    meta.file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Flip the last byte of column `col`'s chunk (page data no footer check decodes).
fn flip_in_column_chunk(path: &Path, col: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    let (start, len) = meta.row_group(0).column(col).byte_range();
    let at = usize::try_from(start + len - 1).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn an_unsigned_part_is_the_bytes_it_was_before_signatures_and_a_signed_one_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // The sha256 `lineage append` of the commit before writer signatures gave this input
    // (fixed store id, commit ids from the commit key, encoding 4, contract 1.2.0: text
    // input is now written as the newest version that holds it, 1.3.0, unless pinned).
    const BEFORE: &str = "de87f9aadc5baf27639fabd3e7e28a264aca3cb84fa3c7e2e167195da6814076";
    let plain = fixed_store(&dir.path().join("a"));
    let p = append(
        &plain,
        &golden_events(),
        None,
        &["--commit-key", "golden-key", "--schema-version", "1.2.0"],
    );
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].sha256, BEFORE);
    let kv = footer_kv(&plain.join(&p[0].part_path));
    assert!(
        !kv.iter().any(|(k, _)| k.starts_with("lineage_writer_")),
        "{kv:?}"
    );

    let (secret, _, id) = keygen(dir.path(), "writer");
    let signed = fixed_store(&dir.path().join("b"));
    let q = append(
        &signed,
        &golden_events(),
        Some(&secret),
        &["--commit-key", "golden-key", "--schema-version", "1.2.0"],
    );
    assert_ne!(q[0].sha256, BEFORE);
    assert_eq!(q[0].commit_id, p[0].commit_id);
    let kv = footer_kv(&signed.join(&q[0].part_path));
    let get = |k: &str| kv.iter().find(|(n, _)| n == k).and_then(|(_, v)| v.clone());
    assert_eq!(get("lineage_writer_key_id").as_deref(), Some(id.as_str()));
    for k in [
        "lineage_writer_public_key",
        "lineage_writer_signed_bytes",
        "lineage_writer_body_sha256",
        "lineage_writer_signature",
    ] {
        assert!(get(k).is_some(), "{k} missing: {kv:?}");
    }
    // The signature covers the bytes before the page indexes and footer.
    let n: u64 = get("lineage_writer_signed_bytes").unwrap().parse().unwrap();
    let body = std::fs::read(signed.join(&q[0].part_path)).unwrap();
    assert!(n > 4 && n < body.len() as u64);
    assert_eq!(
        lineage_store::internal::digest::sha256_hex(&body[..n as usize]),
        get("lineage_writer_body_sha256").unwrap()
    );
    // The pointer records the key id; `files --json` says the part is signed and by whom.
    assert_eq!(
        q[0].writer
            .as_ref()
            .and_then(|w| w.writer_key_id.as_deref()),
        Some(id.as_str())
    );
    let s = signed.to_str().unwrap();
    assert!(lineage(&["seal", "--store", s], None).status.success());
    let o = lineage(&["files", "--store", s, "--json"], None);
    let line: serde_json::Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    assert_eq!(line["writer_key_id"], serde_json::json!(id));
    let plain_s = plain.to_str().unwrap();
    assert!(lineage(&["seal", "--store", plain_s], None)
        .status
        .success());
    let o = lineage(&["files", "--store", plain_s, "--json"], None);
    let line: serde_json::Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    assert_eq!(line["writer_key_id"], serde_json::Value::Null);
    let o = lineage(&["verify", "--store", s], None);
    assert!(o.status.success(), "{:?}", text(&o));
}

#[test]
fn repair_with_writer_keys_adopts_only_what_a_given_key_signed_over_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    let (a_key, a_pub, a_id) = keygen(dir.path(), "a");
    let (b_key, _, b_id) = keygen(dir.path(), "b");
    assert!(!b_id.is_empty());
    let ev = |tag: &str| crate::support::ndjson(tag, 4, tag);
    // Each append is one run: 2 partitions, 2 commits.
    let signed = append(&store, &ev("signed"), Some(&a_key), &[]);
    let unsigned = append(&store, &ev("unsigned"), None, &[]);
    let other = append(&store, &ev("other"), Some(&b_key), &[]);
    let flipped = append(&store, &ev("flipped"), Some(&a_key), &[]);
    for p in [&signed[0], &unsigned[0], &other[0], &flipped[0]] {
        orphan(&store, p);
    }
    flip_in_column_chunk(&store.join(&flipped[0].part_path), 14);

    let o = lineage(
        &[
            "repair",
            "--store",
            s,
            "--grace",
            "0s",
            "--writer-key",
            a_pub.to_str().unwrap(),
            "--json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let r: serde_json::Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    let pkey = keys::pointer_key(&signed[0].run_id, &signed[0].commit_id);
    assert_eq!(r["adopted"], serde_json::json!([pkey]));
    let refused: Vec<(String, String)> = serde_json::from_value(r["refused"].clone()).unwrap();
    assert_eq!(refused.len(), 3, "{refused:?}");
    let why = |p: &Pointer| {
        refused
            .iter()
            .find(|(k, _)| *k == p.part_path)
            .map(|(_, w)| w.clone())
            .unwrap_or_else(|| panic!("{} not refused: {refused:?}", p.part_path))
    };
    assert!(
        why(&unsigned[0]).starts_with("unsigned"),
        "{}",
        why(&unsigned[0])
    );
    let w = why(&other[0]);
    assert!(
        w.contains(&b_id) && w.contains("not one of the writer keys given"),
        "{w}"
    );
    let w = why(&flipped[0]);
    assert!(w.contains("bytes changed") && w.contains(&a_id), "{w}");

    // The adopted pointer is marked, and names the key that signed its part.
    let adopted: Pointer =
        serde_json::from_slice(&std::fs::read(store.join(&pkey)).unwrap()).unwrap();
    assert!(adopted.adopted);
    assert_eq!(
        adopted.writer.and_then(|w| w.writer_key_id),
        Some(a_id.clone())
    );
    // Nothing else was written for the refused ones.
    for p in [&unsigned[0], &other[0], &flipped[0]] {
        assert!(!store
            .join(keys::pointer_key(&p.run_id, &p.commit_id))
            .exists());
    }

    // A byte flipped in the adopted part afterwards: verify names the signature too.
    flip_in_column_chunk(&store.join(&signed[0].part_path), 14);
    let o = lineage(&["verify", "--store", s, "--grace", "0s", "--json"], None);
    let v: serde_json::Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    let bad: Vec<&serde_json::Value> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "bad_writer_signature")
        .collect();
    assert_eq!(bad.len(), 1, "{v}");
    assert_eq!(bad[0]["key"], serde_json::json!(signed[0].part_path));
    assert!(
        bad[0]["detail"].to_string().contains("bytes changed"),
        "{}",
        bad[0]
    );
}

#[tokio::test]
async fn verify_names_a_signed_part_whose_footer_was_edited() {
    let mem = Arc::new(MemoryPublisher::new());
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let ptrs = Writer::new(mem.clone())
        .with_batch_rows(30)
        .with_signing_key(Some(key))
        .append(&events(60, 1, 3), |_| {})
        .await
        .unwrap();
    assert!(verify_later(mem.as_ref()).await.is_clean());
    // Another body digest of the same length in the footer: the signature no longer holds.
    let p = &ptrs[0];
    let bytes = mem.get(&p.part_path).await.unwrap().unwrap().to_vec();
    let kv = footer_kv_bytes(&bytes);
    let digest = kv
        .iter()
        .find(|(k, _)| k == "lineage_writer_body_sha256")
        .and_then(|(_, v)| v.clone())
        .unwrap();
    let forged = digest.replace(&digest[..1], if &digest[..1] == "0" { "1" } else { "0" });
    let at = memchr::memmem::rfind(&bytes, digest.as_bytes()).unwrap();
    let mut edited = bytes.clone();
    edited[at..at + 64].copy_from_slice(forged.as_bytes());
    mem.tamper_put(&p.part_path, bytes::Bytes::from(edited));
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::BadWriterSignature);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert!(bad[0].1.contains("does not verify"), "{}", bad[0].1);
    assert_eq!(of_kind(&r, K::DigestMismatch).len(), 1);
}

fn footer_kv_bytes(bytes: &[u8]) -> Vec<(String, Option<String>)> {
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.to_vec()))
        .unwrap();
    meta.file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Secret variables a process may hold; none may reach a pointer.
const SECRETS: [(&str, &str); 6] = [
    ("AWS_SECRET_ACCESS_KEY", "secret-aws-key-0001"),
    ("AWS_SESSION_TOKEN", "secret-session-0002"),
    ("AWS_ACCESS_KEY_ID", "AKIASECRET00000003"),
    ("AZURE_STORAGE_KEY", "secret-azure-key-0004"),
    ("AZURE_CLIENT_SECRET", "secret-azure-client-0005"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/secret/gcp-0006.json"),
];

#[tokio::test]
async fn the_pointer_records_who_wrote_it_from_the_injected_environment_never_a_secret() {
    let mem = Arc::new(MemoryPublisher::new());
    let mut vars: Vec<(&str, &str)> = SECRETS.to_vec();
    vars.extend([
        ("AWS_LAMBDA_FUNCTION_NAME", "ingest-fn"),
        ("AWS_BATCH_JOB_ID", "job-42"),
        ("AWS_BATCH_JOB_ARRAY_INDEX", "3"),
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/writer"),
        ("CLOUD_RUN_JOB", "crj"),
    ]);
    let env = MapEnv::new(Some("host-7"), vars);
    let key = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    let kid = lineage_store::internal::writer_sig::key_id(&key.verifying_key());
    let ptrs = Writer::new(mem.clone())
        .with_environment(&env, "test-process")
        .with_request_id(Some("req-1".into()))
        .with_signing_key(Some(key))
        .append(&events(10, 1, 1), |_| {})
        .await
        .unwrap();
    let p = &ptrs[0];
    let w = p.writer.clone().unwrap();
    assert_eq!(w.host.as_deref(), Some("host-7"));
    assert_eq!(w.process.as_deref(), Some("test-process"));
    assert_eq!(w.request_id.as_deref(), Some("req-1"));
    assert_eq!(w.writer_key_id.as_deref(), Some(kid.as_str()));
    let names: Vec<&str> = w.platform.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "AWS_BATCH_JOB_ARRAY_INDEX",
            "AWS_BATCH_JOB_ID",
            "AWS_LAMBDA_FUNCTION_NAME",
            "AWS_ROLE_ARN",
            "CLOUD_RUN_JOB"
        ]
    );
    let stored = mem
        .get(&keys::pointer_key(&p.run_id, &p.commit_id))
        .await
        .unwrap()
        .unwrap();
    let stored = String::from_utf8(stored.to_vec()).unwrap();
    for (name, value) in SECRETS {
        assert!(
            !stored.contains(value) && !stored.contains(name),
            "{name} in {stored}"
        );
    }
    // Integrity does not depend on it.
    assert!(verify_later(mem.as_ref()).await.is_clean());

    // A pointer without the record (every pointer before it) reads and writes back unchanged.
    let plain = Arc::new(MemoryPublisher::new());
    let q = crate::support::audit::append(plain.clone(), 10, 10, 1).await;
    assert!(q[0].writer.is_none());
    let key = keys::pointer_key(&q[0].run_id, &q[0].commit_id);
    let bytes = plain.get(&key).await.unwrap().unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("writer"));
    assert_eq!(
        Pointer::from_bytes(&key, &bytes)
            .unwrap()
            .to_bytes()
            .unwrap(),
        bytes.to_vec()
    );
}

#[test]
fn the_cli_records_the_platform_in_the_pointer_and_log_and_show_print_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = store.to_str().unwrap();
    let input = dir.path().join("e.ndjson");
    std::fs::write(&input, crate::support::ndjson("r1", 2, "t")).unwrap();
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.extend([("AWS_BATCH_JOB_ID", "job-cli-9"), ("AWS_PROFILE", "ingest")]);
    let o = lineage_env(
        &["append", "--store", s, "--input", input.to_str().unwrap()],
        &env,
        None,
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let mut pointers = Vec::new();
    for f in crate::support::files_below(&store.join("_lineage/commits")) {
        pointers.push(std::fs::read_to_string(f).unwrap());
    }
    assert_eq!(pointers.len(), 2);
    for p in &pointers {
        assert!(p.contains("\"AWS_BATCH_JOB_ID\": \"job-cli-9\""), "{p}");
        assert!(p.contains(" cli\""), "{p}");
        for (name, value) in SECRETS {
            assert!(!p.contains(value) && !p.contains(name), "{name} in {p}");
        }
    }
    let (log, _) = text(&lineage(&["log", "--store", s], None));
    assert_eq!(
        log.matches("AWS_BATCH_JOB_ID=job-cli-9").count(),
        2,
        "{log}"
    );
    assert!(log.contains("AWS_PROFILE=ingest"), "{log}");
    let commit = log.split_whitespace().nth(1).unwrap().to_string();
    let (show, _) = text(&lineage(&["show", "--store", s, &commit], None));
    assert!(
        show.contains("writer (as recorded):") && show.contains("job-cli-9"),
        "{show}"
    );
}

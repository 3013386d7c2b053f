//! The object-store wiring without an emulator where none is needed: how create answers
//! are mapped, how store URLs resolve, the aws-config credential adapter; and, against
//! moto and Azurite, that the standard AWS chain (profiles) works and that no secret ever
//! reaches an error message or a log line.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{future, ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use lineage_store::internal::object::map_create;
use lineage_store::internal::object::Backend;
use lineage_store::internal::store::aws_creds::AwsConfigCredentials;
use lineage_store::internal::store::cloud::parse;
use lineage_store::internal::store::cloud::ParsedUrl;
use lineage_store::{ErrorKind, Outcome};
use object_store::CredentialProvider;

use crate::support::{self, lineage_without, text, Emulator};

fn os_err(kind: &str, text: &str) -> object_store::Error {
    let source: Box<dyn std::error::Error + Send + Sync> = text.to_string().into();
    let path = "p".to_string();
    match kind {
        "exists" => object_store::Error::AlreadyExists { path, source },
        "precondition" => object_store::Error::Precondition { path, source },
        "denied" => object_store::Error::PermissionDenied { path, source },
        _ => object_store::Error::Generic {
            store: "S3",
            source,
        },
    }
}

#[test]
fn create_answers_are_mapped_per_backend() {
    let ok = object_store::PutResult {
        e_tag: Some("\"1\"".into()),
        version: None,
        extensions: Default::default(),
    };
    assert_eq!(
        map_create(Backend::S3, "s3://b/k", Ok(ok)).unwrap(),
        Outcome::Created
    );
    // S3 answers a taken key with 412, which object_store reports as AlreadyExists.
    let taken = os_err("exists", "Server returned non-2xx status code: 412 Precondition Failed: <Code>PreconditionFailed</Code>");
    assert_eq!(
        map_create(Backend::S3, "s3://b/k", Err(taken)).unwrap(),
        Outcome::AlreadyExists
    );
    // S3's 409 ConditionalRequestConflict is also reported as AlreadyExists, but the key
    // may be empty: ambiguous, an error of kind Io so that the writer reads back.
    let conflict = os_err("exists", "Server returned non-2xx status code: 409 Conflict: <Error><Code>ConditionalRequestConflict</Code></Error>");
    let e = map_create(Backend::S3, "s3://b/k", Err(conflict)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("s3://b/k"), "{e}");
    // Azure: 409 BlobAlreadyExists is a taken key; Precondition (object_store 0.14.1) too.
    let az409 = os_err(
        "exists",
        "Server returned non-2xx status code: 409 Conflict: BlobAlreadyExists",
    );
    assert_eq!(
        map_create(Backend::Azure, "az://c/k", Err(az409)).unwrap(),
        Outcome::AlreadyExists
    );
    let az412 = os_err("precondition", "412 Precondition Failed: ConditionNotMet");
    assert_eq!(
        map_create(Backend::Azure, "az://c/k", Err(az412)).unwrap(),
        Outcome::AlreadyExists
    );
    let gcs412 = os_err("precondition", "412");
    assert_eq!(
        map_create(Backend::Gcs, "gs://b/k", Err(gcs412)).unwrap(),
        Outcome::AlreadyExists
    );
    // A timeout: unknown outcome, kind Io.
    let timeout = os_err("generic", "HTTP error: operation timed out");
    let e = map_create(Backend::Gcs, "gs://b/k", Err(timeout)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    // Refused outright: an error, not a value.
    let denied = os_err("denied", "403 AccessDenied");
    assert!(map_create(Backend::S3, "s3://b/k", Err(denied)).is_err());
}

fn parsed(url: &str) -> ParsedUrl {
    parse(url)
        .unwrap()
        .unwrap_or_else(|| panic!("{url} is an object-store URL"))
}

#[test]
fn store_urls_resolve_in_one_place() {
    let p = parsed("s3://bucket/a/b/");
    assert_eq!((p.backend, p.prefix.as_str()), (Backend::S3, "a/b"));
    assert_eq!(parsed("s3://bucket").prefix, "");
    assert_eq!(parsed("s3a://bucket/x").backend, Backend::S3);
    let p = parsed("az://container/lineage/prod");
    assert_eq!(
        (p.backend, p.prefix.as_str()),
        (Backend::Azure, "lineage/prod")
    );
    assert_eq!(parsed("azure://container/p").prefix, "p");
    let p = parsed("abfss://container@account.dfs.core.windows.net/p/q");
    assert_eq!((p.backend, p.prefix.as_str()), (Backend::Azure, "p/q"));
    assert_eq!(parsed("abfs://container/p").prefix, "p");
    let p = parsed("https://account.blob.core.windows.net/container/p/q");
    assert_eq!((p.backend, p.prefix.as_str()), (Backend::Azure, "p/q"));
    let p = parsed("gs://bucket/x/y");
    assert_eq!((p.backend, p.prefix.as_str()), (Backend::Gcs, "x/y"));
    assert!(parse("/var/lineage").unwrap().is_none());
    assert!(parse("file:///var/lineage").unwrap().is_none());
    assert!(parse("https://example.com/x").unwrap().is_none());
    let e = parse("https://account.blob.core.windows.net/").unwrap_err();
    assert!(e.to_string().contains("name the container"), "{e}");
}

#[test]
fn credentials_in_a_url_are_refused_without_echoing_them() {
    for url in [
        "s3://bucket/p?X-Amz-Signature=SECRET-SIG-123",
        "https://account.blob.core.windows.net/c/p?sv=2024&sig=SECRET-SIG-123",
        "az://user:SECRET-SIG-123@container/p",
    ] {
        let e = parse(url).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input);
        let m = e.to_string();
        assert!(!m.contains("SECRET-SIG-123"), "{m}");
        assert!(m.contains("environment"), "{m}");
    }
    // Through the CLI: exit 2, no secret on either stream.
    let o = support::lineage_env(
        &["log", "--store", "s3://bucket/p?sig=SECRET-SIG-123"],
        &[],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !out.contains("SECRET") && !err.contains("SECRET"),
        "{out}{err}"
    );
}

/// A malformed endpoint is a usage error naming it, not a panic inside the signer.
#[test]
fn malformed_s3_endpoints_are_refused() {
    for (ep, why) in [
        ("http://127.0.0.1:4566-1", "not a valid URL"),
        ("127.0.0.1:4566", "http:// or https://"),
        ("ftp://127.0.0.1:4566", "http:// or https://"),
    ] {
        let o = support::lineage_env(
            &["log", "--store", "s3://bucket/p", "--endpoint-url", ep],
            &[],
            None,
        );
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{ep}: {err}");
        assert!(err.contains(ep) && err.contains(why), "{ep}: {err}");
    }
    let o = support::lineage_env(
        &["log", "--store", "s3://bucket/p"],
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:99999")],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("AWS_ENDPOINT_URL"), "{err}");
}

#[test]
fn unsupported_schemes_are_named() {
    let o = support::lineage_env(&["log", "--store", "ftp://host/x"], &[], None);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("unsupported store scheme `ftp://`"), "{err}");
}

/// A provider that counts how often it is asked.
#[derive(Debug)]
struct Counting {
    calls: Arc<AtomicUsize>,
    expires_in: Option<Duration>,
}

impl ProvideCredentials for Counting {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        self.calls.fetch_add(1, Ordering::SeqCst);
        future::ProvideCredentials::ready(Ok(Credentials::new(
            "AKIDTESTKEYID",
            "SECRET-KEY-DO-NOT-PRINT",
            Some("SESSION-TOKEN-DO-NOT-PRINT".into()),
            self.expires_in.map(|d| SystemTime::now() + d),
            "test",
        )))
    }
}

#[tokio::test]
async fn the_aws_chain_adapter_hands_over_and_caches_credentials() {
    let calls = Arc::new(AtomicUsize::new(0));
    let a = AwsConfigCredentials::new(SharedCredentialsProvider::new(Counting {
        calls: calls.clone(),
        expires_in: Some(Duration::from_secs(3600)),
    }));
    let c = a.get_credential().await.unwrap();
    assert_eq!(c.key_id, "AKIDTESTKEYID");
    assert_eq!(c.secret_key, "SECRET-KEY-DO-NOT-PRINT");
    assert_eq!(c.token.as_deref(), Some("SESSION-TOKEN-DO-NOT-PRINT"));
    a.get_credential().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "cached while fresh");
    let dbg = format!("{a:?}");
    assert!(!dbg.contains("SECRET") && !dbg.contains("AKID"), "{dbg}");

    // A credential about to expire is fetched again on every use.
    let calls = Arc::new(AtomicUsize::new(0));
    let a = AwsConfigCredentials::new(SharedCredentialsProvider::new(Counting {
        calls: calls.clone(),
        expires_in: Some(Duration::from_secs(60)),
    }));
    a.get_credential().await.unwrap();
    a.get_credential().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// Credentials from a named profile (which object_store's own S3 lookup cannot read)
/// reach moto through the aws-config chain.
#[test]
fn s3_credentials_come_from_an_aws_profile() {
    let Some(ep) = Emulator::Moto.endpoint("s3_credentials_come_from_an_aws_profile") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("credentials");
    std::fs::write(
        &creds,
        "[lineage-writer]\naws_access_key_id = profilekey\naws_secret_access_key = profilesecret\n",
    )
    .unwrap();
    let config = dir.path().join("config");
    std::fs::write(&config, "[profile lineage-writer]\nregion = eu-west-1\n").unwrap();
    let url = support::s3_url(&support::s3_bucket(), "profile");
    let input = support::ndjson("run-profile", 5, "profile");
    let env = [
        ("AWS_PROFILE", "lineage-writer"),
        ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap()),
        ("AWS_CONFIG_FILE", config.to_str().unwrap()),
    ];
    let o = lineage_without(
        &["append", "--store", &url, "--endpoint-url", &ep],
        &env,
        &[
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_REGION",
        ],
        Some(input.as_bytes()),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let o = lineage_without(
        &["verify", "--store", &url, "--endpoint-url", &ep],
        &env,
        &[
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_REGION",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

/// Failing requests with distinctive secrets, traced at the most verbose level: neither
/// the error nor any log line holds a secret.
#[test]
fn no_secret_reaches_an_error_or_a_log() {
    if let Some(ep) = Emulator::Moto.endpoint("no_secret_reaches_an_error_or_a_log (S3)") {
        let env = [
            ("AWS_ACCESS_KEY_ID", "AKIDDISTINCTIVE123"),
            ("AWS_SECRET_ACCESS_KEY", "s3-secret-DISTINCTIVE-456"),
            ("AWS_SESSION_TOKEN", "s3-token-DISTINCTIVE-789"),
            ("LINEAGE_LOG", "trace"),
        ];
        let o = support::lineage_env(
            &[
                "verify",
                "--store",
                "s3://no-such-bucket-here/p",
                "--endpoint-url",
                &ep,
            ],
            &env,
            None,
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("no-such-bucket-here"),
            "the error names the store: {err}"
        );
        for s in ["s3-secret-DISTINCTIVE-456", "s3-token-DISTINCTIVE-789"] {
            assert!(!out.contains(s) && !err.contains(s), "{s} leaked:\n{err}");
        }
    }
    if Emulator::Azurite
        .endpoint("no_secret_reaches_an_error_or_a_log (Azure)")
        .is_some()
    {
        // A wrong (but well-formed) account key: Azurite refuses the signature.
        let key = "QXp1cmUtc2VjcmV0LURJU1RJTkNUSVZFLWtleS0wMTIzNDU2Nzg5";
        let env = [("AZURE_STORAGE_ACCOUNT_KEY", key), ("LINEAGE_LOG", "trace")];
        let url = support::az_url("secret");
        let o = support::lineage_env(&["verify", "--store", &url], &env, None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            !out.contains(key) && !err.contains(key),
            "key leaked:\n{err}"
        );
    }
}

//! Object-store URLs: `s3://`, `az://` (and `azure://`, `adl://`, `abfs[s]://`,
//! `https://<account>.blob|dfs.core.windows.net/...`) and `gs://`, each turned into an
//! [`ObjectStorePublisher`] rooted at the URL's path.
//!
//! Credentials never come from the URL (a URL ends up in shell history, logs and error
//! messages): a query string or a password in it is refused.
//! - S3: the standard AWS chain through `aws-config` ([`crate::publish::store::aws_creds`]); region from
//!   `AWS_REGION`/`AWS_DEFAULT_REGION` or the profile; endpoint from `--endpoint-url`,
//!   `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (LocalStack, moto, MinIO).
//! - Azure: `AZURE_*` variables as `object_store` reads them (account key, SAS, client
//!   secret, workload or managed identity, Azure CLI; `AZURE_STORAGE_USE_EMULATOR=true`
//!   with `AZURITE_BLOB_STORAGE_URL` for Azurite).
//! - GCS: `GOOGLE_*` variables as `object_store` reads them (`GOOGLE_SERVICE_ACCOUNT`,
//!   `GOOGLE_APPLICATION_CREDENTIALS`, `GOOGLE_BEARER_TOKEN`), else the metadata server.
//!
//! A command that opens two stores at once (`lineage replicate --from A --to B`, `verify
//! --replica-of`, `--witness`) gives each side its own settings through a [`SideEnv`]:
//! `<prefix>NAME` (e.g. `LINEAGE_TO_AWS_PROFILE`, `LINEAGE_FROM_AZURE_STORAGE_ACCOUNT_KEY`)
//! takes precedence over `NAME` for that store only.

use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, Checksum, S3ConditionalPut};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreScheme};
use url::Url;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::publish::object::{Backend, ObjectStorePublisher};
use crate::publish::store::aws_creds::AwsConfigCredentials;
use crate::publish::store::options::{SideEnv, StoreOptions};

/// Time one request may take. object_store's default (30 s) would time out a large part
/// on an ordinary link (a 4 GiB part at 200 Mbit/s takes ~3 minutes) and turn a good
/// upload into an ambiguous one; 10 minutes covers the largest part at ~60 Mbit/s.
/// object_store's own variable for the service (`AWS_TIMEOUT`, `AZURE_TIMEOUT`,
/// `GOOGLE_TIMEOUT`, e.g. `30s`), when set, wins.
pub(crate) const REQUEST_TIMEOUT: &str = "600s";

/// True when the operator set object_store's request timeout for a service through its
/// own variable (`<FAMILY>_TIMEOUT`, which `from_env` reads, or this side's
/// `<prefix><FAMILY>_TIMEOUT`): then [`REQUEST_TIMEOUT`] must not override it. (The
/// fault-injection tests shorten it this way.)
fn timeout_is_set(env: &SideEnv, family: &str) -> bool {
    env.var(&format!("{family}_TIMEOUT")).is_some()
}

/// Which object store a URL names, or `None` when it is not an object-store URL.
pub(crate) fn backend_of(url: &str) -> Option<Backend> {
    let scheme = url.split_once("://")?.0.to_ascii_lowercase();
    match scheme.as_str() {
        "s3" | "s3a" => Some(Backend::S3),
        "gs" => Some(Backend::Gcs),
        "az" | "azure" | "adl" | "abfs" | "abfss" => Some(Backend::Azure),
        "https" => {
            let host = Url::parse(url).ok()?.host_str()?.to_ascii_lowercase();
            [
                ".blob.core.windows.net",
                ".dfs.core.windows.net",
                ".blob.fabric.microsoft.com",
                ".dfs.fabric.microsoft.com",
            ]
            .iter()
            .any(|s| host.ends_with(s))
            .then_some(Backend::Azure)
        }
        _ => None,
    }
}

/// The parts of an object-store URL: which service, the URL without credentials (for
/// messages and the builder) and the prefix inside the bucket or container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// The service.
    pub backend: Backend,
    /// The URL as given, checked to hold no credentials.
    pub url: String,
    /// Prefix inside the bucket/container, without leading or trailing `/`.
    pub prefix: String,
}

/// Parse and check an object-store URL.
pub fn parse(url: &str) -> Result<Option<ParsedUrl>> {
    let Some(backend) = backend_of(url) else {
        return Ok(None);
    };
    let shown = crate::base::text::redact_url(url);
    let u = Url::parse(url).map_err(|e| Error::usage(format!("{shown}: not a valid URL: {e}")))?;
    if u.query().is_some() || u.fragment().is_some() {
        return Err(Error::usage(format!(
            "{}: store URLs take no query string or fragment; put credentials (SAS tokens, keys) in the environment",
            redact(&u)
        )));
    }
    if u.password().is_some() {
        return Err(Error::usage(format!(
            "{}: store URLs take no password; put credentials in the environment",
            redact(&u)
        )));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(Error::usage(format!(
            "{shown}: no bucket or container after the scheme"
        )));
    }
    let (_, path) = ObjectStoreScheme::parse(&u)
        .map_err(|e| Error::usage(format!("{shown}: not an object-store URL: {e}")))?;
    if backend == Backend::Azure && u.scheme() == "https" && u.path().trim_matches('/').is_empty() {
        return Err(Error::usage(format!(
            "{shown}: name the container: https://<account>.blob.core.windows.net/<container>/<prefix>"
        )));
    }
    Ok(Some(ParsedUrl {
        backend,
        url: url.trim_end_matches('/').to_string(),
        prefix: path.as_ref().trim_matches('/').to_string(),
    }))
}

/// A URL with any password and query replaced, for messages about refused URLs.
fn redact(u: &Url) -> String {
    let mut u = u.clone();
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// Open an object-store URL with its options' endpoint and environment, or `None` when the
/// URL names no object store.
pub(crate) async fn open(url: &str, opts: &StoreOptions) -> Result<Option<ObjectStorePublisher>> {
    let env = &opts.env;
    let Some(p) = parse(url)? else {
        return Ok(None);
    };
    let store: Arc<dyn ObjectStore> = match p.backend {
        Backend::S3 => Arc::new(s3(&p, opts, env).await?),
        Backend::Azure => {
            let mut b = with_overrides(
                MicrosoftAzureBuilder::from_env(),
                env,
                "AZURE_",
                |b, k, v| match k.parse::<AzureConfigKey>() {
                    Ok(k) => b.with_config(k, v),
                    Err(_) => b,
                },
            )
            .with_url(p.url.clone());
            if !timeout_is_set(env, "AZURE") {
                b = b.with_config(
                    AzureConfigKey::Client(ClientConfigKey::Timeout),
                    REQUEST_TIMEOUT,
                );
            }
            Arc::new(b.build().map_err(|e| build_error(&p, e))?)
        }
        Backend::Gcs => {
            let mut b = with_overrides(
                GoogleCloudStorageBuilder::from_env(),
                env,
                "GOOGLE_",
                |b, k, v| match k.parse::<GoogleConfigKey>() {
                    Ok(k) => b.with_config(k, v),
                    Err(_) => b,
                },
            )
            .with_url(p.url.clone());
            if !timeout_is_set(env, "GOOGLE") {
                b = b.with_config(
                    GoogleConfigKey::Client(ClientConfigKey::Timeout),
                    REQUEST_TIMEOUT,
                );
            }
            Arc::new(b.build().map_err(|e| build_error(&p, e))?)
        }
        Backend::Memory => {
            return Err(Error::internal("no URL names the memory backend"));
        }
    };
    ObjectStorePublisher::new(store, p.backend, &p.prefix, p.url).map(Some)
}

/// Apply a side's `<prefix>FAMILY_*` variables to a builder, as `from_env` applied the
/// plain ones (names it does not know are ignored, as `from_env` ignores them).
fn with_overrides<B>(
    builder: B,
    env: &SideEnv,
    family: &str,
    apply: impl Fn(B, &str, String) -> B,
) -> B {
    env.overrides(family)
        .into_iter()
        .fold(builder, |b, (k, v)| apply(b, &k, v))
}

fn build_error(p: &ParsedUrl, e: object_store::Error) -> Error {
    Error::usage(format!("cannot open {}: {e}", p.url))
}

/// The S3 endpoint of one side: the option, else the side's own AWS variables, else the
/// plain ones.
pub(crate) fn s3_endpoint_side(opts: &StoreOptions, env: &SideEnv) -> Option<String> {
    opts.endpoint_url
        .clone()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| env.own("AWS_ENDPOINT_URL_S3"))
        .or_else(|| env.own("AWS_ENDPOINT_URL"))
        .or_else(|| SideEnv::plain().var("AWS_ENDPOINT_URL_S3"))
        .or_else(|| SideEnv::plain().var("AWS_ENDPOINT_URL"))
}

/// Refuse an endpoint that is not a plain `http(s)://host[:port][/path]` URL: object_store
/// would accept it and then panic while signing the first request (e.g. on a bad port).
pub(crate) fn check_endpoint(ep: &str) -> Result<()> {
    let bad = |why: String| {
        Err(Error::usage(text![
            format!("S3 endpoint {:?} (from ", crate::base::text::redact_url(ep)),
            Param::EndpointUrl,
            format!(", AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) {why}")
        ]))
    };
    if !(ep.starts_with("http://") || ep.starts_with("https://")) {
        return bad("must start with http:// or https://".into());
    }
    let u = match Url::parse(ep) {
        Ok(u) => u,
        Err(e) => return bad(format!("is not a valid URL: {e}")),
    };
    if u.host_str().is_none_or(str::is_empty) {
        return bad("has no host".into());
    }
    if u.query().is_some() || u.password().is_some() {
        return bad("must not carry a query string or a password".into());
    }
    Ok(())
}

async fn s3(
    p: &ParsedUrl,
    opts: &StoreOptions,
    env: &SideEnv,
) -> Result<object_store::aws::AmazonS3> {
    let sdk = aws_side_config(env).await;
    let provider = sdk.credentials_provider().ok_or_else(|| {
        Error::usage(format!(
            "cannot open {}: the AWS credential chain is not available",
            p.url
        ))
    })?;
    let region = sdk
        .region()
        .map(|r| r.as_ref().to_string())
        .unwrap_or_else(|| "us-east-1".to_string());
    // from_env keeps object_store's own AWS_* settings (server-side encryption, request
    // payer, ...); credentials, region and endpoint are set from the aws-config chain.
    let mut b =
        with_overrides(AmazonS3Builder::from_env(), env, "AWS_", |b, k, v| match k
            .parse::<AmazonS3ConfigKey>()
        {
            Ok(k) => b.with_config(k, v),
            Err(_) => b,
        })
        .with_url(p.url.clone())
        .with_region(region)
        .with_credentials(Arc::new(AwsConfigCredentials::new(provider)))
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        // Buckets with Object Lock refuse uploads without an integrity checksum.
        .with_checksum_algorithm(Checksum::SHA256);
    if !timeout_is_set(env, "AWS") {
        b = b.with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
            REQUEST_TIMEOUT,
        );
    }
    b = addressing(b, p, s3_endpoint_side(opts, env))?;
    b.build().map_err(|e| build_error(p, e))
}

/// The AWS chain's configuration for one side: its own profile, region or static keys
/// (`<prefix>AWS_*`) replace the chain's plain ones.
async fn aws_side_config(env: &SideEnv) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(profile) = env.own("AWS_PROFILE") {
        loader = loader.profile_name(profile);
    }
    if let Some(region) = env
        .own("AWS_REGION")
        .or_else(|| env.own("AWS_DEFAULT_REGION"))
    {
        loader = loader.region(aws_config::Region::new(region));
    }
    if let (Some(id), Some(secret)) = (
        env.own("AWS_ACCESS_KEY_ID"),
        env.own("AWS_SECRET_ACCESS_KEY"),
    ) {
        loader = loader.credentials_provider(aws_credential_types::Credentials::new(
            id,
            secret,
            env.own("AWS_SESSION_TOKEN"),
            None,
            "lineage-side-environment",
        ));
    }
    loader.load().await
}

/// How requests name the bucket: path-style at an explicit endpoint (emulators and most
/// S3-compatible stores want it), else AWS's virtual-hosted style, except for legacy
/// bucket names that are not valid host names (dots break TLS on `*.s3.amazonaws.com`,
/// `_`/upper case are not DNS labels): those only work path-style.
fn addressing(
    b: AmazonS3Builder,
    p: &ParsedUrl,
    endpoint: Option<String>,
) -> Result<AmazonS3Builder> {
    Ok(match endpoint {
        Some(ep) => {
            check_endpoint(&ep)?;
            let http = ep.starts_with("http://");
            b.with_endpoint(ep)
                .with_allow_http(http)
                .with_virtual_hosted_style_request(false)
        }
        None => {
            let host_safe = p
                .url
                .trim_start_matches("s3://")
                .trim_start_matches("s3a://")
                .split('/')
                .next()
                .is_some_and(|b| {
                    b.bytes()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                });
            b.with_virtual_hosted_style_request(host_safe)
        }
    })
}

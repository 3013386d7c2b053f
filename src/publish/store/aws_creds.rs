//! The standard AWS credential chain (`aws-config`) as an `object_store` credential provider.
//!
//! `object_store`'s own S3 credential lookup knows environment variables, web identity,
//! ECS and instance metadata, but not profiles, SSO or `credential_process`; `aws-config`
//! knows all of them, exactly as the AWS CLI and SDKs resolve them (what Lambda, Batch and
//! EKS provide included). This adapter asks the chain and caches the answer until shortly
//! before it expires.
//!
//! Secrets never leave this module except inside an [`AwsCredential`] handed to the signer:
//! the `Debug` output names only the chain, and errors carry the chain's message, which
//! never holds a key.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use object_store::aws::AwsCredential;
use object_store::CredentialProvider;
use tokio::sync::Mutex;

/// Refresh this long before a temporary credential expires (a signed request must not
/// race the expiry, and a long PUT can take minutes).
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// An `object_store` [`CredentialProvider`] backed by an `aws-config` provider chain.
pub struct AwsConfigCredentials {
    provider: SharedCredentialsProvider,
    cached: Mutex<Option<(Arc<AwsCredential>, Option<SystemTime>)>>,
}

impl std::fmt::Debug for AwsConfigCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credential itself, not even the key id.
        f.debug_struct("AwsConfigCredentials")
            .field("provider", &"aws-config default chain")
            .finish_non_exhaustive()
    }
}

impl AwsConfigCredentials {
    /// Wrap a provider (usually `SdkConfig::credentials_provider()`).
    pub fn new(provider: SharedCredentialsProvider) -> Self {
        Self {
            provider,
            cached: Mutex::new(None),
        }
    }
}

fn fresh(expiry: Option<SystemTime>, now: SystemTime) -> bool {
    match expiry {
        None => true,
        Some(t) => t
            .duration_since(now)
            .map(|left| left > REFRESH_MARGIN)
            .unwrap_or(false),
    }
}

#[async_trait]
impl CredentialProvider for AwsConfigCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        // Held across the refresh so that concurrent uploads ask the chain once.
        let mut cached = self.cached.lock().await;
        if let Some((c, expiry)) = cached.as_ref() {
            if fresh(*expiry, SystemTime::now()) {
                return Ok(c.clone());
            }
        }
        let creds = self
            .provider
            .provide_credentials()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: format!(
                    "no AWS credentials from the standard chain (environment, profile/SSO, web identity, ECS, instance metadata): {}",
                    aws_error_text(&e)
                )
                .into(),
            })?;
        let c = Arc::new(AwsCredential {
            key_id: creds.access_key_id().to_string(),
            secret_key: creds.secret_access_key().to_string(),
            token: creds.session_token().map(str::to_string),
        });
        tracing::debug!(
            expires = ?creds.expiry(),
            "AWS credentials resolved by the aws-config chain"
        );
        *cached = Some((c.clone(), creds.expiry()));
        Ok(c)
    }
}

/// The chain's error with its causes, one line (the chain's messages name providers and
/// reasons, never a key).
fn aws_error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

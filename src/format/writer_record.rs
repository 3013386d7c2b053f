//! Who wrote a commit, as far as the platform says: the optional `writer` object of a
//! pointer. Host name, the writing program, the writer key's id when the part is signed
//! ([`crate::parts::writer_sig`]), a request id the caller passes (a Lambda handler's),
//! and the values of an allow-list of platform variables ([`PLATFORM_VARS`]): job, task,
//! function and role names, never a credential. Only the listed names are ever read, so
//! no secret (`AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AZURE_STORAGE_KEY`, …) can
//! reach a pointer, whatever the environment holds.
//!
//! The record is what the writer's environment said, not evidence: anyone who can write
//! a pointer can write any record. `verify` ignores it for integrity; `log` and `show`
//! print it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::env::Environment;

/// The platform variables a writer record may hold, and nothing else: AWS (Lambda, Batch,
/// the role and profile in use), Google Cloud (Cloud Run jobs and services), Azure (Batch,
/// Container Apps, App Service and Functions, the identity's client and tenant ids).
pub const PLATFORM_VARS: [&str; 27] = [
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_BATCH_JOB_ID",
    "AWS_BATCH_JOB_ARRAY_INDEX",
    "AWS_BATCH_JOB_ATTEMPT",
    "AWS_BATCH_JQ_NAME",
    "AWS_EXECUTION_ENV",
    "AWS_REGION",
    "AWS_ROLE_ARN",
    "AWS_PROFILE",
    "CLOUD_RUN_JOB",
    "CLOUD_RUN_EXECUTION",
    "CLOUD_RUN_TASK_INDEX",
    "CLOUD_RUN_TASK_ATTEMPT",
    "K_SERVICE",
    "K_REVISION",
    "GOOGLE_CLOUD_PROJECT",
    "AZ_BATCH_JOB_ID",
    "AZ_BATCH_TASK_ID",
    "AZ_BATCH_NODE_ID",
    "CONTAINER_APP_NAME",
    "CONTAINER_APP_REVISION",
    "CONTAINER_APP_JOB_NAME",
    "CONTAINER_APP_JOB_EXECUTION_NAME",
    "WEBSITE_SITE_NAME",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
];

/// Longest value a writer record keeps (longer ones are cut there, at a character).
pub const MAX_WRITER_VALUE: usize = 256;

/// A pointer's `writer` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterRecord {
    /// The writing machine's host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The writing program and its version (`lineage-store/<v> cli`, `… python`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The id of the writer key that signed the part, when it is signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_key_id: Option<String>,
    /// A request id the caller passed (a Lambda invocation's `aws_request_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The [`PLATFORM_VARS`] that were set, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub platform: BTreeMap<String, String>,
}

impl WriterRecord {
    /// The record of a writer in `env` (read once, here), running `process`.
    pub fn from_env(env: &dyn Environment, process: &str) -> Self {
        let platform = PLATFORM_VARS
            .iter()
            .filter_map(|&name| env.var(name).map(|v| (name.to_string(), clean(&v))))
            .collect();
        Self {
            host: env.host_name().map(|h| clean(&h)),
            process: Some(clean(process)),
            writer_key_id: None,
            request_id: None,
            platform,
        }
    }

    /// The same record with the writer key's id and the caller's request id.
    pub fn with(mut self, writer_key_id: Option<String>, request_id: Option<&str>) -> Self {
        self.writer_key_id = writer_key_id;
        self.request_id = request_id.map(clean);
        self
    }

    /// Why the record is not one lineage-store could have written, or `None`: a value
    /// longer than [`MAX_WRITER_VALUE`] or holding a control character, or a platform
    /// variable not in [`PLATFORM_VARS`].
    pub fn problem(&self) -> Option<String> {
        let fields = [
            ("host", &self.host),
            ("process", &self.process),
            ("writer_key_id", &self.writer_key_id),
            ("request_id", &self.request_id),
        ];
        let named = fields
            .iter()
            .filter_map(|(n, v)| v.as_deref().map(|v| (*n, v)))
            .chain(self.platform.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        for (name, v) in named {
            if v.len() > MAX_WRITER_VALUE || v.chars().any(char::is_control) {
                return Some(format!(
                    "writer.{name} is longer than {MAX_WRITER_VALUE} bytes or holds a control character"
                ));
            }
        }
        self.platform
            .keys()
            .find(|k| !PLATFORM_VARS.contains(&k.as_str()))
            .map(|k| {
                format!(
                    "writer.platform names {}, not a platform variable lineage-store records",
                    crate::schema::rules::quote(k)
                )
            })
    }

    /// One line: `host h, lineage-store/… cli, key 0123…, request r, AWS_BATCH_JOB_ID=…`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(h) = &self.host {
            parts.push(format!("host {h}"));
        }
        if let Some(p) = &self.process {
            parts.push(p.clone());
        }
        if let Some(k) = &self.writer_key_id {
            parts.push(format!("writer key {k}"));
        }
        if let Some(r) = &self.request_id {
            parts.push(format!("request {r}"));
        }
        parts.extend(self.platform.iter().map(|(k, v)| format!("{k}={v}")));
        parts.join(", ")
    }
}

/// `v` without control characters, at most [`MAX_WRITER_VALUE`] bytes.
fn clean(v: &str) -> String {
    let mut out = String::new();
    for c in v.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_WRITER_VALUE {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::env::MapEnv;

    #[test]
    fn only_listed_variables_and_clean_values() {
        let env = MapEnv::new(
            Some("h1"),
            [
                ("AWS_BATCH_JOB_ID", "job-1"),
                ("AWS_SECRET_ACCESS_KEY", "SECRET1"),
                ("AWS_SESSION_TOKEN", "SECRET2"),
                ("K_SERVICE", "svc\nx"),
            ],
        );
        let r = WriterRecord::from_env(&env, "p").with(Some("k".into()), Some("req"));
        assert_eq!(r.platform.len(), 2);
        assert_eq!(r.platform["K_SERVICE"], "svcx");
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("SECRET"), "{json}");
        assert_eq!(r.problem(), None);
        let long = WriterRecord {
            host: Some("x".repeat(300)),
            ..WriterRecord::default()
        };
        assert!(long.problem().unwrap().contains("writer.host"));
        assert_eq!(clean(&"é".repeat(200)).len(), 256);
    }
}

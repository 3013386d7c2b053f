//! The store's identity: `_lineage/store.json`, created create-only by the first append to
//! a store and never changed. It names the store wherever a name must not depend on where
//! the store is found (its URL, a mount, a replica's bucket): a replica copies it, so a
//! store and its replicas share one identity.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};

/// Format tag of the identity object.
pub const IDENTITY_FORMAT: &str = "lineage-store-id/1";

/// The most an identity object is read of: three short fields take about 150 bytes.
pub const MAX_IDENTITY_BYTES: u64 = 4096;

/// What `_lineage/store.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreIdentity {
    /// Always [`IDENTITY_FORMAT`].
    pub format: String,
    /// A random UUID (version 4), lower-case and hyphenated.
    pub store_id: String,
    /// When the first append created it (RFC 3339; the writer's clock).
    pub created_utc: String,
}

impl StoreIdentity {
    /// A new identity with a random id, created at `created_utc`.
    pub fn new(created_utc: String) -> Self {
        Self {
            format: IDENTITY_FORMAT.to_string(),
            store_id: crate::base::rng::random_uuid().to_string(),
            created_utc,
        }
    }

    /// The stored bytes (pretty JSON and a newline, like every object of the store).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut b = serde_json::to_vec_pretty(self).map_err(Error::internal_from)?;
        b.push(b'\n');
        Ok(b)
    }

    /// Parse the object under `key`; refuses another format or a store id that is not a
    /// UUID.
    pub fn from_bytes(key: &str, bytes: &[u8]) -> Result<Self> {
        let corrupt = |message: String| Error::Corrupt {
            what: "store identity",
            key: key.to_string(),
            message: message.into(),
        };
        let id: StoreIdentity =
            serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        if id.format != IDENTITY_FORMAT {
            return Err(corrupt(format!("unknown format {:?}", id.format)));
        }
        if uuid::Uuid::try_parse(&id.store_id).is_err() {
            return Err(corrupt(format!("store_id {:?} is not a UUID", id.store_id)));
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_round_trips_and_a_bad_one_is_named() {
        let id = StoreIdentity::new("2026-12-01T00:00:00.000000Z".into());
        let back = StoreIdentity::from_bytes("k", &id.to_bytes().unwrap()).unwrap();
        assert_eq!(back, id);
        assert_eq!(
            uuid::Uuid::parse_str(&id.store_id)
                .unwrap()
                .get_version_num(),
            4
        );
        let e =
            StoreIdentity::from_bytes("k", br#"{"format":"x","store_id":"y","created_utc":"z"}"#)
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("corrupt store identity k: unknown format"),
            "{e}"
        );
    }
}

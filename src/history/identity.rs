//! Reading the store's identity ([`crate::format::identity`]), and creating it on the first
//! append. Creation is create-only: of two first appends racing, one creates it and the
//! other reads the winner's back, so a store never has two identities.

use bytes::Bytes;

use crate::base::clock::Clock;
use crate::base::error::{Error, Result};
use crate::base::time::rfc3339;
use crate::format::identity::{StoreIdentity, MAX_IDENTITY_BYTES};
use crate::format::keys::IDENTITY_KEY;
use crate::publish::checked::{create_or_read_back, Landed};
use crate::publish::AtomicPublisher;

/// The store's identity, `None` when it has none (empty, or written only by versions before
/// identities).
pub async fn read_identity(store: &dyn AtomicPublisher) -> Result<Option<StoreIdentity>> {
    let got = store
        .get_at_most(IDENTITY_KEY, MAX_IDENTITY_BYTES)
        .await
        .map_err(|e| match e {
            Error::TooLarge { size, max, .. } => Error::Corrupt {
                what: "store identity",
                key: IDENTITY_KEY.to_string(),
                message: format!("{size} bytes; a store identity is at most {max} (not read)")
                    .into(),
            },
            e => e,
        })?;
    match got {
        Some(b) => StoreIdentity::from_bytes(IDENTITY_KEY, &b).map(Some),
        None => Ok(None),
    }
}

/// The store's identity, created now when it has none (what every append does before its
/// first object). A corrupt identity object is an error: nothing is appended to a store
/// whose identity cannot be read.
pub async fn ensure_identity(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
) -> Result<StoreIdentity> {
    if let Some(id) = read_identity(store).await? {
        return Ok(id);
    }
    let ours = StoreIdentity::new(rfc3339(clock.now()));
    let bytes = Bytes::from(ours.to_bytes()?);
    let landed = create_or_read_back(store, IDENTITY_KEY, bytes.clone(), |have| {
        if have == bytes.as_ref() {
            return Ok(None);
        }
        // Another first append won the race: its identity is the store's.
        StoreIdentity::from_bytes(IDENTITY_KEY, have)
            .map(Some)
            .map_err(|e| e.to_string())
    })
    .await?;
    match landed {
        Landed::Ours(kept) => Ok(kept.found.flatten().unwrap_or(ours)),
        Landed::Theirs(why) => Err(crate::base::error::Error::Corrupt {
            what: "store identity",
            key: IDENTITY_KEY.to_string(),
            message: why.into(),
        }),
    }
}

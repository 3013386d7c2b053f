//! Create-only publishing that settles an ambiguous answer by reading back: the one
//! mechanism behind every object the store writes (parts, pointers, claims, seals, tiles,
//! Delta versions, replicas).
//!
//! A create-only PUT can answer "already exists" (someone, maybe our own earlier attempt,
//! holds the key) or fail ambiguously (a lost response: the object may or may not have
//! landed). Either way the object is read back and the caller's `is_ours` decides whether
//! what is there is what it meant to write. A lost race is a value ([`Landed::Theirs`]),
//! never a silent success.

use bytes::Bytes;

use crate::base::error::{Error, ErrorKind, Result};
use crate::publish::{AtomicPublisher, Outcome};

/// What happened to one object publish that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// We created it now.
    Created,
    /// It was there already and is ours (an earlier attempt landed).
    AlreadyOurs,
}

/// A publish that succeeded, with what `is_ours` decided of the object found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept<O> {
    /// Created now, or found there and ours.
    pub published: Published,
    /// What `is_ours` returned for the object found there (`None` when created now).
    pub found: Option<O>,
}

impl<O> PartialEq<Published> for Kept<O> {
    fn eq(&self, other: &Published) -> bool {
        self.published == *other
    }
}

/// What a create-only publish found: ours (created now or earlier, with what `is_ours`
/// decided of the object found there), or someone else's (with why, as `is_ours` said).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Landed<O, W = String> {
    /// The key holds our bytes.
    Ours(Kept<O>),
    /// The key holds something else; why it is not ours.
    Theirs(W),
}

/// Create `key`; on `AlreadyExists` or an ambiguous error, read it back and ask `is_ours`
/// whether what is there is what we meant to write. Errors only when the store fails (an
/// unambiguous error, or an ambiguous one whose read-back fails: the first error is
/// returned) or when the key is reported taken but cannot be read.
/// The least a read-back may read (see [`create_or_read_back`]).
const READ_BACK_MIN_BYTES: u64 = 1 << 20;

pub(crate) async fn create_or_read_back<O, W: From<String>>(
    store: &dyn AtomicPublisher,
    key: &str,
    bytes: Bytes,
    is_ours: impl Fn(&[u8]) -> std::result::Result<O, W>,
) -> Result<Landed<O, W>> {
    // What is already there is read back at most a few times our size: an object the same
    // as ours (or the same content from another build) is never far larger, and a planted
    // one of any size is then refused without being read.
    let most = (bytes.len() as u64)
        .saturating_mul(4)
        .max(READ_BACK_MIN_BYTES);
    let first = match store.put_create(key, bytes).await {
        Ok(Outcome::Created) => {
            return Ok(Landed::Ours(Kept {
                published: Published::Created,
                found: None,
            }))
        }
        Ok(Outcome::AlreadyExists) => None,
        Err(e) if matches!(e.kind(), ErrorKind::Io | ErrorKind::Conflict) => Some(e),
        Err(e) => return Err(e),
    };
    match store.get_at_most(key, most).await {
        Err(Error::TooLarge { size, max, .. }) => Ok(Landed::Theirs(W::from(format!(
            "holds {size} bytes, more than the {max} any object of this kind written here can be: not ours (not read); run `lineage verify`"
        )))),
        Ok(Some(existing)) => match is_ours(&existing) {
            Ok(found) => {
                tracing::info!(
                    key,
                    "object already present and identical: an earlier attempt landed"
                );
                Ok(Landed::Ours(Kept {
                    published: Published::AlreadyOurs,
                    found: Some(found),
                }))
            }
            Err(why) => Ok(Landed::Theirs(why)),
        },
        Ok(None) => Err(first.unwrap_or_else(|| Error::Conflict {
            key: key.to_string(),
            message: "the store reported the key as existing, but it cannot be read".into(),
        })),
        Err(read_err) => Err(first.unwrap_or(read_err)),
    }
}

/// [`create_or_read_back`] for objects only we may write under their key: someone else's
/// object there is a [`Error::Conflict`] naming the key and why. Never accepts silently.
/// What `is_ours` decided of an object found there comes back in [`Kept::found`].
pub async fn publish_checked<O>(
    store: &dyn AtomicPublisher,
    key: &str,
    bytes: Bytes,
    is_ours: impl Fn(&[u8]) -> std::result::Result<O, String>,
) -> Result<Kept<O>> {
    match create_or_read_back(store, key, bytes, is_ours).await? {
        Landed::Ours(kept) => Ok(kept),
        Landed::Theirs(why) => Err(Error::Conflict {
            key: key.to_string(),
            message: why,
        }),
    }
}

/// [`create_or_read_back`] for objects several writers race for (seals, whose sequence
/// number the first sealer takes): `true` when the key holds exactly `bytes`, `false` when
/// another writer's bytes are there.
pub(crate) async fn publish_racing(
    store: &dyn AtomicPublisher,
    key: &str,
    bytes: Bytes,
) -> Result<bool> {
    let want = bytes.clone();
    let landed = create_or_read_back(store, key, bytes, |have| {
        if have == want.as_ref() {
            Ok(())
        } else {
            Err(String::from("another writer's bytes"))
        }
    })
    .await?;
    Ok(matches!(landed, Landed::Ours(_)))
}

//! Witnessed heads: a second party records a store's head, so that cutting off the newest
//! seals, or rewriting history, is detected without anyone keeping a digest by hand.
//!
//! `lineage witness --store A --witness W` checks A's seal chain against the heads W
//! recorded for A before (a witness never vouches for a history that contradicts what it
//! saw), and records A's newest seal as a create-only object in W:
//!
//! ```text
//! <W>/_lineage/witness/<store id>/<seq, 20 digits>.json
//! ```
//!
//! The first record of a store walks its whole chain and checks it against every record.
//! A repeat record (W's newest record of a store names A's location) reads A's seal that
//! record names, whose sha256 must be the recorded head, and the seals after it only
//! ([`repeat`], which says why that digest vouches for seals 1..k and so for the store
//! id without reading seal 1); on any doubt it walks the whole chain as a first record.
//!
//! A read since a seal (`files`/`scan --since-seal K --witness W`) checks only the seals it
//! read against the records of the store W recorded at A's location ([`range`]).
//!
//! `lineage verify --store A --witness W` checks A's chain against every record: a
//! witnessed seal that is gone (truncation) or has other bytes (a rewrite) is a problem
//! naming the witnessed head. Each record names the record before it (its sequence number
//! and the sha256 of its bytes), so a record deleted from W is detected by the record after
//! it; only the newest record can vanish without a trace, which is why W must refuse
//! deletes (Object Lock, no delete permission) and be writable only by the witness's
//! credentials, never by the writer's.
//!
//! **Store id** ([`store_identity`]): the sha256 of the store's first seal, the one id a
//! store goes by wherever an auditor meets it (the witness's records, `verify --witness`,
//! the audit report). It is kept in the store itself, so the same store reached through
//! two URLs (an S3 endpoint and its alias, a mounted path) is one store, and a replica
//! made by `lineage replicate` shares its source's id and can be checked against the same
//! witness. It is fixed from the first seal on, covered by every later seal (and their
//! signatures), and cannot be chosen to collide with another store's; the identity object
//! (`_lineage/store.json`, which part footers name) is not sealed, so it is not the id a
//! witness binds.
//!
//! **A witness binds a location to one store.** A store whose history is rewritten from
//! its very first seal gets a new id. At a location where the witness recorded another
//! store, `lineage witness` refuses to record it and `verify --witness` reports it
//! ([`WitnessProblemKind::AnotherStoreAtLocation`], naming both ids), unless the new
//! store's first record was made on an explicit request
//! ([`WitnessOptions::new_store_at_location`]), which names the stores it replaces.

mod anchor;
mod check;
mod location;
mod range;
mod record;
mod repeat;
pub mod tlog;

use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::audit::chain::Chain;
use crate::base::clock::Clock;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::time::rfc3339;
use crate::format::pointer::tool_version;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::StoredSeal;
use crate::publish::checked::{publish_checked, Published};
use crate::publish::AtomicPublisher;

pub use anchor::{outcome as anchor_outcome, Witness};
pub use check::{check, check_store};
pub use range::{check_range, RangeReport, RANGE_HELD};
pub use record::{witness, witness_with};

/// Format tag of witness records.
pub const RECORD_FORMAT: &str = "lineage-witness/1";
/// The most a witness record can hold (a few hundred bytes: store id, URL, seal number,
/// head digest, time): a larger object is an unreadable record, not read.
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;
/// Where records live in the witness store: under `_lineage/`, so that a local witness
/// directory is recognised as one of ours by `--store`'s check (a mistyped path is
/// refused), and so that dataset readers of a bucket shared with data skip it.
pub const HEADS_PREFIX: &str = crate::format::keys::WITNESS_PREFIX;

/// The identity of a store: the sha256 of its first seal (`None` without a seal 1).
pub fn store_identity(chain: &Chain) -> Option<String> {
    chain
        .seals
        .first()
        .filter(|s| s.key_seq == 1)
        .map(|s| s.digest.clone())
}

/// The key of the record of seal `seq` of store `store_id`.
pub fn record_key(store_id: &str, seq: u64) -> String {
    format!("{HEADS_PREFIX}{store_id}/{seq:020}.json")
}

/// The record before this one, as the witness saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrevRecord {
    /// Its seal's sequence number.
    pub seq: u64,
    /// sha256 of its exact bytes.
    pub sha256: String,
}

/// One witnessed head, as stored in the witness store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessRecord {
    /// Always [`RECORD_FORMAT`].
    pub format: String,
    /// The store's identity (sha256 of its first seal).
    pub store_id: String,
    /// The store's URL as the witness reached it (for people; not the identity).
    pub store: String,
    /// The witnessed seal's sequence number.
    pub seq: u64,
    /// sha256 of the witnessed seal's bytes: the head digest.
    pub head: String,
    /// Commits the seal covers.
    pub tree_size: u64,
    /// Its Merkle root.
    pub root: String,
    /// When the seal says it was made.
    pub sealed_utc: String,
    /// When the witness saw it (the witness's clock).
    pub witnessed_utc: String,
    /// The lineage-store that recorded it.
    pub tool_version: String,
    /// The newest earlier record of this store when this one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<PrevRecord>,
    /// (The first record of a store only.) The stores the witness had recorded at the
    /// same location, replaced by this one on an explicit request
    /// (`lineage witness --new-store-at-location`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
}

/// What kind of problem the witness check found.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WitnessProblemKind {
    /// The witness holds no record of this store.
    NotWitnessed,
    /// A witnessed seal is gone from the store: its newest seals were cut off.
    WitnessedSealMissing,
    /// A witnessed seal has other bytes now: history was rewritten.
    WitnessedSealRewritten,
    /// A record another record names is gone from the witness store.
    WitnessRecordMissing,
    /// A record cannot be read, or contradicts its key or the record naming it.
    WitnessRecordCorrupt,
    /// The store's own chain has problems (`lineage witness` refuses to record it).
    StoreChain,
    /// The witness recorded another store (another store id, another history) at this
    /// store's location: the store there was replaced or rewritten from its first seal.
    AnotherStoreAtLocation,
}

/// One problem, naming the object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WitnessProblem {
    /// What is wrong.
    pub kind: WitnessProblemKind,
    /// The seal or record it is about.
    pub key: String,
    /// Details for a person.
    pub detail: String,
}

/// A witnessed head, for reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Witnessed {
    /// Sequence number.
    pub seq: u64,
    /// The head digest recorded.
    pub head: String,
    /// When it was witnessed.
    pub witnessed_utc: String,
}

/// The store checked against the witness.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessReport {
    /// The witness store.
    pub witness: String,
    /// The store's identity, when it has a first seal.
    pub store_id: Option<String>,
    /// Records of this store in the witness.
    pub records: u64,
    /// The newest witnessed head.
    pub newest_witnessed: Option<Witnessed>,
    /// The store's newest seal.
    pub store_head_seq: Option<u64>,
    /// Seals newer than the newest witnessed one (not witnessed yet: not a problem).
    pub unwitnessed_seals: u64,
    /// Everything wrong, sorted by kind then key.
    pub problems: Vec<WitnessProblem>,
}

impl WitnessReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    fn push(&mut self, kind: WitnessProblemKind, key: String, detail: String) {
        self.problems.push(WitnessProblem { kind, key, detail });
    }
}

/// A record as read, with the digest of its bytes.
struct ReadRecord {
    key: String,
    key_seq: u64,
    digest: String,
    record: std::result::Result<WitnessRecord, String>,
}

/// Every record of `store_id` in the witness store, sorted by sequence number.
async fn read_records(witness: &dyn AtomicPublisher, store_id: &str) -> Result<Vec<ReadRecord>> {
    let listed = list_records(witness, store_id).await?;
    read_listed(witness, store_id, listed).await
}

/// The records of `store_id` in the witness store as listed (their keys and seal numbers,
/// sorted by seal number), none read.
async fn list_records(witness: &dyn AtomicPublisher, store_id: &str) -> Result<Vec<(String, u64)>> {
    let prefix = format!("{HEADS_PREFIX}{store_id}/");
    let mut out: Vec<(String, u64)> = (witness.list_names(&prefix).await?.into_iter())
        .filter_map(|o| {
            let seq = o.key.strip_prefix(&prefix)?.strip_suffix(".json")?;
            let n = (seq.len() == 20)
                .then(|| seq.parse::<u64>().ok())
                .flatten()?;
            Some((o.key, n))
        })
        .collect();
    out.sort_by_key(|(_, n)| *n);
    Ok(out)
}

/// The records `listed` of `store_id`, read, sorted by sequence number.
async fn read_listed(
    witness: &dyn AtomicPublisher,
    store_id: &str,
    listed: Vec<(String, u64)>,
) -> Result<Vec<ReadRecord>> {
    let mut out: Vec<ReadRecord> = futures::stream::iter(listed)
        .map(|(key, n)| async move {
            match witness.get_at_most(&key, MAX_RECORD_BYTES).await {
                Err(Error::TooLarge { size, max, .. }) => Ok::<_, Error>(ReadRecord {
                    digest: sha256_hex(&[]),
                    key,
                    key_seq: n,
                    record: Err(format!(
                        "is {size} bytes, more than any witness record can be ({max}); not read"
                    )),
                }),
                other => {
                    let bytes = other?.ok_or_else(|| Error::NotFound(key.clone()))?;
                    Ok(record_of(store_id, key, n, &bytes))
                }
            }
        })
        .buffer_unordered(READ_CONCURRENCY)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    out.sort_by_key(|r| r.key_seq);
    Ok(out)
}

/// Record `key` (of seal `seq`) of `store_id`, read as `bytes`.
fn record_of(store_id: &str, key: String, seq: u64, bytes: &[u8]) -> ReadRecord {
    ReadRecord {
        digest: sha256_hex(bytes),
        record: parse_record(bytes, store_id, seq),
        key,
        key_seq: seq,
    }
}

fn parse_record(
    bytes: &[u8],
    store_id: &str,
    seq: u64,
) -> std::result::Result<WitnessRecord, String> {
    let r: WitnessRecord = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if r.format != RECORD_FORMAT {
        return Err(format!("unknown format {:?}", r.format));
    }
    if r.store_id != store_id || r.seq != seq {
        return Err(format!(
            "records store {} seal {}, but is stored as store {store_id} seal {seq}",
            r.store_id, r.seq
        ));
    }
    Ok(r)
}

/// What `witness` did.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessOutcome {
    /// The store's identity.
    pub store_id: String,
    /// The witnessed seal.
    pub seq: u64,
    /// Its digest.
    pub head: String,
    /// The record's key in the witness store.
    pub record: String,
    /// False when the witness had recorded this head already.
    pub created: bool,
    /// Why nothing was recorded (the chain, or its agreement with earlier records, failed).
    pub problems: Vec<WitnessProblem>,
}

/// How to witness.
#[derive(Debug, Clone, Default)]
pub struct WitnessOptions {
    /// Record a store the witness has never seen at a location where it recorded another
    /// store (the store there was genuinely replaced): its first record names the stores
    /// it replaces, and `verify --witness` accepts them. Without it, another store at a
    /// witnessed location is refused ([`WitnessProblemKind::AnotherStoreAtLocation`]).
    pub new_store_at_location: bool,
}

/// The record of seal `last` of store `id`, witnessed now, after `prev`.
fn new_record(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    (id, last): (&str, &StoredSeal),
    prev: Option<PrevRecord>,
    replaces: Vec<String>,
) -> Result<WitnessRecord> {
    let seal = last.seal.as_ref().map_err(|m| Error::Corrupt {
        what: "seal",
        key: last.key.clone(),
        message: m.clone(),
    })?;
    Ok(WitnessRecord {
        format: RECORD_FORMAT.to_string(),
        store_id: id.to_string(),
        store: store.describe(),
        seq: last.key_seq,
        head: last.digest.clone(),
        tree_size: seal.tree_size,
        root: seal.root.clone(),
        sealed_utc: seal.sealed_utc.clone(),
        witnessed_utc: rfc3339(clock.now()),
        tool_version: tool_version(),
        prev,
        replaces,
    })
}

/// Publish `rec` under `key` create-only. Another witness may record the same head at
/// once: same seal and head is agreement.
async fn publish_record(
    witness: &dyn AtomicPublisher,
    key: &str,
    rec: &WitnessRecord,
) -> Result<Published> {
    let mut bytes = serde_json::to_vec_pretty(rec).map_err(Error::internal_from)?;
    bytes.push(b'\n');
    let store_id = &rec.store_id;
    publish_checked(witness, key, Bytes::from(bytes), |have| match parse_record(
        have, store_id, rec.seq,
    ) {
        Ok(o) if o.head == rec.head => Ok(()),
        Ok(o) => Err(format!(
            "the witness recorded head {} for seal {}, this store's seal {} has {}",
            o.head, o.seq, rec.seq, rec.head
        )),
        Err(e) => Err(format!("an unreadable record is in the way: {e}")),
    })
    .await
    .map(|kept| kept.published)
}

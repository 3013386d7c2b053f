//! Trusted time for seals (RFC 3161): after a seal is published, `lineage seal --tsa URL`
//! asks a time-stamping authority for a token over the seal's digest and stores the
//! request and the answer beside the seal, create-only:
//!
//! ```text
//! _lineage/timestamps/<seq, 20 digits>.tsq    the TimeStampReq (SHA-256 imprint of the seal, nonce, certReq)
//! _lineage/timestamps/<seq, 20 digits>.tsr    the TSA's TimeStampResp, DER, as it answered
//! ```
//!
//! The request is stored before it is sent. A TSA that is down, slow or answers garbage
//! does not stop sealing: the seal is published, the request stays without an answer, and
//! the outcome says why ([`StampOutcome::failed`]). The next `seal --tsa` (with or without
//! anything new to seal) first sends every stored request that has no answer yet, oldest
//! first, then asks for every seal after the first timestamped one that has none (a seal
//! made without `--tsa`, e.g. by `lineage compact`), up to [`MAX_PER_RUN`] seals per run; it
//! stops at the first failure, so that the TSA's times follow the seals' order.
//!
//! An answer is stored only when it is a granted token over the seal's digest that echoes
//! the request's nonce; its signature and chain are checked by `verify --tsa-root`
//! ([`crate::format::timestamp`]), not here (the sealer need not hold the TSA's root).

mod http;

use std::collections::BTreeSet;

use bytes::Bytes;
use serde::Serialize;

use crate::base::error::Result;
use crate::format::keys::{self, HistoryKey, KeyKind};
use crate::format::timestamp::{build_query, parse_query, parse_reply, NONCE_BYTES};
use crate::history::head::read_seal;
use crate::publish::checked::publish_racing;
use crate::publish::AtomicPublisher;

pub use http::{Tsa, DEFAULT_TSA_TIMEOUT};

/// Most seals one run asks a time for.
pub const MAX_PER_RUN: usize = 100;

/// A seal whose time was backed by this run.
#[derive(Debug, Clone, Serialize)]
pub struct Stamped {
    /// The seal.
    pub seq: u64,
    /// The TSA's time (`genTime`, RFC 3339).
    pub tsa_utc: String,
    /// Where the response is stored.
    pub key: String,
}

/// A seal whose time could not be backed, and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotStamped {
    /// The seal.
    pub seq: u64,
    /// Why (the TSA's answer, a transport error, a refused token).
    pub why: String,
}

/// What a run of [`stamp_seals`] did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StampOutcome {
    /// Seals whose time was backed, oldest first.
    pub stamped: Vec<Stamped>,
    /// The first seal that failed (the run stopped there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<NotStamped>,
    /// Seals still without a time after this run (the failed one included), oldest first.
    pub pending: Vec<u64>,
}

/// Ask `tsa` for the time of every seal up to `newest` that needs one (see the module
/// docs): `newest` itself, every seal with a stored request and no answer, and every seal
/// after the first timestamped one without an answer.
pub async fn stamp_seals(
    store: &dyn AtomicPublisher,
    tsa: &Tsa,
    newest: u64,
) -> Result<StampOutcome> {
    let (queries, replies) = listed(store).await?;
    let first = queries
        .iter()
        .chain(&replies)
        .min()
        .copied()
        .unwrap_or(newest);
    let mut todo: Vec<u64> = (first.max(1)..=newest)
        .filter(|s| !replies.contains(s))
        .collect();
    let mut out = StampOutcome::default();
    let rest = todo.split_off(todo.len().min(MAX_PER_RUN));
    for (i, &seq) in todo.iter().enumerate() {
        match stamp_one(store, tsa, seq, queries.contains(&seq)).await? {
            Ok(s) => out.stamped.push(s),
            Err(why) => {
                out.failed = Some(NotStamped { seq, why });
                out.pending = todo[i..].to_vec();
                break;
            }
        }
    }
    out.pending.extend(rest);
    Ok(out)
}

/// The seals with a stored request, and with a stored response.
async fn listed(store: &dyn AtomicPublisher) -> Result<(BTreeSet<u64>, BTreeSet<u64>)> {
    let mut q = BTreeSet::new();
    let mut r = BTreeSet::new();
    for o in store.list(keys::TIMESTAMPS_PREFIX).await? {
        match keys::classify(&o.key) {
            KeyKind::History(HistoryKey::TimestampQuery(s)) => {
                q.insert(s);
            }
            KeyKind::History(HistoryKey::TimestampReply(s)) => {
                r.insert(s);
            }
            _ => {}
        }
    }
    Ok((q, r))
}

/// Back seal `seq`'s time: its stored request (or a new one, stored first), sent; the
/// answer stored when it is a granted token over the seal that echoes the nonce.
/// `Err(why)`: not backed now (store errors are the outer `Result`).
async fn stamp_one(
    store: &dyn AtomicPublisher,
    tsa: &Tsa,
    seq: u64,
    has_query: bool,
) -> Result<std::result::Result<Stamped, String>> {
    let Some(seal) = read_seal(store, seq).await? else {
        return Ok(Err(format!("seal {seq} is not in the store")));
    };
    let mut digest = [0u8; 32];
    match hex::decode(&seal.digest) {
        Ok(d) if d.len() == 32 => digest.copy_from_slice(&d),
        _ => {
            return Ok(Err(format!(
                "seal {seq}'s digest {} is not sha256",
                seal.digest
            )))
        }
    }
    let qkey = keys::timestamp_query_key(seq);
    let query = match stored_query(store, &qkey, has_query).await? {
        Some(q) => q,
        None => {
            let mut nonce = [0u8; NONCE_BYTES];
            crate::base::rng::os_random(&mut nonce)?;
            let q = build_query(&digest, nonce).map_err(crate::base::error::Error::internal)?;
            if !publish_racing(store, &qkey, Bytes::from(q.clone())).await? {
                // Another sealer stored one first: use that.
                match stored_query(store, &qkey, true).await? {
                    Some(q) => q,
                    None => return Ok(Err(format!("{qkey} changed while it was stored"))),
                }
            } else {
                q
            }
        }
    };
    let want = match parse_query(&query) {
        Ok(q) if q.digest == digest => q,
        Ok(_) => {
            return Ok(Err(format!(
                "{qkey} asks for the time of another digest than seal {seq}'s"
            )))
        }
        Err(why) => return Ok(Err(format!("{qkey}: {why}"))),
    };
    let answer = match tsa.ask(&query).await {
        Ok(a) => a,
        Err(why) => return Ok(Err(why)),
    };
    let token = match parse_reply(&answer) {
        Ok(t) => t,
        Err(why) => return Ok(Err(format!("the TSA's answer: {why}"))),
    };
    if token.digest != digest {
        return Ok(Err(
            "the TSA's token is over another digest than the seal's".into(),
        ));
    }
    if token.nonce.as_deref() != Some(want.nonce.as_slice()) {
        return Ok(Err(
            "the TSA's token does not echo the request's nonce".into()
        ));
    }
    let rkey = keys::timestamp_reply_key(seq);
    if !publish_racing(store, &rkey, Bytes::from(answer)).await? {
        return Ok(Err(format!(
            "{rkey} already holds another response (another sealer's)"
        )));
    }
    Ok(Ok(Stamped {
        seq,
        tsa_utc: crate::base::time::rfc3339(token.gen_time),
        key: rkey,
    }))
}

/// The stored request at `key`, when there is one.
async fn stored_query(
    store: &dyn AtomicPublisher,
    key: &str,
    listed: bool,
) -> Result<Option<Vec<u8>>> {
    if !listed {
        return Ok(None);
    }
    let got = store
        .get_at_most(key, crate::format::timestamp::MAX_QUERY_BYTES)
        .await?;
    Ok(got.map(|b| b.to_vec()))
}

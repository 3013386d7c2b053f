//! What a full `verify` checks of the seals' RFC 3161 times (`_lineage/timestamps/`).
//!
//! With `--tsa-root` (the roots in [`Context::tsa_roots`]) every stored request and
//! response is checked (`bad_timestamp`, naming the object): the request asks for the seal's
//! digest; the response is granted, its token's imprint is the seal's digest and its nonce
//! the request's, and its signature, signer and chain check against the root
//! ([`crate::format::timestamp::check_token`]). A seal whose time cannot be backed is named
//! (`seal_time_unbacked`, naming the seal): its time was requested but no response is
//! stored; it comes after the first seal whose time was requested but carries none; its
//! `sealed_utc` is later than the TSA's time by more than [`TSA_TOLERANCE_SECONDS`]; or the
//! TSA's time is after that of a later seal (the later seal chains onto it, so it existed
//! before). The newest seal is in flight within the grace period.
//!
//! Without roots, the seals with a stored response are listed with the response's time,
//! unchecked, and only objects of seals that do not exist are named.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use crate::audit::findings::{Problem, ProblemKind, SealTime};
use crate::audit::verify::history::context::Context;
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::timestamp::{self, parse_query, parse_reply, Roots, Token};
use crate::history::seal::StoredSeal;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// How far a seal's `sealed_utc` may be later than the TSA's time (the sealer's and the
/// TSA's clocks disagree, by this much at most).
pub const TSA_TOLERANCE_SECONDS: i64 = 300;

/// The listed requests and responses: seal → object.
#[derive(Debug, Default)]
pub(super) struct Listed<'a> {
    pub(super) queries: BTreeMap<u64, &'a ObjectInfo>,
    pub(super) replies: BTreeMap<u64, &'a ObjectInfo>,
}

/// What the timestamp checks found.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub problems: Vec<Problem>,
    pub seal_times: Vec<SealTime>,
}

/// One seal's stamp, read.
struct Stamp<'s> {
    seal: &'s StoredSeal,
    sealed: Option<DateTime<Utc>>,
    token: Option<Token>,
}

/// Check the listed objects against the walked chain; `later`: the newest seal now.
pub(super) async fn check(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    listed: &Listed<'_>,
    later: u64,
) -> Result<Checked> {
    let mut out = Checked::default();
    let seals: BTreeMap<u64, &StoredSeal> = cx
        .chain
        .seals
        .iter()
        .filter(|s| s.seal.is_ok())
        .map(|s| (s.key_seq, s))
        .collect();
    let walked = cx.chain.head().map_or(0, |(n, _)| n);
    for (&seq, o) in listed.queries.iter().chain(&listed.replies) {
        if !seals.contains_key(&seq) && (seq == 0 || seq > later || seq <= walked) {
            out.problems.push(bad(
                &o.key,
                format!("of seal {seq}, which is not in the store"),
            ));
        }
    }
    let mut stamps = Vec::new();
    for (&seq, s) in &seals {
        let q = listed.queries.get(&seq);
        let r = listed.replies.get(&seq);
        if q.is_none() && r.is_none() {
            continue;
        }
        stamps.push(stamp(store, cx, s, q.copied(), r.copied(), &mut out).await?);
    }
    if cx.tsa_roots.is_some() {
        out.problems.extend(unrequested(cx, &seals, listed));
        out.problems.extend(out_of_order(&stamps));
    }
    Ok(out)
}

/// Read and (with roots) check one seal's request and response.
async fn stamp<'s>(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    s: &'s StoredSeal,
    q: Option<&ObjectInfo>,
    r: Option<&ObjectInfo>,
    out: &mut Checked,
) -> Result<Stamp<'s>> {
    let sealed = s.seal.as_ref().ok().and_then(|x| parse_utc(&x.sealed_utc));
    let mut st = Stamp {
        seal: s,
        sealed,
        token: None,
    };
    let reply = match r {
        Some(o) => read(store, o, timestamp::MAX_REPLY_BYTES).await?,
        None => None,
    };
    let token = reply.as_ref().map(|b| parse_reply(b));
    let mut time = SealTime {
        seq: s.key_seq,
        sealed_utc: s
            .seal
            .as_ref()
            .map(|x| x.sealed_utc.clone())
            .unwrap_or_default(),
        tsa_utc: token
            .as_ref()
            .and_then(|t| t.as_ref().ok())
            .map(|t| crate::base::time::rfc3339(t.gen_time)),
        tsa: None,
        checked: false,
    };
    let Some(roots) = cx.tsa_roots else {
        out.seal_times.push(time);
        return Ok(st);
    };
    let verdict = judge(store, s, q, r, token, roots).await?;
    match verdict {
        Ok((token, signer)) => {
            time.tsa = Some(signer);
            time.checked = true;
            if let Some(p) = too_early(&st, &token) {
                out.problems.push(p);
                time.checked = false;
            }
            st.token = Some(token);
        }
        Err(Some(p)) => out.problems.push(p),
        Err(None) => {
            if r.is_none() && (cx.old(sealed) || s.key_seq < cx.chain.head().map_or(0, |(n, _)| n))
            {
                out.problems.push(unbacked(
                    s,
                    "its time was requested (a .tsq is stored) but no TSA response is; `lineage seal --tsa URL` asks again".into(),
                ));
            }
        }
    }
    out.seal_times.push(time);
    Ok(st)
}

/// The token when the request and response check, with the signer's subject; else the
/// problem (`None`: no response to judge).
async fn judge(
    store: &dyn AtomicPublisher,
    s: &StoredSeal,
    q: Option<&ObjectInfo>,
    r: Option<&ObjectInfo>,
    token: Option<std::result::Result<Token, String>>,
    roots: &Roots,
) -> Result<std::result::Result<(Token, String), Option<Problem>>> {
    let seq = s.key_seq;
    let digest = hex::decode(&s.digest).unwrap_or_default();
    let Some(qo) = q else {
        let key = r.map_or_else(|| keys::timestamp_reply_key(seq), |o| o.key.clone());
        return Ok(Err(Some(bad(
            &key,
            "no stored request (.tsq) beside it, so its nonce cannot be checked".into(),
        ))));
    };
    let query = match read(store, qo, timestamp::MAX_QUERY_BYTES).await? {
        Some(b) => parse_query(&b),
        None => Err("gone since it was listed".into()),
    };
    let query = match query {
        Ok(q) if q.digest == digest => q,
        Ok(q) => {
            let why = format!(
                "asks for the time of sha256 {}, not of seal {seq} ({}): the seal or the request was changed",
                hex::encode(&q.digest),
                s.digest
            );
            return Ok(Err(Some(bad(&qo.key, why))));
        }
        Err(why) => return Ok(Err(Some(bad(&qo.key, why)))),
    };
    let (Some(ro), Some(token)) = (r, token) else {
        return Ok(Err(None));
    };
    let token = match token {
        Ok(t) => t,
        Err(why) => return Ok(Err(Some(bad(&ro.key, why)))),
    };
    let why = if token.digest != digest {
        format!(
            "the token is over sha256 {}, not seal {seq}'s digest {} (the seal or the token was changed)",
            hex::encode(&token.digest),
            s.digest
        )
    } else if token.nonce.as_deref() != Some(query.nonce.as_slice()) {
        "the token's nonce is not the one requested (.tsq)".to_string()
    } else {
        match timestamp::check_token(&token, roots) {
            Ok(signer) => return Ok(Ok((token, signer.subject))),
            Err(why) => why,
        }
    };
    Ok(Err(Some(bad(&ro.key, why))))
}

/// A seal whose `sealed_utc` is later than its TSA time by more than the tolerance.
fn too_early(st: &Stamp<'_>, token: &Token) -> Option<Problem> {
    let sealed = st.sealed?;
    (token.gen_time < sealed - Duration::seconds(TSA_TOLERANCE_SECONDS)).then(|| {
        unbacked(
            st.seal,
            format!(
                "sealed_utc {} is later than the TSA's time {} by more than {TSA_TOLERANCE_SECONDS} s: the seal's own time is not backed",
                crate::base::time::rfc3339(sealed),
                crate::base::time::rfc3339(token.gen_time)
            ),
        )
    })
}

/// Seals after the first one whose time was requested that carry neither request nor
/// response (the newest within the grace period excepted).
fn unrequested(
    cx: &Context<'_>,
    seals: &BTreeMap<u64, &StoredSeal>,
    listed: &Listed<'_>,
) -> Vec<Problem> {
    let Some(first) = listed
        .queries
        .keys()
        .chain(listed.replies.keys())
        .min()
        .copied()
    else {
        return Vec::new();
    };
    let newest = cx.chain.head().map_or(0, |(n, _)| n);
    seals
        .range(first + 1..)
        .filter(|(seq, _)| !listed.queries.contains_key(seq) && !listed.replies.contains_key(seq))
        .filter(|(seq, s)| {
            **seq < newest || cx.old(s.seal.as_ref().ok().and_then(|x| parse_utc(&x.sealed_utc)))
        })
        .map(|(_, s)| {
            unbacked(
                s,
                format!(
                    "no TSA time is stored for it, though seal {first} before it has one; `lineage seal --tsa URL` adds it"
                ),
            )
        })
        .collect()
}

/// Seals whose TSA time is after a later seal's.
fn out_of_order(stamps: &[Stamp<'_>]) -> Vec<Problem> {
    let timed: Vec<(&StoredSeal, DateTime<Utc>)> = stamps
        .iter()
        .filter_map(|s| Some((s.seal, s.token.as_ref()?.gen_time)))
        .collect();
    timed
        .windows(2)
        .filter(|w| w[0].1 > w[1].1)
        .map(|w| {
            unbacked(
                w[0].0,
                format!(
                    "the TSA's time {} is after that of seal {} ({}), which chains onto it",
                    crate::base::time::rfc3339(w[0].1),
                    w[1].0.key_seq,
                    crate::base::time::rfc3339(w[1].1)
                ),
            )
        })
        .collect()
}

/// An object's bytes, at most `max` (a larger one is named by the caller as unreadable).
async fn read(
    store: &dyn AtomicPublisher,
    o: &ObjectInfo,
    max: u64,
) -> Result<Option<bytes::Bytes>> {
    match store.get_at_most(&o.key, max).await {
        Ok(b) => Ok(b),
        Err(Error::TooLarge { .. }) => Ok(Some(bytes::Bytes::new())),
        Err(e) => Err(e),
    }
}

fn parse_utc(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn bad(key: &str, why: String) -> Problem {
    Problem::new(ProblemKind::BadTimestamp, key, why)
}

fn unbacked(s: &StoredSeal, why: String) -> Problem {
    Problem::new(ProblemKind::SealTimeUnbacked, &s.key, why)
}

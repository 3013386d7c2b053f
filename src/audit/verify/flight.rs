//! What counts as "in flight" for `verify`, `repair` and `sweep`: judged by what an object
//! says about itself, never by its modification time alone (on a local disk anyone sets
//! that with `touch`, and a planted file must not hide from an audit behind it).
//!
//! - A **temp** is in flight when its name is one lineage-store writes,
//!   `.{object}.{UUIDv7}.tmp` beside an object lineage-store publishes in that place (a
//!   part, a pointer, a seal, a commit-key claim), and the time in its UUIDv7 nonce is
//!   within the grace period.
//! - A **part without a pointer** is in flight when it is a well-formed part of this store
//!   (footer commit id equal to its name's, the current schema version, the contract
//!   schema, partition values equal to its path's; for a commit-key id also the sha256 and
//!   partition its key's claim recorded) *and* the time its content carries is within the
//!   grace period: the UUIDv7 time of its commit id, or, for a commit-key id (UUIDv8, no
//!   time), the time its key was claimed.
//!
//! Everything else is reported at once, whatever its age. A time more than
//! [`MAX_CLOCK_SKEW_MINUTES`] in the future is not believed (it would hide an object for as
//! long as the future lasts).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;

use crate::audit::findings::InFlight;
use crate::audit::findings::InFlightKind;
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::digest::Want;
use crate::base::time::rfc3339;
use crate::format::claim::Claim;
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::history::pointers::READ_CONCURRENCY;
use crate::parts::read::facts::{hash_and_facts, read_facts};
use crate::publish::{AtomicPublisher, ObjectInfo};

/// How far ahead of this machine's clock a writer's clock may be before a time it wrote
/// is treated as a lie rather than as skew.
pub(crate) const MAX_CLOCK_SKEW_MINUTES: i64 = 5;

/// "Now" and the grace period: the window in which a content time means "in flight".
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// The verifier's time.
    pub now: DateTime<Utc>,
    /// How long a publish may take.
    pub grace: Duration,
}

impl Window {
    /// `Ok(())` when `t` is within the grace period (and not implausibly in the future),
    /// else why not.
    pub(crate) fn admits(&self, t: DateTime<Utc>) -> Result<(), String> {
        if t > self.now + Duration::minutes(MAX_CLOCK_SKEW_MINUTES) {
            Err(format!(
                "it claims to be made at {}, in the future",
                rfc3339(t)
            ))
        } else if t <= self.now - self.grace {
            Err(format!(
                "made at {}, longer ago than the grace period",
                rfc3339(t)
            ))
        } else {
            Ok(())
        }
    }
}

/// Judge a temp by its name: in flight, or why it is stale (or not ours at all).
pub(crate) fn judge_temp(key: &str, w: &Window) -> Result<InFlight, String> {
    let (dir, file) = key.rsplit_once('/').unwrap_or(("", key));
    let Some(name) = keys::parse_temp_name(file) else {
        return Err("not a temp name lineage-store writes".into());
    };
    let target = if dir.is_empty() {
        name.target.clone()
    } else {
        format!("{dir}/{}", name.target)
    };
    let publishes_here = match keys::classify(&target) {
        KeyKind::Part { .. }
        | KeyKind::Pointer { .. }
        | KeyKind::Seal(_)
        | KeyKind::DeltaVersion(_)
        | KeyKind::DeltaCheckpoint(_)
        | KeyKind::Identity => true,
        // Hash tiles, entry bundles and checkpoints go through a temp; the empty history
        // objects do not.
        KeyKind::History(h) => matches!(
            h,
            keys::HistoryKey::Tile { .. }
                | keys::HistoryKey::TlogTile { .. }
                | keys::HistoryKey::EntryBundle { .. }
                | keys::HistoryKey::Checkpoint(_)
                | keys::HistoryKey::Cosignature { .. }
                | keys::HistoryKey::TimestampQuery(_)
                | keys::HistoryKey::TimestampReply(_)
        ),
        KeyKind::Claim
        | KeyKind::Witness
        | KeyKind::CompactionRecord { .. }
        | KeyKind::CompactedPart { .. } => true,
        KeyKind::Iceberg(k) => k != keys::IcebergKey::Other,
        KeyKind::Temp | KeyKind::Foreign | KeyKind::Unknown | KeyKind::DeltaOther => false,
    };
    if !publishes_here {
        return Err(format!(
            "would become {target}, which lineage-store never publishes"
        ));
    }
    let Some(created) = name.created else {
        return Err(
            "its name carries no creation time (a temp of an older lineage-store, or not lineage-store's)"
                .into(),
        );
    };
    w.admits(created)?;
    Ok(InFlight {
        key: key.to_string(),
        kind: InFlightKind::Temp,
        since: rfc3339(created),
        detail: format!(
            "publish of {target} in progress (temp made at {})",
            rfc3339(created)
        )
        .into(),
    })
}

/// The commits the commit-key claims in a store name: commit id → (claim key, claim).
#[derive(Debug, Default)]
pub(crate) struct Claims {
    /// Format-1 claims list their commits.
    by_commit: HashMap<String, (String, std::sync::Arc<Claim>)>,
    /// Format-2 claims do not: a commit id is found by deriving the ids of its flushes.
    derived: Vec<(String, std::sync::Arc<Claim>)>,
}

impl Claims {
    /// Read every claim in `listing` (unreadable ones are skipped: no commit can then
    /// derive an "in flight" time from them).
    pub(crate) async fn load(store: &dyn AtomicPublisher, listing: &[ObjectInfo]) -> Claims {
        let keys: Vec<&str> = listing
            .iter()
            .map(|o| o.key.as_str())
            .filter(|k| keys::is_claim_key(k))
            .collect();
        let read: Vec<(String, Option<Claim>)> = futures::stream::iter(keys)
            .map(|k| async move {
                let claim = match store.get(k).await {
                    Ok(Some(b)) => serde_json::from_slice::<Claim>(&b).ok(),
                    _ => None,
                };
                (k.to_string(), claim)
            })
            .buffer_unordered(READ_CONCURRENCY)
            .collect()
            .await;
        let mut out = Claims::default();
        for (k, c) in read {
            let Some(c) = c else {
                tracing::warn!(key = %k, "unreadable commit-key claim");
                continue;
            };
            let c = std::sync::Arc::new(c);
            if c.format != crate::format::claim::CLAIM_FORMAT_V1 {
                out.derived.push((k.clone(), c.clone()));
            }
            for commit in &c.commits {
                out.by_commit
                    .insert(commit.commit_id.clone(), (k.clone(), c.clone()));
            }
        }
        out
    }

    /// The claim a commit id in partition (`run_id`, `target_crs`) was derived from: listed
    /// by a format-1 claim, or one of a format-2 claim's flushes (flush indexes count per
    /// partition and stay below the payload's number of flushes).
    fn find(&self, commit_id: &str, run_id: &str, target_crs: &str) -> Option<ClaimRef<'_>> {
        if let Some((k, c)) = self.by_commit.get(commit_id) {
            return Some((k.as_str(), c.as_ref()));
        }
        self.derived.iter().find_map(|(k, c)| {
            let flushes = c.flushes.unwrap_or(0);
            (0..flushes)
                .any(|i| {
                    crate::format::claim::derived_commit_id(run_id, target_crs, &c.commit_key, i)
                        .to_string()
                        == commit_id
                })
                .then_some((k.as_str(), c.as_ref()))
        })
    }
}

/// A claim and its object key.
pub(crate) type ClaimRef<'c> = (&'c str, &'c Claim);

/// When the content of a part says its commit was made: the UUIDv7 time of its id, or the
/// claim time of the commit key a UUIDv8 id was derived from (with that claim). `Err` says
/// why there is no such time.
pub(crate) fn commit_time<'c>(
    commit_id: &str,
    run_id: &str,
    target_crs: &str,
    claims: &'c Claims,
) -> Result<(DateTime<Utc>, Option<ClaimRef<'c>>), String> {
    let id = uuid::Uuid::try_parse(commit_id).map_err(|e| e.to_string())?;
    if let Some(t) = keys::uuid_v7_time(&id) {
        return Ok((t, None));
    }
    if id.get_version_num() != 8 {
        return Err(format!(
            "its commit id is a UUID version {}, which carries no time lineage-store wrote",
            id.get_version_num()
        ));
    }
    let (key, claim) = claims.find(commit_id, run_id, target_crs).ok_or_else(|| {
        "its commit id looks derived from a commit key (UUIDv8), but no commit-key claim names it"
            .to_string()
    })?;
    let t = DateTime::parse_from_rfc3339(&claim.claimed_utc)
        .map_err(|e| format!("its commit-key claim {key} has no readable time ({e})"))?
        .with_timezone(&Utc);
    Ok((t, Some((key, claim))))
}

/// Judge parts that no pointer names: in flight (well-formed, made within the grace
/// period), committed during the scan (the pointer appeared since the listing), or a
/// problem: `malformed_part` at once whatever its age, `orphan_part` when well-formed but
/// too old (or of no known age) for its pointer still to come.
pub(crate) async fn judge_pointerless_parts(
    store: &dyn AtomicPublisher,
    w: &Window,
    parts: BTreeMap<&str, &ObjectInfo>,
    listing: &[ObjectInfo],
    store_id: Option<&str>,
) -> (Vec<InFlight>, Vec<Problem>) {
    let mut flying = Vec::new();
    let mut problems = Vec::new();
    if parts.is_empty() {
        return (flying, problems);
    }
    let claims = Claims::load(store, listing).await;
    for (key, o) in parts {
        let KeyKind::Part {
            run_id,
            target_crs,
            commit_id,
        } = keys::classify(key)
        else {
            continue;
        };
        let when = commit_time(&commit_id, &run_id, &target_crs, &claims);
        let claim = when.as_ref().ok().and_then(|(_, c)| *c);
        let facts = well_formed(store, key, o.size, &run_id, &target_crs, &commit_id, claim).await;
        let (malformed, unidentified) = judge_footer(facts, store_id);
        if let Some(why) = malformed {
            problems.push(Problem::new(
                ProblemKind::MalformedPart,
                key,
                format!(
                    "{} bytes under a part's name, not a part of this store: {why}",
                    o.size
                ),
            ));
            continue;
        }
        let why_not_in_flight = match in_flight(key, w, &when, claim) {
            Ok(f) => {
                flying.push(f);
                continue;
            }
            Err(why) => why,
        };
        // The writer may have published the pointer since the listing.
        if let Ok(true) =
            crate::publish::exists(store, &keys::pointer_key(&run_id, &commit_id)).await
        {
            flying.push(InFlight {
                key: key.to_string(),
                kind: InFlightKind::CommittedDuringScan,
                since: when.map(|(t, _)| rfc3339(t)).unwrap_or_default(),
                detail: "its pointer appeared after the listing".into(),
            });
            continue;
        }
        problems.push(orphan(key, o.size, unidentified, &why_not_in_flight));
    }
    (flying, problems)
}

/// The cause when the store's own metadata is gone while its data is there.
pub(crate) const LOST_METADATA: &str = "the store's own metadata (_lineage/) is missing, or the part was copied in from another store; restore _lineage/ from a replica or backup: `lineage repair --from REPLICA --expect-head H`";

/// What a part's footer (as [`well_formed`] read it) says: why it is malformed, if it is,
/// and whether it names no store while this store has an identity.
fn judge_footer(
    facts: Result<Option<String>, String>,
    store_id: Option<&str>,
) -> (Option<String>, bool) {
    match facts {
        Err(why) => (Some(why), false),
        // A part naming another store was copied in: never one of ours in flight.
        Ok(Some(named)) if Some(named.as_str()) != store_id => (
            Some(match store_id {
                Some(ours) => format!(
                    "its footer names store {named}, but this store is {ours}: written to another store and copied in"
                ),
                None => format!(
                    "its footer names store {named}, but this store has no identity object ({}): {LOST_METADATA}",
                    crate::format::keys::IDENTITY_KEY
                ),
            }),
            false,
        ),
        Ok(named) => (None, named.is_none() && store_id.is_some()),
    }
}

/// Well-formed part `key`, made at `when`: in flight when the window admits that time,
/// else why not.
fn in_flight(
    key: &str,
    w: &Window,
    when: &Result<(DateTime<Utc>, Option<ClaimRef<'_>>), String>,
    claim: Option<ClaimRef<'_>>,
) -> Result<InFlight, String> {
    let (t, _) = when.as_ref().map_err(Clone::clone)?;
    w.admits(*t)?;
    let source = match claim {
        Some((k, _)) => {
            format!("its commit key was claimed at {} ({k})", rfc3339(*t))
        }
        None => format!("its commit id was made at {}", rfc3339(*t)),
    };
    Ok(InFlight {
        key: key.to_string(),
        kind: InFlightKind::Part,
        since: rfc3339(*t),
        detail: format!("well-formed part, no pointer yet; {source}").into(),
    })
}

/// The `orphan_part` problem of well-formed part `key` of `size` bytes.
fn orphan(key: &str, size: u64, unidentified: bool, why_not_in_flight: &str) -> Problem {
    let adopt = if unidentified {
        "its footer matches its path but names no store (written before parts named their store): `lineage repair --adopt` with its key and `--adopt-unidentified` adopts it if you know it is this store's"
    } else {
        "its footer matches its path and names this store, and no pointer vouches for it: written by a writer that died before its pointer, or planted by anyone who can write here (a footer's store id can be copied from any part); nothing in the store tells which. `lineage repair --adopt` with its key adopts it (marked adopted for good: `verify` reports it until an auditor accepts it) if you know which writer wrote it"
    };
    Problem::new(
        ProblemKind::OrphanPart,
        key,
        format!(
            "{size} bytes, no pointer records it and none can still be coming ({why_not_in_flight}); {adopt}"
        ),
    )
}

/// `Ok` (with the store its footer names, if any) when the object under a part's name is
/// a well-formed part at its place; else why.
async fn well_formed(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    run_id: &str,
    target_crs: &str,
    commit_id: &str,
    claim: Option<ClaimRef<'_>>,
) -> Result<Option<String>, String> {
    // A format-2 claim records the payload's content digest, not each part's bytes: the
    // commit id derived from its key (checked when the claim was found) is all it vouches for.
    let format1 = claim.filter(|(_, c)| c.format == crate::format::claim::CLAIM_FORMAT_V1);
    let Some((claim_key, claim)) = format1 else {
        let facts = read_facts(store, key, size, false)
            .await
            .map_err(|e| e.to_string())?;
        return facts
            .mismatch(run_id, target_crs, commit_id)
            .map_or(Ok(facts.store_id), Err);
    };
    let (sha, facts) = hash_and_facts(store, key, size, Want::SHA256, false, &|_| {}).await;
    let facts = facts.map_err(|e| e.to_string())?;
    if let Some(why) = facts.mismatch(run_id, target_crs, commit_id) {
        return Err(why);
    }
    let sha = sha.map_err(|e| e.to_string())?.sha256.unwrap_or_default();
    let claimed = claim.commits.iter().find(|c| c.commit_id == commit_id);
    match claimed {
        Some(c) if c.sha256 == sha && c.run_id == run_id && c.target_crs == target_crs => {
            Ok(facts.store_id)
        }
        Some(c) => Err(format!(
            "sha256 {sha} at run_id={run_id}/target_crs={target_crs}, but commit-key claim {claim_key} records sha256 {} at run_id={}/target_crs={}",
            c.sha256, c.run_id, c.target_crs
        )),
        None => Err(format!("commit-key claim {claim_key} does not name it")),
    }
}

/// What `verify` says of a symlink in the store.
pub(crate) fn symlink_detail(target: &str) -> String {
    format!(
        "a symlink to {target:?}: lineage-store never follows it, but dataset readers (pyarrow, DuckDB) do and would read what it points to; remove it"
    )
}

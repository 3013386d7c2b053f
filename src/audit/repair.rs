//! `repair`: adopt orphan parts, i.e. write the pointer a crash between part and pointer
//! left unwritten, from the part's own footer and columns.
//!
//! Only a part whose footer carries its file name's commit id and the current schema
//! version, whose Arrow schema is the contract, and whose `run_id`/`target_crs` values all
//! match its path is adopted; anything else is refused with the reason. The pointer is
//! published create-only and says `"adopted": true`. Parts whose content says they were
//! made within the grace period (the UUIDv7 time of the commit id, or the claim time of a
//! commit key; never the modification time, see [`crate::audit::verify::flight`]) are left alone: their
//! writer may be about to publish the pointer itself.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::audit::verify::flight::{commit_time, Claims, Window};
use crate::base::digest::Want;
use crate::base::error::Result;
use crate::base::time::{rfc3339, rfc3339_us};
use crate::format::keys::{self, KeyKind};
use crate::format::pointer::{tool_version, Pointer, POINTER_FORMAT};
use crate::parts::read::hash_and_facts;
use crate::publish::checked::{publish_checked, Published};
use crate::publish::AtomicPublisher;
use crate::schema::contract;

/// What `repair` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepairOutcome {
    /// Pointers written (keys), one per adopted part.
    pub adopted: Vec<String>,
    /// Orphans left alone, with why (part key, reason).
    pub refused: Vec<(String, String)>,
    /// Orphans within the grace period, or whose pointer appeared meanwhile.
    pub in_flight: u64,
}

/// Adopt every orphan part older than `grace` (relative to `now`). With `dry_run`, only
/// say what would be adopted.
pub async fn repair(
    store: &dyn AtomicPublisher,
    now: DateTime<Utc>,
    grace: Duration,
    dry_run: bool,
) -> Result<RepairOutcome> {
    let listing = store.list("").await?;
    let pointers: std::collections::HashSet<&str> = listing
        .iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::Pointer { .. }))
        .map(|o| o.key.as_str())
        .collect();
    let mut out = RepairOutcome::default();
    let window = Window { now, grace };
    let mut claims: Option<Claims> = None;
    for o in &listing {
        let KeyKind::Part {
            run_id,
            target_crs,
            commit_id,
        } = keys::classify(&o.key)
        else {
            continue;
        };
        let pkey = keys::pointer_key(&run_id, &commit_id);
        if pointers.contains(pkey.as_str()) {
            continue;
        }
        let claims = match &claims {
            Some(c) => c,
            None => claims.insert(Claims::load(store, &listing).await),
        };
        if let Ok((t, _)) = commit_time(&commit_id, &run_id, &target_crs, claims) {
            if window.admits(t).is_ok() {
                out.in_flight += 1;
                continue;
            }
        }
        let (digests, facts) =
            hash_and_facts(store, &o.key, o.size, Want::BOTH, true, &|_| {}).await;
        let facts = match facts {
            Ok(f) => f,
            Err(e) => {
                out.refused.push((o.key.clone(), e.to_string()));
                continue;
            }
        };
        if let Some(why) = facts.mismatch(&run_id, &target_crs, &commit_id) {
            out.refused.push((o.key.clone(), why));
            continue;
        }
        let (Some(seq), Some(time)) = (facts.sequence, facts.event_time_us) else {
            out.refused
                .push((o.key.clone(), "the part has no rows with a sequence".into()));
            continue;
        };
        let digests = digests?;
        let pointer = Pointer {
            format: POINTER_FORMAT.to_string(),
            commit_id: commit_id.clone(),
            run_id: run_id.clone(),
            target_crs: target_crs.clone(),
            part_path: o.key.clone(),
            row_count: facts.rows,
            size_bytes: o.size,
            schema_version: facts
                .schema_version
                .clone()
                .unwrap_or_else(|| contract::SCHEMA_VERSION.to_string()),
            sha256: digests.sha256.unwrap_or_default(),
            blake3: digests.blake3,
            // The part's own time is the best record of when the commit happened.
            committed_utc: rfc3339(o.modified.unwrap_or(now)),
            first_sequence: seq.0,
            last_sequence: seq.1,
            min_event_time_utc: rfc3339_us(time.0),
            max_event_time_utc: rfc3339_us(time.1),
            tool_version: tool_version(),
            commit_key: None,
            adopted: true,
        };
        if dry_run {
            out.adopted.push(pkey);
            continue;
        }
        let part_path = o.key.clone();
        let published = publish_checked(
            store,
            &pkey,
            bytes::Bytes::from(pointer.to_bytes()?),
            |have| {
                let other = Pointer::from_bytes(&pkey, have).map_err(|e| e.to_string())?;
                if other.sha256 == pointer.sha256 && other.part_path == part_path {
                    Ok(())
                } else {
                    Err("a different pointer holds this commit id".into())
                }
            },
        )
        .await;
        match published {
            Ok(Published::Created) => {
                tracing::info!(part = %o.key, pointer = %pkey, "adopted orphan part");
                out.adopted.push(pkey);
            }
            // The writer (or another repair) published it meanwhile.
            Ok(Published::AlreadyOurs) => out.in_flight += 1,
            Err(e) => out.refused.push((o.key.clone(), e.to_string())),
        }
    }
    Ok(out)
}

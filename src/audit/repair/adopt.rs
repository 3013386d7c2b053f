//! Adopting orphan parts: a pointer written from the part's own footer and columns, under
//! the rules of the [module documentation](super).

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

use crate::audit::repair::options::{RepairOptions, RepairOutcome};
use crate::audit::verify::flight::{commit_time, Claims, Window};
use crate::base::digest::Want;
use crate::base::error::Result;
use crate::base::time::{rfc3339, rfc3339_us};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::{tool_version, Pointer, POINTER_FORMAT};
use crate::parts::read::facts::hash_and_facts;
use crate::publish::checked::{publish_checked, Published};
use crate::publish::{AtomicPublisher, ObjectInfo};
use crate::schema::contract;

/// A part's path fields: run id, target CRS, commit id.
struct PartId<'a> {
    run_id: &'a str,
    target_crs: &'a str,
    commit_id: &'a str,
}

/// Adopt the pointerless parts nothing vouches for.
#[allow(clippy::too_many_arguments)]
pub(super) async fn adopt(
    store: &dyn AtomicPublisher,
    listing: &[ObjectInfo],
    present: &HashSet<&str>,
    vouched: &BTreeMap<String, String>,
    store_id: Option<&str>,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) -> Result<()> {
    let window = Window {
        now: opts.now,
        grace: opts.grace,
    };
    let mut claims: Option<Claims> = None;
    for o in listing {
        let KeyKind::Part {
            run_id,
            target_crs,
            commit_id,
        } = keys::classify(&o.key)
        else {
            continue;
        };
        let pkey = keys::pointer_key(&run_id, &commit_id);
        // Present, or reported missing above (never adopted: see `vouchers`).
        if present.contains(pkey.as_str()) || vouched.contains_key(&pkey) {
            continue;
        }
        let claims = match &claims {
            Some(c) => c,
            None => claims.insert(Claims::load(store, listing).await),
        };
        if let Ok((t, _)) = commit_time(&commit_id, &run_id, &target_crs, claims) {
            if window.admits(t).is_ok() {
                out.in_flight += 1;
                continue;
            }
        }
        let id = PartId {
            run_id: &run_id,
            target_crs: &target_crs,
            commit_id: &commit_id,
        };
        let pointer = match pointer_for(store, o, &id, store_id, opts).await? {
            Ok(p) => p,
            Err(why) => {
                out.refused.push((o.key.clone(), why));
                continue;
            }
        };
        if opts.dry_run {
            out.adopted.push(pkey);
            continue;
        }
        publish_adopted(store, o, pkey, &pointer, out).await?;
    }
    Ok(())
}

/// Why a part whose footer names another store (or none) is not adopted, or `None`.
fn store_refusal(
    facts: &crate::parts::read::PartFacts,
    store_id: Option<&str>,
    opts: &RepairOptions,
) -> Option<String> {
    let why = facts.store_mismatch(store_id)?;
    let unidentified = facts.store_id.is_none();
    if unidentified && opts.adopt_unidentified {
        return None;
    }
    let how = if unidentified {
        "; `--adopt-unidentified` adopts such parts when you know they are this store's"
    } else {
        ""
    };
    Some(format!("{why}{how}"))
}

/// The pointer adopting part `o` writes, from its footer and columns; the inner `Err` says
/// why the part is refused.
async fn pointer_for(
    store: &dyn AtomicPublisher,
    o: &ObjectInfo,
    id: &PartId<'_>,
    store_id: Option<&str>,
    opts: &RepairOptions,
) -> Result<std::result::Result<Pointer, String>> {
    let (digests, facts) = hash_and_facts(store, &o.key, o.size, Want::BOTH, true, &|_| {}).await;
    let facts = match facts {
        Ok(f) => f,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if let Some(why) = facts.mismatch(id.run_id, id.target_crs, id.commit_id) {
        return Ok(Err(why));
    }
    if let Some(why) = store_refusal(&facts, store_id, opts) {
        return Ok(Err(why));
    }
    let key_id =
        match super::writer_filter::writer_check(store, o, &facts, &opts.writer_keys).await? {
            Ok(k) => k,
            Err(why) => return Ok(Err(why)),
        };
    let (Some(seq), Some(time)) = (facts.sequence, facts.event_time_us) else {
        return Ok(Err("the part has no rows with a sequence".into()));
    };
    let digests = digests?;
    Ok(Ok(Pointer {
        format: POINTER_FORMAT.to_string(),
        commit_id: id.commit_id.to_string(),
        run_id: id.run_id.to_string(),
        target_crs: id.target_crs.to_string(),
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
        committed_utc: rfc3339(o.modified.unwrap_or(opts.now)),
        first_sequence: seq.0,
        last_sequence: seq.1,
        min_event_time_utc: rfc3339_us(time.0),
        max_event_time_utc: rfc3339_us(time.1),
        tool_version: tool_version(),
        commit_key: None,
        // Not recorded: repair reads the orphan once (its digests and facts), and a
        // feature lookup reads a part without a tail digest whole.
        tail_offset: None,
        tail_sha256: None,
        adopted: true,
        // Who wrote it is not known; which key signed it is, when a writer key was asked for.
        writer: key_id.map(|k| crate::format::writer_record::WriterRecord {
            writer_key_id: Some(k),
            ..Default::default()
        }),
        existed: false,
    }))
}

/// Publish the adopted `pointer` of part `o` under `pkey`, create-only.
async fn publish_adopted(
    store: &dyn AtomicPublisher,
    o: &ObjectInfo,
    pkey: String,
    pointer: &Pointer,
    out: &mut RepairOutcome,
) -> Result<()> {
    let part_path = o.key.clone();
    let published = publish_checked(store, &pkey, Bytes::from(pointer.to_bytes()?), |have| {
        let other = Pointer::from_bytes(&pkey, have).map_err(|e| e.to_string())?;
        if other.sha256 == pointer.sha256 && other.part_path == part_path {
            Ok(())
        } else {
            Err("a different pointer holds this commit id".into())
        }
    })
    .await;
    match published.map(|kept| kept.published) {
        Ok(Published::Created) => {
            tracing::info!(part = %o.key, pointer = %pkey, "adopted orphan part");
            out.adopted.push(pkey);
        }
        // The writer (or another repair) published it meanwhile.
        Ok(Published::AlreadyOurs) => out.in_flight += 1,
        Err(e) => out.refused.push((o.key.clone(), e.to_string())),
    }
    Ok(())
}

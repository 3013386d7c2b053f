//! Adopting orphan parts: a pointer written from the part's own footer and columns, under
//! the rules of the [module documentation](super), for the parts
//! [`Adoption::admits`](super::adoption::Adoption::admits); the other orphans are listed.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

use crate::audit::repair::adoption::Admission;
use crate::audit::repair::options::{RepairOptions, RepairOutcome};
use crate::audit::verify::flight::{commit_time, Claims, Window};
use crate::base::digest::Want;
use crate::base::error::Result;
use crate::base::time::{rfc3339, rfc3339_us};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::{tool_version, Pointer, POINTER_FORMAT};
use crate::parts::read::facts::hash_and_facts;
use crate::parts::read::PartFacts;
use crate::publish::checked::{publish_checked, Published};
use crate::publish::{AtomicPublisher, ObjectInfo};
use crate::schema::contract;

/// A part's path fields: run id, target CRS, commit id.
struct PartId<'a> {
    run_id: &'a str,
    target_crs: &'a str,
    commit_id: &'a str,
}

/// Judge the pointerless parts nothing vouches for: adopt those [`Adoption::admits`],
/// list the others; a part named for adoption that is not such an orphan is refused,
/// with why.
///
/// [`Adoption::admits`]: super::adoption::Adoption::admits
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
    let mut judged: HashSet<&str> = HashSet::new();
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
        judged.insert(o.key.as_str());
        let claims = match &claims {
            Some(c) => c,
            None => claims.insert(Claims::load(store, listing).await),
        };
        if let Ok((t, _)) = commit_time(&commit_id, &run_id, &target_crs, claims) {
            if window.admits(t).is_ok() {
                out.in_flight += 1;
                if opts.adopt.parts.contains(&o.key) {
                    out.refused.push((o.key.clone(), format!("its content says it was made at {} (within the grace period): its writer may still publish its pointer", rfc3339(t))));
                }
                continue;
            }
        }
        let id = PartId {
            run_id: &run_id,
            target_crs: &target_crs,
            commit_id: &commit_id,
        };
        let (pointer, facts) = match pointer_for(store, o, &id, store_id, opts).await? {
            Ok(p) => p,
            Err(why) => {
                out.refused.push((o.key.clone(), why));
                continue;
            }
        };
        // With writer keys given, `pointer_for` refused every orphan whose signature did
        // not verify under one of them: what is left was signed by a given key.
        let signed = !opts.writer_keys.is_empty();
        match opts.adopt.admits(&o.key, &facts, signed) {
            Admission::Adopt if opts.dry_run => out.adopted.push(pkey),
            Admission::Adopt => publish_adopted(store, o, pkey, &pointer, out).await?,
            Admission::NotAsked => out.orphans.push((o.key.clone(), orphan_detail(&facts))),
            Admission::Refused(why) => out.refused.push((o.key.clone(), why)),
        }
    }
    not_orphans(listing, present, vouched, &judged, opts, out);
    Ok(())
}

/// What an orphan left alone is, in words.
fn orphan_detail(facts: &PartFacts) -> String {
    let unidentified = match facts.store_id {
        None => " whose footer names no store (written before parts named their store; adopting it also takes `--adopt-unidentified`)",
        Some(_) => "",
    };
    format!(
        "not adopted: a well-formed part{unidentified} that no pointer names, written by a writer that died before its pointer or planted (nothing in the store tells which); `--adopt` with its key adopts it, marked adopted, if you know which writer wrote it"
    )
}

/// The parts named for adoption that are not orphans to judge, refused with why.
fn not_orphans(
    listing: &[ObjectInfo],
    present: &HashSet<&str>,
    vouched: &BTreeMap<String, String>,
    judged: &HashSet<&str>,
    opts: &RepairOptions,
    out: &mut RepairOutcome,
) {
    let listed: HashSet<&str> = listing.iter().map(|o| o.key.as_str()).collect();
    for k in &opts.adopt.parts {
        if judged.contains(k.as_str()) {
            continue;
        }
        let pkey = match keys::classify(k) {
            KeyKind::Part {
                run_id, commit_id, ..
            } => keys::pointer_key(&run_id, &commit_id),
            _ => String::new(),
        };
        let why = if !listed.contains(k.as_str()) {
            "no such part in the store".to_string()
        } else if present.contains(pkey.as_str()) {
            format!("not an orphan: its commit's pointer {pkey} is there")
        } else if let Some(v) = vouched.get(&pkey) {
            format!("not an orphan: {v}, and the pointer is missing (`lineage repair --from <URL>` restores it)")
        } else {
            "not an orphan part".to_string()
        };
        out.refused.push((k.clone(), why));
    }
}

/// The pointer adopting part `o` would write, from its footer and columns, with its
/// footer's facts; the inner `Err` says why the part is refused (not well-formed, not at
/// its place, or naming another store: a part naming none is judged by
/// [`Adoption::admits`](super::adoption::Adoption::admits)).
async fn pointer_for(
    store: &dyn AtomicPublisher,
    o: &ObjectInfo,
    id: &PartId<'_>,
    store_id: Option<&str>,
    opts: &RepairOptions,
) -> Result<std::result::Result<(Pointer, PartFacts), String>> {
    let (digests, facts) = hash_and_facts(store, &o.key, o.size, Want::BOTH, true, &|_| {}).await;
    let facts = match facts {
        Ok(f) => f,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if let Some(why) = facts.mismatch(id.run_id, id.target_crs, id.commit_id) {
        return Ok(Err(why));
    }
    if facts.store_id.is_some() {
        if let Some(why) = facts.store_mismatch(store_id) {
            return Ok(Err(why));
        }
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
    let pointer = Pointer {
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
    };
    Ok(Ok((pointer, facts)))
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

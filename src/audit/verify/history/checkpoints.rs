//! What a full `verify` checks of the C2SP checkpoints (`bad_checkpoint`): the one each
//! signed seal carries (it states the seal's tree size and root and is signed by the seal's
//! key under its origin), and the published objects (each exactly its seal's, none of a
//! seal that does not exist, none missing for a seal that is finished).

use std::collections::{HashMap, HashSet};

use crate::audit::findings::{Problem, ProblemKind};
use crate::audit::verify::history::context::Context;
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::history::checkpoint;
use crate::history::seal::Seal;
use crate::history::signing::parse_public_key;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// Largest checkpoint read: ours are a few hundred bytes (a planted larger one is named
/// from its listed size, unread).
const MAX_CHECKPOINT_BYTES: u64 = 64 * 1024;

/// The checkpoints: the seals' own, the `listed` objects (seal, object), and those missing
/// for seals that are finished (`marked`: seals with a head marker) or not the newest;
/// `later`: the newest seal now.
pub(super) async fn check_checkpoints(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    listed: &[(u64, &ObjectInfo)],
    marked: &HashSet<u64>,
    later: u64,
) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    let mut carried: HashMap<u64, &str> = HashMap::new();
    for s in &cx.chain.seals {
        let Ok(seal) = &s.seal else { continue };
        let Some(note) = &seal.checkpoint else {
            continue;
        };
        carried.insert(s.key_seq, note);
        if let Err(why) = carried_ok(seal, note) {
            out.push(Problem::new(
                ProblemKind::BadCheckpoint,
                &s.key,
                format!("the seal's checkpoint {why}"),
            ));
        }
    }
    let newest = cx.chain.head().map_or(0, |(n, _)| n);
    for &(seq, o) in listed {
        let c = carried.get(&seq).copied();
        out.extend(judge(store, c, seq, o, (newest, later)).await?);
    }
    let present: HashSet<u64> = listed.iter().map(|(s, _)| *s).collect();
    for (&seq, note) in &carried {
        if present.contains(&seq) || (seq == newest && !marked.contains(&seq)) {
            continue;
        }
        // Looked up again: the seal may have been finished after the listing.
        let key = keys::checkpoint_key(seq);
        let why = match store.get_at_most(&key, MAX_CHECKPOINT_BYTES).await {
            Ok(Some(have)) if have.as_ref() == note.as_bytes() => continue,
            Ok(Some(_)) => "holds another checkpoint than its seal carries".to_string(),
            Ok(None) => format!(
                "missing: seal {seq} carries a checkpoint; `lineage seal` (or `seal --rescan`) publishes it"
            ),
            Err(Error::TooLarge { size, .. }) => format!("{size} bytes, not its seal's checkpoint"),
            Err(e) => return Err(e),
        };
        out.push(Problem::new(ProblemKind::BadCheckpoint, &key, why));
    }
    Ok(out)
}

/// The checkpoint a seal carries against the seal and the key it is signed with.
fn carried_ok(seal: &Seal, note: &str) -> std::result::Result<(), String> {
    let pk = seal.public_key.as_deref().ok_or("is in an unsigned seal")?;
    let pk = parse_public_key(pk).map_err(|e| e.to_string())?;
    checkpoint::check(note, seal, &pk)
}

/// One published checkpoint object against the one its seal carries.
async fn judge(
    store: &dyn AtomicPublisher,
    carried: Option<&str>,
    seq: u64,
    o: &ObjectInfo,
    (walked, later): (u64, u64),
) -> Result<Option<Problem>> {
    let Some(note) = carried else {
        let why = if seq == 0 || seq > later {
            format!("a checkpoint of seal {seq}, which is not in the store")
        } else if seq > walked {
            // Of a seal that landed after the walk: the next verify judges it.
            return Ok(None);
        } else {
            format!("seal {seq} carries no checkpoint (unsigned, or made before checkpoints)")
        };
        return Ok(Some(Problem::new(ProblemKind::BadCheckpoint, &o.key, why)));
    };
    let have = if o.size != note.len() as u64 {
        None
    } else {
        match store.get_at_most(&o.key, MAX_CHECKPOINT_BYTES).await {
            Ok(h) => h,
            Err(Error::TooLarge { .. }) => None,
            Err(e) => return Err(e),
        }
    };
    if have.as_deref() == Some(note.as_bytes()) {
        return Ok(None);
    }
    Ok(Some(Problem::new(
        ProblemKind::BadCheckpoint,
        &o.key,
        format!(
            "{} bytes that are not the checkpoint seal {seq} carries (the checkpoint was changed)",
            o.size
        ),
    )))
}

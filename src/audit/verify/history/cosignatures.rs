//! What a full `verify` checks of the cosigned checkpoints C2SP witnesses returned
//! (`_lineage/tlog/cosignatures/<seq>/<sha256 of the witness's vkey>`, `bad_cosignature`):
//! each is a signed note whose text is exactly the checkpoint its seal carries, with the
//! log's signature and at least one `cosignature/v1` line. Whose cosignature verifies is
//! an anchor's question (`verify --witness-key`, [`crate::audit::cosigners`]): without the
//! witnesses' keys only the form is checked.

use std::collections::HashMap;

use crate::audit::findings::{Problem, ProblemKind};
use crate::audit::verify::history::context::Context;
use crate::base::error::{Error, Result};
use crate::format::checkpoint as cp;
use crate::format::cosignature::{split, MAX_COSIGNED_BYTES};
use crate::publish::{AtomicPublisher, ObjectInfo};

/// The `listed` cosigned checkpoints (seal, object); `later`: the newest seal now.
pub(super) async fn check_cosignatures(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    listed: &[(u64, &ObjectInfo)],
    later: u64,
) -> Result<Vec<Problem>> {
    let carried: HashMap<u64, &str> = cx
        .chain
        .seals
        .iter()
        .filter_map(|s| {
            let note = s.seal.as_ref().ok()?.checkpoint.as_deref()?;
            Some((s.key_seq, note))
        })
        .collect();
    let walked = cx.chain.head().map_or(0, |(n, _)| n);
    let mut out = Vec::new();
    for &(seq, o) in listed {
        let why = match carried.get(&seq) {
            None if seq > walked && seq <= later => continue,
            None if seq == 0 || seq > later => Some(format!(
                "a cosignature of seal {seq}, which is not in the store"
            )),
            None => Some(format!(
                "a cosignature of seal {seq}, which carries no checkpoint"
            )),
            Some(note) => judge(store, o, note).await?,
        };
        out.extend(why.map(|w| Problem::new(ProblemKind::BadCosignature, &o.key, w)));
    }
    Ok(out)
}

/// Why one stored cosigned checkpoint is not of the form above, or `None`.
async fn judge(store: &dyn AtomicPublisher, o: &ObjectInfo, note: &str) -> Result<Option<String>> {
    let bytes = match store.get_at_most(&o.key, MAX_COSIGNED_BYTES).await {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(Error::TooLarge { size, .. }) => {
            return Ok(Some(format!(
                "{size} bytes, not a cosigned checkpoint (not read)"
            )))
        }
        Err(e) => return Err(e),
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Ok(Some("not UTF-8 text".into()));
    };
    let have = match cp::parse(text) {
        Ok(c) => c,
        Err(why) => return Ok(Some(format!("not a signed checkpoint: {why}"))),
    };
    let want = cp::parse(note).map_err(Error::internal)?;
    if have.body != want.body {
        return Ok(Some(format!(
            "cosigns another checkpoint (tree size {}) than its seal's (tree size {}): the checkpoint was changed",
            have.tree_size, want.tree_size
        )));
    }
    let cosigs = have
        .signatures
        .iter()
        .filter(|s| s.name != have.origin && split(s).is_ok())
        .count();
    Ok((cosigs == 0).then(|| "holds no cosignature/v1 line besides the log's signature".into()))
}

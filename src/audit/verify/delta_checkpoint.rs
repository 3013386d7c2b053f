//! What a full `verify` checks of the Delta checkpoints ([`crate::format::delta_checkpoint`]):
//! a Delta reader that finds `N.checkpoint.parquet` reads the table as of version N from
//! it and skips versions 0..=N, so a checkpoint must hold exactly the replay of those
//! versions. Each one listed is compared, row by row (decoded, so an equal checkpoint in
//! another Parquet encoding passes), with the replay of the JSON versions as listed:
//!
//! - `bad_delta_checkpoint`: a checkpoint that is not a readable checkpoint, holds rows the
//!   replay does not (a planted `add`), lacks rows it has (a hidden file), or covers a
//!   version that is not there.
//!
//! The JSON versions themselves are held to the seals by the Delta check; a checkpoint is
//! compared with what readers would get without it.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::format::delta::parse_actions;
use crate::format::delta_checkpoint::{decode_rows, Snapshot};
use crate::format::keys::delta_version_key as version_key;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// The least a checkpoint may hold whatever its versions (a table's protocol, metadata and
/// a few files in Parquet's framing).
const CHECKPOINT_MIN_BYTES: u64 = 1 << 20;

/// Rows named in a problem's text, at most.
const NAMED: usize = 3;

/// Check every listed checkpoint against the replay of the versions it covers.
pub(crate) async fn check(
    store: &dyn AtomicPublisher,
    checkpoints: &BTreeMap<u64, &ObjectInfo>,
) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    let Some(&top) = checkpoints.keys().next_back() else {
        return Ok(out);
    };
    let mut snapshot = Snapshot::default();
    // What a checkpoint can legitimately hold is bounded by the versions it stands for:
    // their actions, once each, in a columnar file no larger than their JSON.
    let mut log_bytes = 0u64;
    for v in 0..=top {
        let key = version_key(v);
        let actions = match crate::history::delta::read_version(store, v).await {
            Err(crate::base::error::Error::TooLarge { size, .. }) => Err(format!(
                "version {v} is {size} bytes, larger than any version (not read)"
            )),
            Err(e) => return Err(e),
            Ok(None) => Err(format!("version {v} is not there")),
            Ok(Some(bytes)) => {
                log_bytes += bytes.len() as u64;
                parse_actions(&key, &bytes).map_err(|e| e.to_string())
            }
        };
        let applied = actions.and_then(|a| snapshot.apply(v, &a).map_err(|e| e.to_string()));
        if let Err(why) = applied {
            for (n, o) in checkpoints.range(v..) {
                out.push(Problem::new(
                    ProblemKind::BadDeltaCheckpoint,
                    &o.key,
                    format!(
                        "covers versions 0..={n}, but {why}: Delta readers that find it read a \
                         table the log does not hold"
                    ),
                ));
            }
            break;
        }
        if let Some(o) = checkpoints.get(&v) {
            let most = log_bytes.max(CHECKPOINT_MIN_BYTES);
            if let Some(p) = compare(store, v, o, &snapshot, most).await? {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// Compare one checkpoint with the replay.
async fn compare(
    store: &dyn AtomicPublisher,
    v: u64,
    o: &ObjectInfo,
    snapshot: &Snapshot,
    most: u64,
) -> Result<Option<Problem>> {
    let have = match store.get_at_most(&o.key, most).await {
        Err(crate::base::error::Error::TooLarge { size, .. }) => {
            return Ok(Some(Problem::new(
                ProblemKind::BadDeltaCheckpoint,
                &o.key,
                format!(
                    "{size} bytes, more than the {most} bytes of the versions 0..={v} it stands \
                     for (not read); Delta readers that find it read it instead of them"
                ),
            )))
        }
        other => other?,
    };
    let Some(have) = have else {
        return Ok(None); // gone since the listing: nothing for a reader to use
    };
    let bad = |why: String| {
        Some(Problem::new(
            ProblemKind::BadDeltaCheckpoint,
            &o.key,
            format!("{why}; Delta readers that find it read it instead of versions 0..={v}"),
        ))
    };
    // The sealer's own bytes: equal without decoding either (the usual case).
    let want = Bytes::from(snapshot.encode()?);
    if have == want {
        return Ok(None);
    }
    // Bounded before it is decoded: a few kilobytes can repeat one long value for every row.
    if let Err(why) = crate::parts::decoded::check_bytes(&have, store.read_limits()) {
        return Ok(bad(format!("not a readable checkpoint (not read): {why}")));
    }
    let have = match decode_rows(&o.key, have) {
        Ok(rows) => rows,
        Err(e) => return Ok(bad(format!("not a readable checkpoint: {e}"))),
    };
    let want = decode_rows(&o.key, want)?;
    if have == want {
        return Ok(None);
    }
    Ok(bad(difference(&have, &want, v)))
}

/// How a checkpoint's rows differ from the replay of versions 0..=`v`: rows planted, rows
/// hidden, or the same rows in another order or number.
fn difference(have: &[String], want: &[String], v: u64) -> String {
    let have: BTreeSet<&String> = have.iter().collect();
    let want: BTreeSet<&String> = want.iter().collect();
    let extra: Vec<&&String> = have.difference(&want).collect();
    let lacking: Vec<&&String> = want.difference(&have).collect();
    let mut why = Vec::new();
    if !extra.is_empty() {
        why.push(format!(
            "{} rows the replay of versions 0..={v} does not hold ({})",
            extra.len(),
            name(&extra)
        ));
    }
    if !lacking.is_empty() {
        why.push(format!(
            "lacks {} rows the replay holds ({})",
            lacking.len(),
            name(&lacking)
        ));
    }
    if why.is_empty() {
        why.push(format!(
            "holds the replay's rows in another order or number than versions 0..={v} give"
        ));
    }
    why.join("; ")
}

/// The first rows, by action and path (quoted at most 64 characters each).
fn name(rows: &[&&String]) -> String {
    let mut names: Vec<String> = rows
        .iter()
        .take(NAMED)
        .map(|r| {
            let v: serde_json::Value = serde_json::from_str(r).unwrap_or_default();
            let (kind, body) = v
                .as_object()
                .and_then(|m| m.iter().next())
                .map_or(("?", &serde_json::Value::Null), |(k, b)| (k.as_str(), b));
            let what = body
                .get("path")
                .or_else(|| body.get("appId"))
                .and_then(|p| p.as_str())
                .unwrap_or("");
            crate::schema::rules::quote(&format!("{kind} {what}"))
        })
        .collect();
    if rows.len() > NAMED {
        names.push(format!("and {} more", rows.len() - NAMED));
    }
    names.join(", ")
}

//! Which history objects (index entries, hash tiles, leaf locators, head markers) a pass
//! copies: only those whose subjects the destination holds, so that a replica stays a
//! valid store when a commit or a seal was refused or the pass stopped early. An index
//! entry waits for its pointer; a locator or a tile for the seals of its tree (a tile no
//! wider than the destination's tree); a head marker and a Delta version for its seal. What waits is copied by
//! a later pass, once its subject has landed.

use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::history::tiles::width_in;
use crate::replicate::kinds::Kind;

/// What the destination holds, as far as a pass knows.
pub(super) struct AtDestination<'a> {
    /// Whether the destination holds an object (settled by this pass or an earlier one,
    /// or listed at the start).
    holds: &'a dyn Fn(&str) -> bool,
    /// The newest seal the destination holds in agreement with the source, and its tree.
    head: Option<(u64, u64)>,
}

impl<'a> AtDestination<'a> {
    /// `head`: the destination's newest agreed seal and its tree size.
    pub(super) fn new(holds: &'a dyn Fn(&str) -> bool, head: Option<(u64, u64)>) -> Self {
        Self { holds, head }
    }

    fn holds(&self, key: &str) -> bool {
        (self.holds)(key)
    }

    /// Why the object cannot be copied yet, if it cannot.
    fn waits(&self, key: &str) -> Option<String> {
        let (seq, size) = self.head.unwrap_or((0, 0));
        let h = match keys::classify(key) {
            KeyKind::History(h) => h,
            // Version N is seal N (version 0 comes with seal 1).
            KeyKind::DeltaVersion(v) | KeyKind::DeltaCheckpoint(v) => {
                return (v.max(1) > seq)
                    .then(|| format!("seal {} is not at the destination yet", v.max(1)))
            }
            _ => return None,
        };
        match h {
            HistoryKey::Index { .. } => {
                let p = h.pointer_key()?;
                (!self.holds(&p)).then(|| format!("its pointer {p} is not at the destination yet"))
            }
            HistoryKey::Leaf { leaf_index, .. } => (leaf_index >= size).then(|| {
                format!("leaf {leaf_index} is beyond the destination's sealed tree of {size}")
            }),
            HistoryKey::Tile {
                level,
                index,
                width,
            }
            | HistoryKey::TlogTile {
                level,
                index,
                width,
            } => (width > width_in(size, level, index))
                .then(|| format!("wider than the destination's sealed tree of {size} leaves")),
            HistoryKey::EntryBundle { index, width } => (width > width_in(size, 0, index))
                .then(|| format!("wider than the destination's sealed tree of {size} leaves")),
            HistoryKey::Head(n)
            | HistoryKey::Checkpoint(n)
            | HistoryKey::Cosignature { seq: n, .. }
            | HistoryKey::TimestampQuery(n)
            | HistoryKey::TimestampReply(n) => {
                (n > seq).then(|| format!("seal {n} is not at the destination yet"))
            }
        }
    }
}

/// Take out of `objects` the history objects that must wait; return them with why.
pub(super) fn hold_back(
    objects: &mut Vec<(String, Kind)>,
    at: &AtDestination<'_>,
) -> Vec<(String, Kind, String)> {
    let mut held = Vec::new();
    objects.retain(|(key, kind)| match at.waits(key) {
        Some(why) => {
            held.push((key.clone(), kind.clone(), format!("not yet: {why}")));
            false
        }
        None => true,
    });
    held
}

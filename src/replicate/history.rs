//! Which history objects (index entries, hash tiles, leaf locators, head markers) a pass
//! copies: only those whose subjects the destination holds, so that a replica stays a
//! valid store when a commit or a seal was refused or the pass stopped early. An index
//! entry waits for its pointer; a locator or a tile for the seals of its tree (a tile no
//! wider than the destination's tree); a head marker for its seal. What waits is copied by
//! a later pass, once its subject has landed.

use super::kinds::Kind;
use super::pass::{Ctx, Handled};
use super::Head;
use crate::history::tiles::width_in;
use crate::keys::{self, HistoryKey, KeyKind};

/// What the destination holds, as far as a pass knows.
pub(super) struct AtDestination<'a> {
    ctx: &'a Ctx<'a>,
    settled_here: std::collections::HashSet<&'a str>,
    /// The newest seal the destination holds in agreement with the source, and its tree.
    head: Option<(u64, u64)>,
}

impl<'a> AtDestination<'a> {
    pub(super) fn new(ctx: &'a Ctx<'a>, handled: &'a [Handled], head: Option<&Head>) -> Self {
        let tree = head.and_then(|h| {
            ctx.chain
                .seals
                .iter()
                .find(|s| s.key_seq == h.seq)
                .and_then(|s| s.seal.as_ref().ok())
                .map(|s| (h.seq, s.tree_size))
        });
        Self {
            ctx,
            settled_here: handled
                .iter()
                .filter(|h| h.settled())
                .map(|h| h.key.as_str())
                .collect(),
            head: tree,
        }
    }

    fn holds(&self, key: &str) -> bool {
        self.settled_here.contains(key)
            || self.ctx.r.settled.contains_key(key)
            || self.ctx.dst_sizes.contains_key(key)
    }

    /// Why the object cannot be copied yet, if it cannot.
    fn waits(&self, key: &str) -> Option<String> {
        let KeyKind::History(h) = keys::classify(key) else {
            return None;
        };
        let (seq, size) = self.head.unwrap_or((0, 0));
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
            } => (width > width_in(size, level, index))
                .then(|| format!("wider than the destination's sealed tree of {size} leaves")),
            HistoryKey::Head(n) => {
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

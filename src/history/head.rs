//! Finding the newest seal without listing every seal.
//!
//! Once a seal and everything it adds (leaf locators, hash tiles) are written, the sealer
//! creates its head marker `_lineage/heads/<2^64-1-seq>-<seq>`. Marker names sort newest
//! first, so the first key of one listing page is the newest complete seal. Seals after it
//! (a sealer that crashed before its marker, or one still writing) are found by reading
//! seal seq+1, seq+2, ... until one is missing: usually one read that finds nothing. A store
//! without markers (sealed only by earlier versions) is read the old way, by listing seals.

use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::seal_key;
use crate::history::seal::{read_seals, StoredSeal};
use crate::publish::AtomicPublisher;

/// The newest seals, as far as reading them cheaply allows.
#[derive(Debug, Default)]
pub(crate) struct Heads {
    /// The newest seal with a head marker (its tiles and locators are complete).
    pub marked: Option<StoredSeal>,
    /// Seals after it, in order (no marker yet: crashed or in progress).
    pub unmarked: Vec<StoredSeal>,
    /// Every seal, when the store had to be read the old way (no usable marker).
    pub legacy: Option<Vec<StoredSeal>>,
}

impl Heads {
    /// The newest seal of all.
    pub(crate) fn newest(&self) -> Option<&StoredSeal> {
        match &self.legacy {
            Some(all) => all.last(),
            None => self.unmarked.last().or(self.marked.as_ref()),
        }
    }
}

/// Read one seal by sequence number.
pub(crate) async fn read_seal(store: &dyn AtomicPublisher, seq: u64) -> Result<Option<StoredSeal>> {
    crate::history::seal::fetch(store, seal_key(seq), seq, None).await
}

/// The newest marker's sequence number, from the first listed marker.
pub(crate) async fn newest_marker(store: &dyn AtomicPublisher) -> Result<Option<u64>> {
    let page = store.list_after(keys::HEADS_PREFIX, "", 1).await?;
    Ok(page.first().and_then(|o| match keys::classify(&o.key) {
        KeyKind::History(HistoryKey::Head(seq)) => Some(seq),
        _ => None,
    }))
}

/// Find the newest seals: one listing page and two reads when the store is in order.
pub(crate) async fn find(store: &dyn AtomicPublisher) -> Result<Heads> {
    let Some(seq) = newest_marker(store).await? else {
        return legacy(store).await;
    };
    let Some(marked) = read_seal(store, seq).await? else {
        tracing::warn!(
            seq,
            "a head marker names a missing seal; reading every seal"
        );
        return legacy(store).await;
    };
    let mut unmarked = Vec::new();
    let mut next = seq + 1;
    while let Some(s) = read_seal(store, next).await? {
        unmarked.push(s);
        next += 1;
    }
    Ok(Heads {
        marked: Some(marked),
        unmarked,
        legacy: None,
    })
}

async fn legacy(store: &dyn AtomicPublisher) -> Result<Heads> {
    Ok(Heads {
        legacy: Some(read_seals(store).await?),
        ..Heads::default()
    })
}

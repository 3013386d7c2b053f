//! Which orphan parts `repair` may adopt: none, unless asked for by name.
//!
//! An orphan (a well-formed part of this store that no pointer names, past the grace
//! period) was written by a writer that died before its pointer, or planted by anyone who
//! can write to the store: a footer's store id can be copied from any part. Nothing in the
//! store tells which, so adopting one is the operator's statement that they know which
//! writer wrote it, made part by part ([`Adoption::parts`]). The one exception is a part
//! whose footer carries a writer signature that verifies, over its bytes as they are, under
//! a writer key the operator gave (`repair --writer-key`): the key vouches for it, so it is
//! adopted without being named. The orphans not asked for are listed, not adopted.
//! [`Adoption::admits`] is the one filter every orphan passes through.

use std::collections::BTreeSet;

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::parts::read::PartFacts;

/// Which orphan parts `repair` adopts (see the module documentation): by default none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adoption {
    /// The parts to adopt, by key as `verify` names them
    /// (`run_id=<r>/target_crs=<c>/part-<commit>.parquet`).
    pub parts: BTreeSet<String>,
    /// Also adopt, among them, parts whose footer names no store (written before parts
    /// named their store): nothing in such a part ties it to this store.
    pub unidentified: bool,
}

/// What becomes of one orphan that is well-formed and at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Adopt it.
    Adopt,
    /// Leave it alone, listed as an orphan: not asked for.
    NotAsked,
    /// Asked for, but refused: why.
    Refused(String),
}

impl Adoption {
    /// Adopt nothing: orphans are listed only.
    pub fn none() -> Self {
        Self::default()
    }

    /// Adopt exactly these parts (keys as `verify` names them).
    pub fn parts<S: Into<String>>(keys: impl IntoIterator<Item = S>) -> Self {
        Self {
            parts: keys.into_iter().map(Into::into).collect(),
            unidentified: false,
        }
    }

    /// Refuse a request naming something that is not a data part's key (a usage error,
    /// before anything is read).
    pub(crate) fn check(&self) -> Result<()> {
        for k in &self.parts {
            if !matches!(keys::classify(k), KeyKind::Part { .. }) {
                return Err(Error::invalid(
                    Param::Adopt,
                    text![format!(
                        "{k:?} is not the key of a data part (run_id=<r>/target_crs=<c>/part-<commit>.parquet, as `lineage verify` names an orphan_part)"
                    )],
                ));
            }
        }
        Ok(())
    }

    /// Whether orphan `key` may be adopted. `facts`: its footer, already found to be a
    /// well-formed part at its place that names this store or none (a part naming another
    /// store is refused before this). `signed_by_given_key`: its writer signature verified
    /// under one of the writer keys the operator gave.
    pub(crate) fn admits(
        &self,
        key: &str,
        facts: &PartFacts,
        signed_by_given_key: bool,
    ) -> Admission {
        if !self.parts.contains(key) && !signed_by_given_key {
            return Admission::NotAsked;
        }
        if facts.store_id.is_none() && !self.unidentified {
            return Admission::Refused(
                "its footer names no store (written before parts named their store, or not by lineage-store), so nothing ties it to this store; `--adopt-unidentified` adopts such a part when you know it is this store's".into(),
            );
        }
        Admission::Adopt
    }
}

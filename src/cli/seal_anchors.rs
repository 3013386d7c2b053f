//! What the anchors of `seals`, `show` and `diff` ([`AnchorArgs`], as every read command
//! takes them) say of a store's seals: the seals listed against them, and the witness
//! keys judged on the newest seal.

use std::collections::BTreeSet;
use std::io::Write;

use crate::audit::anchors::AnchorCheck;
use crate::audit::seals::{list_seals, SealList};
use crate::base::error::{Error, Failed, Result};
use crate::cli::anchors::AnchorArgs;
use crate::history::seal::Trust;
use crate::history::signing::read_public_key;
use crate::publish::AtomicPublisher;
use crate::witness::WitnessReport;

/// The anchors, read and checked against a store.
pub(crate) struct Anchors {
    /// The signature rules (`None`: none given).
    pub(crate) trust: Option<Trust>,
    /// The seals, checked against the anchors.
    pub(crate) list: SealList,
    /// The witness check, when a witness was given.
    pub(crate) witness: Option<WitnessReport>,
    /// The witness keys judged on the newest seal (empty: none given).
    pub(crate) cosigned: AnchorCheck,
}

/// Read the keys and the witness of `a` (the one [`AnchorArgs`] of every read command),
/// and list the store's seals against them.
pub(crate) async fn check(a: &AnchorArgs, store: &dyn AtomicPublisher) -> Result<Anchors> {
    if let Some(h) = &a.expect_head {
        crate::audit::anchors::Anchors::check_head_digest(h)?;
    }
    let witness_keys = crate::audit::anchors::Anchors {
        witness_keys: a.quorum.keys()?,
        ..Default::default()
    };
    let keys = a
        .public_key
        .iter()
        .map(|p| read_public_key(p))
        .collect::<Result<Vec<_>>>()?;
    let trust = (!keys.is_empty() || a.signed_from.is_some()).then_some(Trust {
        keys,
        signed_from: a.signed_from,
    });
    let (witness, witnessed): (Option<WitnessReport>, Option<BTreeSet<u64>>) =
        match a.witness.open(store).await? {
            Some((w, url)) => {
                let (mut r, seqs) = crate::witness::check_store(store, w.as_ref()).await?;
                r.witness = url;
                (Some(r), Some(seqs))
            }
            None => (None, None),
        };
    let list = list_seals(
        store,
        trust.as_ref(),
        a.expect_head.as_deref(),
        witnessed.as_ref(),
    )
    .await?;
    Ok(Anchors {
        trust,
        list,
        witness,
        cosigned: witness_keys.check(store).await?,
    })
}

impl Anchors {
    /// Everything the anchors found wrong: the chain's problems, a head digest no seal
    /// has, the witness's problems.
    pub(crate) fn failures(&self) -> Vec<Failed> {
        let mut f: Vec<Failed> = self
            .list
            .problems
            .iter()
            .map(|p| Failed::new(p.key.clone(), p.detail.clone()))
            .collect();
        for p in self.witness.iter().flat_map(|w| w.problems.iter()) {
            f.push(Failed::new(p.key.clone(), p.detail.clone()));
        }
        if let Err(crate::base::error::Error::Integrity(more)) = self.cosigned.clone().into_result()
        {
            f.extend(more);
        }
        f
    }

    /// What held of the witness keys, on standard error.
    pub(crate) fn say_held(&self) {
        if self.cosigned.anchored() && self.cosigned.held() {
            let mut err = std::io::stderr();
            for l in self.cosigned.lines() {
                let _ = writeln!(err, "{l}");
            }
        }
    }

    /// An [`Error::Integrity`] of [`Self::failures`], or nothing.
    pub(crate) fn require_clean(&self) -> Result<()> {
        let f = self.failures();
        if f.is_empty() {
            Ok(())
        } else {
            Err(Error::Integrity(f))
        }
    }
}

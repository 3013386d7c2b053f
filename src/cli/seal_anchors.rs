//! The trust anchors `seals`, `show` and `diff` take, as `verify` and `report` take them:
//! a head digest kept elsewhere, trusted public keys (and from which seal on), a witness.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::audit::seals::{list_seals, SealList};
use crate::base::error::{Error, Failed, Result};
use crate::history::seal::Trust;
use crate::history::signing::read_public_key;
use crate::publish::AtomicPublisher;
use crate::witness::WitnessReport;

#[derive(Debug, clap::Args)]
pub(crate) struct AnchorArgs {
    /// A head digest printed by `lineage seal` and kept outside the store: one of the
    /// seals must have it.
    #[arg(long, value_name = "DIGEST")]
    expect_head: Option<String>,
    /// A trusted public key (repeat it for every key in use); every seal (from
    /// --signed-from on) must be signed by one of them.
    #[arg(long, value_name = "FILE")]
    public_key: Vec<PathBuf>,
    /// Seals before SEQ may be unsigned.
    #[arg(long, value_name = "SEQ")]
    signed_from: Option<u64>,
    #[command(flatten)]
    witness: crate::cli::witness::VerifyWitnessArgs,
}

/// The anchors, read and checked against a store.
pub(crate) struct Anchors {
    /// The signature rules (`None`: none given).
    pub(crate) trust: Option<Trust>,
    /// The seals, checked against the anchors.
    pub(crate) list: SealList,
    /// The witness check, when a witness was given.
    pub(crate) witness: Option<WitnessReport>,
}

impl AnchorArgs {
    /// Read the keys and the witness, and list the store's seals against them.
    pub(crate) async fn check(&self, store: &dyn AtomicPublisher) -> Result<Anchors> {
        if let Some(h) = &self.expect_head {
            if crate::history::merkle::parse_hash(h).is_none() {
                return Err(Error::usage(format!(
                    "--expect-head {h:?} is not a sha256 (64 hex digits)"
                )));
            }
        }
        let keys = self
            .public_key
            .iter()
            .map(|p| read_public_key(p))
            .collect::<Result<Vec<_>>>()?;
        let trust = (!keys.is_empty() || self.signed_from.is_some()).then_some(Trust {
            keys,
            signed_from: self.signed_from,
        });
        let (witness, witnessed): (Option<WitnessReport>, Option<BTreeSet<u64>>) =
            match self.witness.open(store).await? {
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
            self.expect_head.as_deref(),
            witnessed.as_ref(),
        )
        .await?;
        Ok(Anchors {
            trust,
            list,
            witness,
        })
    }
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
        f
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

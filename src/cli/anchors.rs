//! The anchors every command that reads sealed history takes: [`AnchorArgs`].

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use crate::audit::anchors::{AnchorCheck, Anchors, WitnessAnchor};
use crate::base::error::Result;
use crate::cli::cosign::QuorumArgs;
use crate::cli::witness::VerifyWitnessArgs;
use crate::history::signing::read_public_key;
use crate::publish::AtomicPublisher;
use crate::read::{snapshot, ReadOptions, Snapshot};

/// The anchors an auditor keeps outside the store: `--expect-head`, `--public-key`
/// (repeated), `--signed-from`, `--witness`, `--witness-key` (repeated) with
/// `--witness-quorum`.
///
/// **This is the one way a command that reads sealed history takes anchors** (`verify`,
/// `report`, `files`, `scan`, `export …`; new read commands such as `seals`, `show` or
/// `diff` too): flatten it into the command's arguments
/// (`#[command(flatten)] anchors: AnchorArgs`), then, with the store open, either call
/// [`AnchorArgs::require`] before reading anything (it refuses, exit 1 naming what failed,
/// when an anchor does not hold, and says on standard error what held), or build the
/// library's [`Anchors`] with [`AnchorArgs::anchors`] and report each outcome as
/// `verify` and `report` do. Do not add these flags to a command one by one.
#[derive(Debug, clap::Args)]
pub(crate) struct AnchorArgs {
    /// A head digest printed by `lineage seal` and kept outside the store: some seal must
    /// have it (detects seals cut off after it, and a store rolled back to an earlier copy).
    #[arg(long, value_name = "DIGEST")]
    pub(crate) expect_head: Option<String>,
    /// A trusted public key (made by `lineage keygen`); repeat it for every key in use
    /// (old and new during a key rotation). Every signed seal must verify under one of
    /// them, and every seal (from --signed-from on) must be signed.
    #[arg(long, value_name = "FILE")]
    pub(crate) public_key: Vec<PathBuf>,
    /// Seals before SEQ may be unsigned (signing started at seal SEQ); SEQ and every later
    /// seal must be signed.
    #[arg(long, value_name = "SEQ")]
    pub(crate) signed_from: Option<u64>,
    #[command(flatten)]
    pub(crate) witness: VerifyWitnessArgs,
    #[command(flatten)]
    pub(crate) quorum: QuorumArgs,
}

impl AnchorArgs {
    /// The anchors given: the head digest and the witness keys checked, the key files
    /// read, the witness store opened (refused when it is `store` itself).
    pub(crate) async fn anchors(&self, store: &dyn AtomicPublisher) -> Result<Anchors> {
        if let Some(h) = &self.expect_head {
            Anchors::check_head_digest(h)?;
        }
        let witness_keys = self.quorum.keys()?;
        let public_keys = self
            .public_key
            .iter()
            .map(|p| read_public_key(p))
            .collect::<Result<Vec<_>>>()?;
        let witness = self
            .witness
            .open(store)
            .await?
            .map(|(w, _)| Arc::new(crate::witness::Witness::new(w)) as Arc<dyn WitnessAnchor>);
        Ok(Anchors {
            expect_head: self.expect_head.clone(),
            public_keys,
            signed_from: self.signed_from,
            witness,
            witness_keys,
        })
    }

    /// Check every anchor given before a read: refused (exit 1, naming each failure) when
    /// any does not hold; what held said on standard error.
    pub(crate) async fn require(&self, store: &dyn AtomicPublisher) -> Result<AnchorCheck> {
        let checked = self.anchors(store).await?.require(store).await?;
        say_held(&checked);
        Ok(checked)
    }

    /// The snapshot `opts` asks for, every anchor checked and what held said on standard
    /// error: against the whole chain before the read ([`Self::require`]), or, reading
    /// since a seal, against the seals that read read (never the whole chain: a witness's
    /// records of earlier seals are counted, not checked) and the witness keys against the
    /// newest seal.
    pub(crate) async fn read(
        &self,
        store: &dyn AtomicPublisher,
        opts: &ReadOptions,
    ) -> Result<(Snapshot, AnchorCheck)> {
        if opts.since_seal.is_none() {
            let checked = self.require(store).await?;
            return Ok((snapshot(store, opts).await?, checked));
        }
        let anchors = self.anchors(store).await?;
        let snap = snapshot(store, opts).await?;
        let checked = match &snap.since {
            Some(range) => anchors.require_since(store, range).await?,
            None => AnchorCheck::default(),
        };
        say_held(&checked);
        Ok((snap, checked))
    }

    /// Where each `--public-key` came from, in order.
    pub(crate) fn key_sources(&self) -> Vec<String> {
        self.public_key
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }
}

/// What held, on standard error (nothing when no anchor was given).
fn say_held(checked: &AnchorCheck) {
    if checked.anchored() {
        let mut err = std::io::stderr();
        for l in checked.lines() {
            let _ = writeln!(err, "{l}");
        }
    }
}

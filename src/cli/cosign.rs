//! Outside C2SP witnesses on the command line: `seal --witness-url URL --witness-key VKEY`
//! ([`PushArgs`]) and `--witness-key VKEY… [--witness-quorum K]` ([`QuorumArgs`], part of
//! every read command's [`crate::cli::anchors::AnchorArgs`]), and their lines of output.

use crate::audit::cosigners::WitnessKeys;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::cli::common::duration;
use crate::format::cosignature::{parse_vkey, Cosigner};
use crate::publish::AtomicPublisher;
use crate::witness::tlog::{push, PushOutcome, TlogWitness, DEFAULT_WITNESS_TIMEOUT};

/// `seal --witness-url URL --witness-key VKEY [--witness-timeout DURATION]`.
#[derive(Debug, clap::Args)]
pub(crate) struct PushArgs {
    /// After the seal is published, send the newest seal's C2SP checkpoint to this
    /// `c2sp.org/tlog-witness` (its submission prefix: `add-checkpoint` is POSTed below
    /// it) with a consistency proof, and store its cosignature beside the checkpoint.
    /// Repeat for every witness, each with its --witness-key in the same order. A witness
    /// that is down or refuses does not stop sealing: the output names it and why.
    #[arg(long, value_name = "URL", requires = "signing_key")]
    witness_url: Vec<String>,
    /// The verifier key of each --witness-url, in the same order
    /// (`<name>+<key id>+<base64>`, an Ed25519 `cosignature/v1` key): the cosignature
    /// it answers must verify under it.
    #[arg(long, value_name = "VKEY", requires = "witness_url")]
    witness_key: Vec<String>,
    /// Time one request to a witness may take (connecting, and each read).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration, requires = "witness_url")]
    witness_timeout: chrono::Duration,
}

impl PushArgs {
    /// The witnesses given, paired with their keys (checked before anything is sealed).
    pub(crate) fn witnesses(&self) -> Result<Vec<TlogWitness>> {
        if self.witness_url.len() != self.witness_key.len() {
            return Err(Error::usage(text![
                "give one ",
                Param::WitnessKey,
                " per ",
                Param::WitnessUrl,
                format!(
                    ", in the same order ({} URLs, {} keys)",
                    self.witness_url.len(),
                    self.witness_key.len()
                )
            ]));
        }
        let t = self
            .witness_timeout
            .to_std()
            .unwrap_or(DEFAULT_WITNESS_TIMEOUT);
        self.witness_url
            .iter()
            .zip(&self.witness_key)
            .map(|(u, k)| TlogWitness::new(u, k, t))
            .collect()
    }
}

/// Push seal `seq`'s checkpoint to `witnesses` (nothing when none is given or the store
/// has no seal).
pub(crate) async fn push_to(
    store: &dyn AtomicPublisher,
    witnesses: &[TlogWitness],
    seq: u64,
) -> Result<Option<PushOutcome>> {
    if witnesses.is_empty() || seq == 0 {
        return Ok(None);
    }
    push(store, witnesses, seq).await.map(Some)
}

/// The lines `seal --witness-url` prints.
pub(crate) fn push_lines(o: &PushOutcome) -> Vec<String> {
    if o.no_checkpoint {
        return vec![format!(
            "seal {} carries no checkpoint (an unsigned seal): nothing sent to the witnesses",
            o.seq
        )];
    }
    let mut lines: Vec<String> = o
        .cosigned
        .iter()
        .map(|c| {
            let how = match c.old_size {
                Some(m) => format!("consistency proof from size {m}"),
                None => "stored before".to_string(),
            };
            format!(
                "checkpoint of seal {} cosigned by witness {} at {} ({how}): {}",
                c.seq, c.witness, c.cosigned_utc, c.key
            )
        })
        .collect();
    lines.extend(o.failed.iter().map(|f| {
        format!(
            "witness {} did NOT cosign seal {} ({}): {}; the seal stands; the next `lineage seal --witness-url` sends the newest checkpoint with a proof from the witness's size",
            f.witness,
            f.seq,
            f.error.name(),
            f.error
        )
    }));
    lines
}

/// `--witness-key VKEY… [--witness-quorum K]` of every read command.
#[derive(Debug, clap::Args)]
pub(crate) struct QuorumArgs {
    /// An outside witness's verifier key (`<name>+<key id>+<base64>`, Ed25519
    /// `cosignature/v1`); repeat it for every witness. The newest seal's checkpoint must
    /// carry a stored cosignature by at least --witness-quorum of them.
    #[arg(long = "witness-key", value_name = "VKEY")]
    witness_keys: Vec<String>,
    /// How many of the --witness-key keys must have cosigned (default: all of them).
    #[arg(long, value_name = "K", requires = "witness_keys")]
    witness_quorum: Option<usize>,
}

impl QuorumArgs {
    /// The keys and quorum, checked; `None` when no key is given.
    pub(crate) fn keys(&self) -> Result<Option<WitnessKeys>> {
        if self.witness_keys.is_empty() {
            return Ok(None);
        }
        let keys = self
            .witness_keys
            .iter()
            .map(|k| {
                parse_vkey(k).map_err(|why| {
                    let shown = crate::base::text::printable(k.trim()).into_owned();
                    Error::invalid(Param::WitnessKey, text![format!("{shown} {why}")])
                })
            })
            .collect::<Result<Vec<Cosigner>>>()?;
        let w = WitnessKeys {
            keys,
            quorum: self.witness_quorum,
        };
        w.check()?;
        Ok(Some(w))
    }
}

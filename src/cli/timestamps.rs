//! RFC 3161 trusted time on the command line: `seal --tsa URL` ([`TsaArgs`]) and
//! `verify`/`report --tsa-root CA.pem` ([`TsaRootArg`]), and their lines of output.

use std::path::PathBuf;

use crate::audit::findings::Report;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::cli::common::{duration, out};
use crate::format::timestamp::{parse_roots, Roots};
use crate::publish::AtomicPublisher;
use crate::timestamp::{stamp_seals, StampOutcome, Tsa};

/// `seal --tsa URL [--tsa-timeout DURATION]`.
#[derive(Debug, clap::Args)]
pub(crate) struct TsaArgs {
    /// After the seal is published, ask this RFC 3161 time-stamping authority (HTTP POST)
    /// for a token over the seal's digest and store it beside the seal; first ask again for
    /// every earlier seal whose time is not backed yet. A TSA that is down or answers
    /// garbage does not stop sealing: the output says so.
    #[arg(long, value_name = "URL")]
    tsa: Option<String>,
    /// Time one request to the TSA may take.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration, requires = "tsa")]
    tsa_timeout: chrono::Duration,
}

impl TsaArgs {
    /// The TSA asked, when one is given (its URL checked before anything is sealed).
    pub(crate) fn tsa(&self) -> Result<Option<Tsa>> {
        let Some(url) = &self.tsa else {
            return Ok(None);
        };
        let t = self
            .tsa_timeout
            .to_std()
            .unwrap_or(crate::timestamp::DEFAULT_TSA_TIMEOUT);
        Ok(Some(Tsa::new(url, t)?))
    }
}

/// Ask `tsa` for the times of the seals up to `newest` that need one (none when the store
/// has no seal).
pub(crate) async fn stamp(
    store: &dyn AtomicPublisher,
    tsa: Option<&Tsa>,
    newest: u64,
) -> Result<Option<StampOutcome>> {
    match tsa {
        Some(t) if newest > 0 => Ok(Some(stamp_seals(store, t, newest).await?)),
        _ => Ok(None),
    }
}

/// The lines `seal --tsa` prints.
pub(crate) fn stamp_lines(o: &StampOutcome, tsa: &Tsa) -> Vec<String> {
    let mut lines: Vec<String> = o
        .stamped
        .iter()
        .map(|s| {
            format!(
                "time of seal {} backed by {}: {} ({})",
                s.seq,
                tsa.shown(),
                s.tsa_utc,
                s.key
            )
        })
        .collect();
    if let Some(f) = &o.failed {
        lines.push(format!(
            "time of seal {} NOT backed: {}; the seal stands; the next `lineage seal --tsa URL` asks again",
            f.seq, f.why
        ));
    }
    let waiting = o
        .pending
        .len()
        .saturating_sub(usize::from(o.failed.is_some()));
    if waiting > 0 {
        lines.push(format!(
            "{waiting} more seals await a TSA time (seals {}); `lineage seal --tsa URL` asks for them",
            crate::base::text::printable(&seq_list(&o.pending))
        ));
    }
    lines
}

fn seq_list(seqs: &[u64]) -> String {
    let shown: Vec<String> = seqs.iter().take(10).map(u64::to_string).collect();
    let more = if seqs.len() > 10 { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// `verify --tsa-root CA.pem` / `report --tsa-root CA.pem`.
#[derive(Debug, clap::Args)]
pub(crate) struct TsaRootArg {
    /// Check every seal's RFC 3161 token against this root certificate (PEM, one or more;
    /// or DER): imprint, nonce, signature, chain, time order. Without it the tokens are
    /// listed, unchecked.
    #[arg(long, value_name = "CA.pem")]
    tsa_root: Option<PathBuf>,
}

impl TsaRootArg {
    /// The roots read, when given.
    pub(crate) fn roots(&self) -> Result<Option<Roots>> {
        let Some(p) = &self.tsa_root else {
            return Ok(None);
        };
        let bytes = std::fs::read(p)
            .map_err(|e| Error::invalid(Param::TsaRoot, text![format!("{}: {e}", p.display())]))?;
        parse_roots(&bytes)
            .map(Some)
            .map_err(|why| Error::invalid(Param::TsaRoot, text![format!("{}: {why}", p.display())]))
    }
}

/// What `verify` says of the seals' times.
pub(crate) fn seal_time_lines(r: &Report) -> Result<()> {
    if r.seal_times.is_empty() {
        return Ok(());
    }
    let n = r.seal_times.len();
    if !r.seal_times_checked {
        out(&format!(
            "{n} seals carry an RFC 3161 request or token, NOT checked (give --tsa-root CA.pem to check them)"
        ))?;
    } else {
        let ok = r.seal_times.iter().filter(|t| t.checked).count();
        out(&format!(
            "{ok} of {n} seals' times backed by a TSA token that checked against --tsa-root"
        ))?;
    }
    if let Some(t) = r.seal_times.last() {
        out(&format!(
            "newest timestamped seal {}: sealed_utc {}, TSA time {}{}",
            t.seq,
            t.sealed_utc,
            t.tsa_utc.as_deref().unwrap_or("none"),
            match (&t.tsa, t.checked) {
                (Some(s), true) => format!(" (signed by {})", crate::base::text::printable(s)),
                _ => " (unchecked)".to_string(),
            }
        ))?;
    }
    Ok(())
}

//! `lineage seal`: write the next seal over every commit not sealed yet and print the new
//! head digest (keep it outside the store: it is what detects cut-off seals).

use crate::base::clock::SystemClock;
use crate::base::error::Result;
use crate::cli::common::{
    duration, json_line, out, out_raw, SigningArgs, Status, StoreArg, DEFAULT_LOOKBACK,
};
use crate::history::sealer::{seal_with, SealOptions};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    signing: SigningArgs,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
    /// Publish a seal even when nothing was committed since the newest one (a heartbeat,
    /// e.g. to show a witness the log is alive). Without it, nothing new publishes nothing.
    #[arg(long)]
    allow_empty: bool,
    /// Read every seal and list every pointer (seals commits the index misses: see
    /// `verify`'s `missed_by_seals`), and rewrite any missing tile or locator.
    #[arg(long)]
    rescan: bool,
    /// How late an index entry may land (by this machine's clock) and still be sealed:
    /// more than any writer's clock error plus its time from pointer to index entry.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_LOOKBACK, value_parser = duration)]
    lookback: chrono::Duration,
    /// Write a Delta checkpoint (`_delta_log/<N>.checkpoint.parquet`) for the seal's
    /// version when N is a multiple of this, or when it removes files (a compaction's);
    /// 0 (the default) writes none. Delta readers then read one Parquet file, not every
    /// version before it; a `**/*.parquet` glob of the store reads it as data.
    #[arg(long, value_name = "N", default_value_t = 0)]
    delta_checkpoint_interval: u64,
    /// The origin (log name) of the signed seal's C2SP checkpoint; default
    /// `lineage-store/<store id>`. Give the same one at every seal of a store.
    #[arg(long, value_name = "NAME", requires = "signing_key")]
    origin: Option<String>,
    #[command(flatten)]
    tsa: crate::cli::timestamps::TsaArgs,
    #[command(flatten)]
    witnesses: crate::cli::cosign::PushArgs,
    /// Also make the seal an Iceberg snapshot: `_iceberg/metadata/v<N>.metadata.json`
    /// with its manifest list and manifest, paths absolute at this store's location
    /// (written for every earlier seal that lacks them too; with nothing new, for the
    /// newest seal).
    #[arg(long)]
    iceberg: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let key = a.signing.key(&a.store.store)?;
    let tsa = a.tsa.tsa()?;
    let witnesses = a.witnesses.witnesses()?;
    let store = a.store.open(Opening::ExistingStore).await?;
    let opts = SealOptions {
        lookback: a.lookback,
        rescan: a.rescan,
        allow_empty: a.allow_empty,
        allow_unsigned: a.signing.unsigned,
        delta_checkpoint_interval: a.delta_checkpoint_interval,
        origin: a.origin,
        iceberg: a.iceberg,
        ..SealOptions::default()
    };
    let s = seal_with(store.as_ref(), &SystemClock, key.as_ref(), &opts).await?;
    let stamped = crate::cli::timestamps::stamp(store.as_ref(), tsa.as_ref(), s.seq).await?;
    let pushed = crate::cli::cosign::push_to(store.as_ref(), &witnesses, s.seq).await?;
    if a.json {
        let mut v = serde_json::to_value(&s).map_err(crate::base::error::Error::internal_from)?;
        if let Some(t) = &stamped {
            v["timestamps"] =
                serde_json::to_value(t).map_err(crate::base::error::Error::internal_from)?;
        }
        if let Some(p) = &pushed {
            v["cosignatures"] =
                serde_json::to_value(p).map_err(crate::base::error::Error::internal_from)?;
        }
        out_raw(&json_line(&v)?)?;
    } else if s.nothing_new {
        match s.seq {
            0 => out("nothing to seal: the store has no commits and no seal")?,
            n => {
                out(&format!(
                    "nothing new since seal {n}: no seal published (--allow-empty publishes one anyway)"
                ))?;
                out(&format!("head {}", s.head))?;
            }
        }
    } else {
        out(&format!(
            "sealed {}: seal {} adds {} commits, covers {} (root {}){}{}",
            s.key,
            s.seq,
            s.added,
            s.tree_size,
            s.root,
            s.key_id
                .as_ref()
                .map_or(String::new(), |k| format!(", signed by key {k}")),
            if s.full_scan {
                "; read every seal and pointer"
            } else {
                ""
            }
        ))?;
        out(&format!("head {}", s.head))?;
        if let Some(v) = &s.vkey {
            let key = crate::format::keys::checkpoint_key(s.seq);
            out(&format!("checkpoint {key} (verifier key {v})"))?;
        }
    }
    if !a.json {
        if let Some(i) = &s.iceberg {
            out(&format!("iceberg {}", i.metadata_location))?;
        }
        left_out(&s)?;
        if let (Some(o), Some(t)) = (&stamped, &tsa) {
            for l in crate::cli::timestamps::stamp_lines(o, t) {
                out(&l)?;
            }
        }
        for l in pushed.iter().flat_map(crate::cli::cosign::push_lines) {
            out(&l)?;
        }
    }
    Ok(0)
}

/// What the seal left out or could not write, one line each: a pointer not ours, a Delta
/// version name held by an object not ours (docs/operations.md says how to recover).
fn left_out(s: &crate::history::sealer::SealOutcome) -> Result<()> {
    for n in &s.not_sealed {
        out(&format!("not sealed: {}: {}", n.key, n.reason))?;
    }
    if let Some(c) = &s.delta_conflict {
        out(&format!(
            "Delta log: version {} ({}) is not ours, so the log stops before it (engines read it; the seal chain is unaffected; see docs/operations.md): {}",
            c.version, c.key, c.reason
        ))?;
    }
    Ok(())
}

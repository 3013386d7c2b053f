//! `lineage witness --store A --witness W`: record A's newest seal in the witness store W
//! ([`crate::witness`]), and `verify --witness W` (the check against every record).
//!
//! Exit codes: 0 recorded (or recorded before); 1 the store's chain, or its agreement with
//! earlier records, has problems (each named; nothing recorded); 2 usage or access error
//! (e.g. a store without seals); 3 the record's key holds another head.

use crate::audit::chain;
use crate::base::clock::SystemClock;
use crate::base::error::{Error, Result};
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::cli::common::{open, Side};
use crate::cli::replicate::side;
use crate::publish::store::options::Opening;
use crate::publish::AtomicPublisher;
use crate::witness::{self, WitnessProblem, WitnessReport};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// The witness store (any store URL; another bucket, account or cloud, writable only by
    /// the witness). Its own settings: `LINEAGE_WITNESS_<NAME>` override `<NAME>`.
    #[arg(long, value_name = "URL")]
    witness: String,
    /// S3 endpoint of the witness store.
    #[arg(long, value_name = "URL")]
    witness_endpoint_url: Option<String>,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
    /// Record a store the witness has never seen at a location where it recorded another
    /// store (the store there was genuinely replaced, not rewritten): its first record
    /// names the stores it replaces. Without it, another store at a witnessed location is
    /// refused (exit 1, naming both).
    #[arg(long)]
    new_store_at_location: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::ExistingStore).await?;
    let side = witness_side(&a.witness, a.witness_endpoint_url.as_deref());
    let w = open(side, store.read_limits(), Opening::Store).await?;
    another_store(store.as_ref(), w.as_ref())?;
    let opts = witness::WitnessOptions {
        new_store_at_location: a.new_store_at_location,
    };
    let o = witness::witness_with(store.as_ref(), w.as_ref(), &SystemClock, &opts).await?;
    if a.json {
        out_raw(&json_line(&o)?)?;
    } else {
        for p in &o.problems {
            out(&problem_line(p))?;
        }
        if o.problems.is_empty() {
            out(&format!(
                "{} seal {} (head {}) of store {} as {}",
                if o.created {
                    "witnessed"
                } else {
                    "already witnessed:"
                },
                o.seq,
                o.head,
                o.store_id,
                o.record
            ))?;
        } else {
            out(&format!(
                "{} problems: nothing recorded (a witness never vouches for a history that contradicts what it saw)",
                o.problems.len()
            ))?;
        }
    }
    Ok(if o.problems.is_empty() { 0 } else { 1 })
}

/// A witness inside the store it witnesses is no second party.
fn another_store(store: &dyn AtomicPublisher, w: &dyn AtomicPublisher) -> Result<()> {
    if store.describe() == w.describe() {
        return Err(Error::usage(format!(
            "--witness {} is the store itself: a witness must be another store, which the store's writers cannot change",
            w.describe()
        )));
    }
    Ok(())
}

fn problem_line(p: &WitnessProblem) -> String {
    let kind = serde_json::to_value(p.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!("PROBLEM witness {kind}: {}: {}", p.key, p.detail)
}

/// `verify --witness URL`: check the store's chain against every head the witness recorded.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyWitnessArgs {
    /// Also check the seal chain against every head this witness store recorded (by
    /// `lineage witness`): detects cut-off and rewritten seals. The witness's own
    /// settings: `LINEAGE_WITNESS_<NAME>` override `<NAME>`.
    #[arg(long, value_name = "URL")]
    witness: Option<String>,
    /// S3 endpoint of the --witness store.
    #[arg(long, value_name = "URL", requires = "witness")]
    witness_endpoint_url: Option<String>,
}

impl VerifyWitnessArgs {
    /// The witness store, opened, and its URL, when asked for.
    pub(crate) async fn open(
        &self,
        store: &dyn AtomicPublisher,
    ) -> Result<Option<(std::sync::Arc<dyn AtomicPublisher>, String)>> {
        let Some(url) = &self.witness else {
            return Ok(None);
        };
        let side = witness_side(url, self.witness_endpoint_url.as_deref());
        let w = open(side, store.read_limits(), Opening::Store).await?;
        another_store(store, w.as_ref())?;
        Ok(Some((w, url.clone())))
    }

    /// The check, when asked for.
    pub(crate) async fn check(&self, store: &dyn AtomicPublisher) -> Result<Option<WitnessReport>> {
        let Some(url) = &self.witness else {
            return Ok(None);
        };
        let side = witness_side(url, self.witness_endpoint_url.as_deref());
        let w = open(side, store.read_limits(), Opening::Store).await?;
        another_store(store, w.as_ref())?;
        let chain = chain::walk(store, None).await?;
        witness::check(&chain, &store.describe(), w.as_ref())
            .await
            .map(Some)
    }
}

/// The lines `verify` prints for a witness check.
pub(crate) fn witness_lines(r: &WitnessReport) -> Vec<String> {
    let mut lines: Vec<String> = r.problems.iter().map(problem_line).collect();
    lines.push(match &r.newest_witnessed {
        Some(w) => format!(
            "witness {}: {} records of store {}; newest witnessed: seal {} on {}{}",
            r.witness,
            r.records,
            r.store_id.as_deref().unwrap_or("(none)"),
            w.seq,
            w.witnessed_utc,
            if r.unwitnessed_seals > 0 {
                format!("; {} newer seals not witnessed yet", r.unwitnessed_seals)
            } else {
                String::new()
            }
        ),
        None => format!("witness {}: no record of this store", r.witness),
    });
    lines
}

/// The witness store's side: `LINEAGE_WITNESS_…` variables are its own.
fn witness_side<'a>(url: &'a str, endpoint_url: Option<&'a str>) -> Side<'a> {
    side(url, endpoint_url, "LINEAGE_WITNESS_")
}

//! `lineage repair`: restore what the store's records prove is missing from a replica or
//! backup (`--from`), list the orphan parts nothing vouches for, and adopt those named
//! (`--adopt`) by writing their pointers from their own footers, marked adopted.
// The doc comments of the argument structs are clap help texts, not rustdoc.
#![allow(rustdoc::broken_intra_doc_links)]

use crate::audit::repair::options::{RepairOptions, RepairOutcome};
use crate::audit::repair::{repair_with, Adoption};
use crate::base::clock::{Clock, SystemClock};
use crate::base::error::Result;
use crate::cli::common::{duration, open, DEFAULT_GRACE};
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::cli::replicate::side;
use crate::publish::store::options::Opening;
use crate::publish::AtomicPublisher;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// A replica or backup of this store (any URL `--store` takes): seals, pointers and
    /// parts the store's records prove are missing are copied back from it byte-identical,
    /// each checked against the digest its seal or pointer records. Its own settings:
    /// `LINEAGE_FROM_<NAME>` override `<NAME>`.
    #[arg(long, value_name = "URL")]
    from: Option<String>,
    /// S3 endpoint of the --from store (default: LINEAGE_FROM_AWS_ENDPOINT_URL[_S3], then AWS_ENDPOINT_URL[_S3]).
    #[arg(long, value_name = "URL", requires = "from")]
    from_endpoint_url: Option<String>,
    /// Leave orphans younger than this alone (their writer may still publish the pointer).
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_GRACE, value_parser = duration)]
    grace: chrono::Duration,
    /// Adopt this orphan part (its key as `lineage verify` names it in `orphan_part`;
    /// repeatable): its pointer is written from its own footer, marked adopted for good.
    /// Only for a part whose writer you know: nothing in the store tells a part whose
    /// writer died before its pointer from one planted by anyone who can write. Orphans
    /// not named are listed, not adopted.
    #[arg(long, value_name = "PART")]
    adopt: Vec<String>,
    /// Also adopt, among the parts named with --adopt, those whose footer names no store
    /// (written before parts named their store): repair cannot tell them from parts
    /// copied in from another store.
    #[arg(long, requires = "adopt")]
    adopt_unidentified: bool,
    /// With --from: the sha256 of the store's newest seal, known outside the store (an
    /// auditor's note, a witness). The newest seals no later seal records are restored from
    /// --from up to the seal with this digest, each checked against it.
    #[arg(long, value_name = "SHA256", requires = "from")]
    expect_head: Option<String>,
    /// A writer's public key (made by `lineage keygen`; repeatable): adopt the orphan
    /// parts whose footer's writer signature verifies under one of these keys over the
    /// part's bytes as they are (named with --adopt or not: the key vouches for them);
    /// every other orphan, named or not, is refused, naming why (unsigned, unknown key,
    /// bad signature, bytes changed).
    #[arg(long, value_name = "FILE")]
    writer_key: Vec<std::path::PathBuf>,
    /// Only say what would be restored and adopted.
    #[arg(long)]
    dry_run: bool,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let grace = a.grace;
    if let Some(h) = &a.expect_head {
        if crate::history::merkle::parse_hash(h).is_none() {
            return Err(crate::base::error::Error::usage(format!(
                "--expect-head {h:?} is not a sha256 (64 hex digits)"
            )));
        }
    }
    let writer_keys = a
        .writer_key
        .iter()
        .map(|p| crate::history::signing::read_public_key(p))
        .collect::<Result<Vec<_>>>()?;
    let store = a.store.open(Opening::Store).await?;
    let from = match &a.from {
        Some(url) => {
            let from = side(url, a.from_endpoint_url.as_deref(), "LINEAGE_FROM_");
            Some(open(from, store.read_limits(), Opening::Store).await?)
        }
        None => None,
    };
    let opts = RepairOptions {
        now: SystemClock.now(),
        grace,
        dry_run: a.dry_run,
        adopt: Adoption {
            parts: a.adopt.iter().cloned().collect(),
            unidentified: a.adopt_unidentified,
        },
        expect_head: a.expect_head.clone(),
        writer_keys,
    };
    let r = repair_with(
        store.as_ref(),
        from.as_deref().map(|s| s as &dyn AtomicPublisher),
        &opts,
    )
    .await?;
    if a.json {
        out_raw(&json_line(&r)?)?;
    } else {
        print_outcome(&r, a.dry_run)?;
    }
    // Orphans left alone or refused and missing history are still problems an auditor
    // must look at.
    Ok(if r.is_complete() { 0 } else { 1 })
}

/// What was (or, with `--dry-run`, would be) restored and adopted, and what was not.
fn print_outcome(r: &RepairOutcome, dry_run: bool) -> Result<()> {
    let (restore, adopt) = match dry_run {
        true => ("would restore", "would adopt"),
        false => ("restored", "adopted"),
    };
    for k in &r.restored {
        out(&format!("{restore}: {k}"))?;
    }
    for k in &r.adopted {
        out(&format!("{adopt}: {k}"))?;
    }
    for (k, why) in &r.missing {
        out(&format!("missing: {k}: {why}"))?;
    }
    for (k, why) in &r.refused {
        out(&format!("refused: {k}: {why}"))?;
    }
    for (k, why) in &r.orphans {
        out(&format!("orphan: {k}: {why}"))?;
    }
    out(&format!(
        "{} {restore}, {} {adopt}, {} missing, {} refused, {} orphans not adopted, {} in flight (left alone)",
        r.restored.len(),
        r.adopted.len(),
        r.missing.len(),
        r.refused.len(),
        r.orphans.len(),
        r.in_flight
    ))?;
    if !dry_run && !r.adopted.is_empty() {
        // Adopted pointers have no index entry: incremental seals do not find them.
        out("next: lineage seal --rescan (seals the adopted commits)")?;
    }
    Ok(())
}

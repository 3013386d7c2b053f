//! `lineage seals`: every seal, one line each (sequence, time, digest, signing key id,
//! commits added, compactions, witnessed or not); `--json`: one object per seal. Exit 1,
//! the seals still listed, when the chain or an anchor given does not hold.

use std::io::Write;

use crate::base::error::Result;
use crate::cli::anchors::AnchorArgs;
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    anchors: AnchorArgs,
    /// One JSON object per seal: seq, sealed_utc, sha256, key_id, commits_added,
    /// tree_size, compactions, witnessed (null without --witness), tool_version.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::ExistingStore).await?;
    let anchors = crate::cli::seal_anchors::check(&a.anchors, store.as_ref()).await?;
    for s in &anchors.list.seals {
        if a.json {
            out_raw(&json_line(s)?)?;
            continue;
        }
        let signed = s
            .key_id
            .as_ref()
            .map_or("unsigned".to_string(), |k| format!("signed by key {k}"));
        let witnessed = match s.witnessed {
            Some(true) => ", witnessed",
            Some(false) => ", not witnessed",
            None => "",
        };
        out(&format!(
            "seal {} {} sha256 {} {signed}: +{} commits ({} in all), {} compactions{witnessed}",
            s.seq,
            s.sealed_utc,
            s.sha256,
            s.commits_added,
            s.tree_size,
            s.compactions.len()
        ))?;
    }
    let failures = anchors.failures();
    let mut err = std::io::stderr();
    if let Some(n) = anchors.list.expect_head_seq {
        let _ = writeln!(err, "the head digest given is seal {n}'s");
    }
    anchors.say_held();
    for f in &failures {
        let _ = writeln!(err, "PROBLEM {}: {}", f.key, f.detail);
    }
    Ok(if failures.is_empty() { 0 } else { 1 })
}

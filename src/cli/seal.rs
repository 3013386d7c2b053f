//! `lineage seal`: write the next seal over every commit not sealed yet and print the new
//! head digest (keep it outside the store: it is what detects cut-off seals).

use std::path::PathBuf;

use crate::audit::seal::{read_signing_key, seal};
use crate::cli::{json_line, out, Status, StoreArg};
use crate::clock::SystemClock;
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Sign the seal with this Ed25519 secret key (made by `lineage keygen`).
    #[arg(long, value_name = "FILE")]
    signing_key: Option<PathBuf>,
    /// The outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let key = a.signing_key.as_deref().map(read_signing_key).transpose()?;
    let store = a.store.open().await?;
    let s = seal(store.as_ref(), &SystemClock, key.as_ref()).await?;
    if a.json {
        out(&json_line(&s)?)?;
    } else {
        out(&format!(
            "sealed {}: seal {} adds {} commits, covers {} (root {}){}",
            s.key,
            s.seq,
            s.added,
            s.tree_size,
            s.root,
            s.key_id
                .as_ref()
                .map_or(String::new(), |k| format!(", signed by key {k}"))
        ))?;
        out(&format!("head {}", s.head))?;
    }
    Ok(0)
}

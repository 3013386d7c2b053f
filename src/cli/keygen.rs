//! `lineage keygen`: make an Ed25519 key pair for signing seals. The secret key file is
//! created with mode 0600 and never printed.

use std::path::PathBuf;

use crate::base::error::Result;
use crate::cli::common::{out, Status};
use crate::history::signing::keygen_with;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Path prefix: writes PREFIX.key (secret) and PREFIX.pub (public); existing files are
    /// refused.
    #[arg(long, value_name = "PREFIX", default_value = "lineage-seal")]
    out: PathBuf,
    /// Replace existing key files (the old secret key is lost: keep its .pub for
    /// `verify --public-key` of the seals it signed).
    #[arg(long)]
    force: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let id = keygen_with(&a.out, a.force)?;
    out(&format!(
        "wrote {} (secret: keep it off the store) and {} (public: give it to auditors); key id {id}",
        a.out.with_extension("key").display(),
        a.out.with_extension("pub").display()
    ))?;
    Ok(0)
}

//! `lineage keygen`: make an Ed25519 key pair for signing seals. The secret key file is
//! created with mode 0600 and never printed.

use std::path::PathBuf;

use crate::base::error::Result;
use crate::cli::common::{out, Status};
use crate::history::signing::keygen;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Path prefix: writes PREFIX.key (secret) and PREFIX.pub (public); refuses to overwrite.
    #[arg(long, value_name = "PREFIX", default_value = "lineage-seal")]
    out: PathBuf,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let id = keygen(&a.out)?;
    out(&format!(
        "wrote {} (secret: keep it off the store) and {} (public: give it to auditors); key id {id}",
        a.out.with_extension("key").display(),
        a.out.with_extension("pub").display()
    ))?;
    Ok(0)
}

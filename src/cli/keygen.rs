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
    /// Also write PREFIX.vkey: the public key as the verifier key (`NAME+id+key`) of the
    /// store's C2SP checkpoints, named by the origin its seals use (`seal --origin`, or
    /// `lineage-store/<store id>`).
    #[arg(long, value_name = "NAME")]
    origin: Option<String>,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let id = keygen_with(&a.out, a.force, a.origin.as_deref())?;
    out(&format!(
        "wrote {} (secret: keep it off the store) and {} (public: give it to auditors); key id {id}",
        a.out.with_extension("key").display(),
        a.out.with_extension("pub").display()
    ))?;
    if a.origin.is_some() {
        out(&format!(
            "wrote {} (the C2SP verifier key of the store's checkpoints)",
            a.out.with_extension("vkey").display()
        ))?;
    }
    Ok(0)
}

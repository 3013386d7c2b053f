//! `lineage verify-proof FILE --head DIGEST`: check an inclusion proof offline (no store).
//! Exit 0 when it holds, 1 when it does not, 2 on a usage error.

use std::io::Write;
use std::path::PathBuf;

use crate::audit::proof::format::{verify_proof, Proof};
use crate::base::error::{Error, Result};
use crate::cli::common::{json_line, out, out_raw, Status};
use crate::history::signing::read_public_key;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The proof made by `lineage prove` (`-` for stdin): of a commit, or of a row
    /// (`prove --event-id`; its row is checked in the part the proof carries).
    proof: PathBuf,
    /// The head digest kept outside the store.
    #[arg(long, value_name = "DIGEST")]
    head: String,
    /// The seal must be signed by this key (made by `lineage keygen`).
    #[arg(long, value_name = "FILE")]
    public_key: Option<PathBuf>,
    /// Also check a copy of the part file against the commit's size and sha256.
    #[arg(long, value_name = "FILE")]
    part: Option<PathBuf>,
    /// The result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let text = if a.proof.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| Error::io("<stdin>", e))?;
        s
    } else {
        std::fs::read_to_string(&a.proof).map_err(|e| Error::io(&a.proof, e))?
    };
    let name = a.proof.display().to_string();
    let proof: Proof = serde_json::from_str(&text).map_err(|e| Error::Corrupt {
        what: "proof",
        key: name.clone(),
        message: e.to_string().into(),
    })?;
    let key = a.public_key.as_deref().map(read_public_key).transpose()?;
    match verify_proof(&proof, &a.head, key.as_ref(), a.part.as_deref())? {
        Ok(s) => {
            if a.json {
                out_raw(&json_line(
                    &serde_json::json!({"valid": true, "summary": s}),
                )?)?;
            } else {
                print_valid(&s)?;
            }
            Ok(0)
        }
        Err(why) => {
            if a.json {
                out_raw(&json_line(
                    &serde_json::json!({"valid": false, "reason": why}),
                )?)?;
            } else {
                let _ = writeln!(std::io::stderr(), "INVALID proof {name}: {why}");
            }
            Ok(1)
        }
    }
}

/// What a valid proof establishes, in words.
fn print_valid(s: &crate::audit::proof::format::ProofSummary) -> Result<()> {
    if let Some(r) = &s.row {
        out(&format!(
            "valid: event {} is row {} of the part of commit {} (the part the proof carries matches the commit's size and digests): {}",
            r.event_id, r.row_index, s.commit_id, r.values
        ))?;
    }
    out(&format!(
        "valid: commit {} (run_id={} target_crs={}, {} rows, part {} sha256 {}) is in seal {} of {}{}{}",
        s.commit_id,
        s.run_id,
        s.target_crs,
        s.rows,
        s.part_path,
        s.part_sha256,
        s.seal_seq,
        s.sealed_utc,
        s.signed_by
            .as_ref()
            .map_or(String::new(), |k| format!(", signed by key {k}")),
        if s.part_file_checked {
            "; the part file matches"
        } else {
            ""
        }
    ))?;
    Ok(())
}

//! `lineage verify-proof FILE --head DIGEST`: check an inclusion proof offline (no store).
//! Exit 0 when it holds, 1 when it does not, 2 on a usage error.

use std::io::Write;
use std::path::PathBuf;

use crate::audit::proof::c2sp::{
    is_compact_row_proof, verify_compact_row_proof, verify_tlog_proof,
};
use crate::audit::proof::consistency::verify_consistency_proof;
use crate::audit::proof::format::{verify_proof, Proof, ProofSummary};
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::cli::common::{json_line, out, out_raw, Status};
use crate::format::consistency::is_consistency_proof;
use crate::format::tlog_proof::is_tlog_proof;
use crate::history::signing::read_public_key;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The proof made by `lineage prove` (`-` for stdin): of a commit, or of a row
    /// (`prove --event-id`; its row is checked in the part the proof carries).
    proof: PathBuf,
    /// The head digest kept outside the store (a `lineage-proof/1`; a
    /// `c2sp.org/tlog-proof@v1` or a `lineage-row-proof/2` is checked against --public-key
    /// instead).
    #[arg(long, value_name = "DIGEST")]
    head: Option<String>,
    /// The seal must be signed by this key (made by `lineage keygen`); required for a
    /// `c2sp.org/tlog-proof@v1` and a `lineage-row-proof/2`.
    #[arg(long, value_name = "FILE")]
    public_key: Option<PathBuf>,
    /// Also check a copy of the part file against the commit's size and sha256.
    #[arg(long, value_name = "FILE")]
    part: Option<PathBuf>,
    /// The result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Check a consistency proof against the key.
fn consistency(
    text: &str,
    name: &str,
    a: &Args,
    key: Option<&ed25519_dalek::VerifyingKey>,
) -> Result<Status> {
    let key = key.ok_or_else(|| {
        Error::usage(text![
            "a consistency proof is checked against the seal key: give ",
            Param::PublicKey
        ])
    })?;
    if a.head.is_some() || a.part.is_some() {
        return Err(Error::usage(text![
            "a consistency proof is checked against ",
            Param::PublicKey,
            " alone"
        ]));
    }
    let p = serde_json::from_str(text).map_err(|e| Error::Corrupt {
        what: "proof",
        key: name.to_string(),
        message: e.to_string().into(),
    })?;
    let verdict = verify_consistency_proof(&p, key);
    if a.json {
        let v = match &verdict {
            Ok(s) => serde_json::json!({"valid": true, "summary": s}),
            Err(why) => serde_json::json!({"valid": false, "reason": why}),
        };
        out_raw(&json_line(&v)?)?;
    }
    match verdict {
        Ok(s) => {
            if !a.json {
                out(&format!(
                    "valid: the checkpoint {} of {} commits extends the one of {} (both signed by key {})",
                    s.origin,
                    s.new_size,
                    s.old_size,
                    crate::history::signing::key_id(key)
                ))?;
            }
            Ok(0)
        }
        Err(why) => {
            if !a.json {
                let _ = writeln!(std::io::stderr(), "INVALID proof {name}: {why}");
            }
            Ok(1)
        }
    }
}

/// Check either format: a `c2sp.org/tlog-proof@v1` against the key, a `lineage-proof/1`
/// against the head digest.
fn check(
    text: &str,
    name: &str,
    a: &Args,
    key: Option<&ed25519_dalek::VerifyingKey>,
) -> Result<std::result::Result<ProofSummary, String>> {
    if is_compact_row_proof(text) || is_tlog_proof(text) {
        let key = key.ok_or_else(|| {
            Error::usage(text![
                "a c2sp.org/tlog-proof@v1 (or a lineage-row-proof/2, which holds one) is checked against the seal key: give ",
                Param::PublicKey
            ])
        })?;
        if a.head.is_some() {
            return Err(Error::usage(text![
                "a c2sp.org/tlog-proof@v1 carries the seal's checkpoint, not the seal, so ",
                Param::Head,
                " cannot be checked against it: check it with ",
                Param::PublicKey,
                " alone, or make the proof with `prove --embed-seal`"
            ]));
        }
        if is_compact_row_proof(text) {
            return verify_compact_row_proof(text, key, a.part.as_deref());
        }
        return verify_tlog_proof(text, key, a.part.as_deref());
    }
    let head = a.head.as_deref().ok_or_else(|| {
        Error::usage(text![
            "a lineage-proof/1 is checked against the head digest: give ",
            Param::Head
        ])
    })?;
    let proof: Proof = serde_json::from_str(text).map_err(|e| Error::Corrupt {
        what: "proof",
        key: name.to_string(),
        message: e.to_string().into(),
    })?;
    verify_proof(&proof, head, key, a.part.as_deref())
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
    let key = a.public_key.as_deref().map(read_public_key).transpose()?;
    if is_consistency_proof(&text) {
        return consistency(&text, &name, &a, key.as_ref());
    }
    match check(&text, &name, &a, key.as_ref())? {
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
    let within = match &s.origin {
        Some(o) => format!("the checkpoint {o} of {} commits", s.tree_size),
        None => format!("seal {} of {}", s.seal_seq, s.sealed_utc),
    };
    out(&format!(
        "valid: commit {} (run_id={} target_crs={}, {} rows, part {} sha256 {}) is in {within}{}{}",
        s.commit_id,
        s.run_id,
        s.target_crs,
        s.rows,
        s.part_path,
        s.part_sha256,
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

//! The `lineage` command line: one file per command; this file parses arguments, sets up
//! logging and the runtime, and maps errors to exit codes (via [`crate::ErrorKind`]).
//!
//! Exit codes, the same from every command ([`crate::ErrorKind::exit_code`], the one mapping):
//! 0 success (clean); 1 the store is not as recorded (`verify`'s or `report`'s problems,
//! or an object a command read failing its check); 2 refused input, usage or access error
//! (nothing was published); 3 conflict in the store; 4 internal error.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::base::error::Error;
use common::closed_stdout;

mod anchors;
mod append;
mod check;
mod common;
mod compact;
mod cosign;
mod demo;
mod diff;
mod export;
mod files;
mod keygen;
mod log;
mod progress;
mod prove;
mod repair;
mod replicate;
mod report;
mod scan;
mod schema;
mod seal;
mod seal_anchors;
mod seals;
mod show;
mod sweep;
mod timestamps;
mod verify;
mod verify_proof;
mod witness;

#[derive(Debug, Parser)]
#[command(
    name = "lineage",
    version,
    about = "Append-only, tamper-evident lineage events as Parquet"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate events and append them as immutable Parquet parts (one commit per flush).
    Append(append::Args),
    /// Validate an input as `append` would, without a store; say what an append would do.
    ///
    /// The same readers, version rules and row rules as `lineage append`, without a
    /// store: nothing is written anywhere. Exit 0 when valid, with what an append would
    /// do (rows, partitions, commits at --batch-rows, contract version); exit 2 when
    /// refused, every error listed on standard error in input order (line and field, or
    /// row and field, and why) exactly as `append` lists them; exit 2 too when the input
    /// cannot be read at all, standard output then saying `not checked:` (`--json`:
    /// `"checked": false`). For a pipeline's own CI.
    Check(check::Args),
    /// List the commits, from their pointers.
    Log(log::Args),
    /// Prove every recorded part is present and byte-identical; report anything else.
    /// `verify merge` combines the reports of a sharded verify.
    #[command(args_conflicts_with_subcommands = true)]
    Verify(verify::Args),
    /// Print the contract.
    Schema(schema::Args),
    /// Generate realistic sample events, append and verify them.
    Demo(demo::Args),
    /// Seal every commit not sealed yet (hash chain, Merkle root, optional signature).
    Seal(seal::Args),
    /// Merge sealed small parts into large ones for the lake's engines, every row
    /// accounted for; seal the compactions (the originals stay).
    Compact(compact::Args),
    /// Make an Ed25519 key pair for signing seals.
    Keygen(keygen::Args),
    /// Print an inclusion proof of a commit in a seal.
    Prove(prove::Args),
    /// Check an inclusion proof offline against a head digest.
    VerifyProof(verify_proof::Args),
    /// Adopt orphan parts (a crash between part and pointer) by writing their pointers.
    Repair(repair::Args),
    /// Remove stale temps left by crashed publishes.
    Sweep(sweep::Args),
    /// Export lineage: OpenLineage events, ISO 19115-3 / ISO 19139 records.
    Export(export::Args),
    /// List the parts of the commits sealed up to a seal, each checked against its sealed
    /// pointer: paths or URLs for DuckDB's read_parquet, Polars, pyarrow.
    Files(files::Args),
    /// Write the rows of the store as of a seal, every part checked while it is read.
    Scan(scan::Args),
    /// Copy every object another store lacks, checked, create-only, in order.
    Replicate(replicate::Args),
    /// Record the store's newest seal in a witness store.
    Witness(witness::Args),
    /// Write an audit report (HTML, Markdown or JSON): `verify`'s checks with the trust
    /// anchors given, and what the runs' rows say.
    Report(report::Args),
    /// List the seals: sequence, time, digest, signing key, commits added, compactions,
    /// witnessed or not.
    Seals(seals::Args),
    /// One commit or seal in words: who, when, what, where, sealed by, proofs.
    Show(show::Args),
    /// What changed between two seals: commits added, compactions, runs, rows.
    Diff(diff::Args),
}

/// Run the CLI with the process arguments.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&Error::internal(format!("cannot start the runtime: {e}"))),
    };
    let result = rt.block_on(async {
        match cli.command {
            Command::Append(a) => append::run(a).await,
            Command::Check(a) => check::run(a),
            Command::Log(a) => log::run(a).await,
            Command::Verify(a) => verify::run(a).await,
            Command::Schema(a) => schema::run(a),
            Command::Demo(a) => demo::run(a).await,
            Command::Seal(a) => seal::run(a).await,
            Command::Compact(a) => compact::run(a).await,
            Command::Keygen(a) => keygen::run(a).await,
            Command::Prove(a) => prove::run(a).await,
            Command::VerifyProof(a) => verify_proof::run(a).await,
            Command::Repair(a) => repair::run(a).await,
            Command::Sweep(a) => sweep::run(a).await,
            Command::Export(a) => export::run(a).await,
            Command::Files(a) => files::run(a).await,
            Command::Scan(a) => scan::run(a).await,
            Command::Replicate(a) => replicate::run(a).await,
            Command::Witness(a) => witness::run(a).await,
            Command::Report(a) => report::run(a).await,
            Command::Seals(a) => seals::run(a).await,
            Command::Show(a) => show::run(a).await,
            Command::Diff(a) => diff::run(a).await,
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) if closed_stdout(&e) => ExitCode::from(STDOUT_CLOSED),
        Err(e) => fail(&e),
    }
}

/// Exit status when the reader of standard output went away (`lineage log | head -1`):
/// 128 + SIGPIPE, what a shell reports for a command ended by a closed pipe. Not 0: the
/// command stopped before it finished (a `verify` whose output was cut did not verify
/// everything, and `set -o pipefail` must not take it for a pass); not an error message
/// either: the reader chose to stop. `append` is the exception: it publishes every commit
/// whether or not its lines are read, so it exits 0 (see `cli::append`).
pub const STDOUT_CLOSED: u8 = 141;

fn fail(e: &Error) -> ExitCode {
    let mut err = std::io::stderr().lock();
    match e.rejection() {
        // Refused input: one line per error, each as it would read alone.
        Some(r) => {
            for line in r.errors.iter().map(ToString::to_string).chain(r.more()) {
                let _ = writeln!(err, "error: {}", crate::base::text::printable(&line));
            }
            if let Some(h) = &r.hint {
                let _ = writeln!(err, "hint: {h}");
            }
        }
        None => {
            let _ = writeln!(
                err,
                "error: {}",
                crate::base::text::printable(&with_causes(e))
            );
        }
    }
    ExitCode::from(u8::try_from(e.kind().exit_code()).unwrap_or(4))
}

/// The error and each underlying cause its message does not already hold: object_store's
/// message for a timed-out request ends in "error sending request", the cause says
/// "operation timed out" (or "connection reset"), which is what an operator acts on.
pub(crate) fn with_causes(e: &Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let m = c.to_string();
        if !m.is_empty() && !text.contains(&m) {
            text.push_str(": ");
            text.push_str(&m);
        }
        cause = c.source();
    }
    text
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LINEAGE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour only on a terminal (never into a pipe or a file), and never with NO_COLOR.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}

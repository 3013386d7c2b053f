//! `lineage log`: the commits in commit-time order (`--since-seal`: only the new ones),
//! then the compactions the seals put into effect (`--since-seal`: by the seals after it).
//!
//! A selection that matches nothing says so on stderr: `--run-id` naming a run with no
//! commit at all is a mistake (exit 2, like `export --run-id`); `--since-seal` with
//! nothing new is an answer (exit 0).

use std::io::Write;

use crate::audit::compaction_log::LoggedCompaction;
use crate::base::error::{Error, Result};
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::history::pointers::{read_pointers_past_corrupt, Unreadable};
use crate::publish::store::options::Opening;
use crate::publish::AtomicPublisher;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// Only this run.
    #[arg(long)]
    run_id: Option<String>,
    /// One JSON pointer per line; a compaction's line has `"kind": "compaction"`.
    #[arg(long)]
    json: bool,
    /// Only the commits after seal SEQ (default: the newest), in O(new) reads.
    #[arg(long, value_name = "SEQ", num_args = 0..=1)]
    since_seal: Option<Option<u64>>,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    // The arguments first: a bad run id is named whatever the store holds.
    if let Some(r) = &a.run_id {
        crate::format::keys::check_run_id(r)?;
    }
    let store = a.store.open(Opening::ExistingStore).await?;
    // A pointer that cannot be read or parsed is listed as a problem; the others are
    // listed all the same.
    let (pointers, unreadable) = match a.since_seal {
        Some(since) => {
            crate::audit::log::since_seal_past_corrupt(store.as_ref(), since, a.run_id.as_deref())
                .await?
        }
        None => read_pointers_past_corrupt(store.as_ref(), a.run_id.as_deref()).await?,
    };
    let after = match a.since_seal {
        Some(Some(n)) => Some(n),
        Some(None) => Some(u64::MAX), // after the newest seal: no seal, no compaction
        None => None,
    };
    let (compactions, unlisted) =
        crate::audit::compaction_log::compactions(store.as_ref(), after, a.run_id.as_deref())
            .await?;
    if pointers.is_empty() && unreadable.is_empty() {
        say_none(&a, store.as_ref()).await?;
    }
    for p in pointers {
        if a.json {
            out_raw(&json_line(&p)?)?;
        } else {
            out(&format!(
                "{} {} run_id={} target_crs={} rows={} seq={}..{} {}{}{}",
                p.committed_utc,
                p.commit_id,
                p.run_id,
                p.target_crs,
                p.row_count,
                p.first_sequence,
                p.last_sequence,
                p.part_path,
                if p.adopted { " (adopted)" } else { "" },
                p.writer
                    .as_ref()
                    .map_or(String::new(), |w| format!(" writer: {}", w.describe()))
            ))?;
        }
    }
    for c in &compactions {
        print_compaction(c, a.json)?;
    }
    for u in &unlisted {
        let line = format!("PROBLEM bad_compaction_record: {}: {}", u.key, u.detail);
        let _ = writeln!(std::io::stderr(), "{}", crate::base::text::printable(&line));
    }
    Ok(problems(&unreadable).max(u8::from(!unlisted.is_empty())))
}

/// One compaction: its time, id, partition, rows, part, and the seals of the commits it
/// re-laid (a compaction writes no commit: its rows stay those commits').
fn print_compaction(c: &LoggedCompaction, json: bool) -> Result<()> {
    if json {
        return out_raw(&json_line(c)?);
    }
    let r = &c.record;
    let first = r
        .sources
        .iter()
        .map(|s| s.sealed_by)
        .min()
        .unwrap_or_default();
    let last = r
        .sources
        .iter()
        .map(|s| s.sealed_by)
        .max()
        .unwrap_or_default();
    let seals = if first == last {
        format!("seal {first}")
    } else {
        format!("seals {first}-{last}")
    };
    out(&format!(
        "{} compaction {} run_id={} target_crs={} rows={} seq={}..{} {} (seal {}: re-laid {} commits of {seals}; rows stay theirs)",
        r.compacted_utc,
        r.compaction_id,
        r.run_id,
        r.target_crs,
        r.row_count,
        r.first_sequence,
        r.last_sequence,
        r.part_path,
        c.sealed_by,
        r.sources.len(),
    ))
}

/// No commit to list: a run the store never had is refused (exit 2); otherwise say so on
/// standard error (exit 0).
async fn say_none(a: &Args, store: &dyn AtomicPublisher) -> Result<()> {
    if let Some(r) = &a.run_id {
        let prefix = format!("{}run_id={r}/", crate::format::keys::COMMITS_PREFIX);
        if store.list_after(&prefix, "", 1).await?.is_empty() {
            return Err(Error::NotFound(format!(
                "no commits of run_id {r} in {}",
                store.describe()
            )));
        }
    }
    let what = a
        .run_id
        .as_ref()
        .map_or(String::new(), |r| format!(" of run_id {r}"));
    let since = match a.since_seal {
        Some(Some(n)) => format!(" after seal {n}"),
        Some(None) => " after the newest seal".to_string(),
        None => String::new(),
    };
    let _ = writeln!(std::io::stderr(), "no commits{what}{since}");
    Ok(())
}

/// Name every pointer that could not be read on standard error: the exit status (1 when
/// there is any).
fn problems(unreadable: &[Unreadable]) -> Status {
    for u in unreadable {
        let why = match &u.error {
            Error::Corrupt { message, .. } => message.clone(),
            e => e.to_string().into(),
        };
        let line = format!("PROBLEM corrupt_pointer: {}: {why}", u.key);
        let _ = writeln!(std::io::stderr(), "{}", crate::base::text::printable(&line));
    }
    if unreadable.is_empty() {
        return 0;
    }
    let n = unreadable.len();
    let _ = writeln!(
        std::io::stderr(),
        "{n} pointer{} not read (`lineage verify` reports the store); every other commit is listed",
        if n == 1 { "" } else { "s" }
    );
    1
}

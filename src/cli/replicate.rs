//! `lineage replicate --from URL --to URL [--follow]`: copy every object the destination
//! lacks ([`crate::replicate`]), and `verify --replica-of URL` (the comparison).
//!
//! Exit codes: 0 the destination holds everything; 1 source objects were refused as
//! corrupt (named; nothing naming them was copied); 2 usage or access error; 3 a conflict
//! (a key at the destination holds other bytes; nothing was overwritten); 128 + signal
//! when a one-shot run was stopped by SIGINT/SIGTERM (`--follow` stops with 0).
// The doc comments of the argument structs are clap help texts, not rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::cli::common::{duration, open, Side};
use crate::cli::common::{json_line, out, out_raw, Status};
use crate::publish::store::options::{Opening, SideEnv};
use crate::publish::AtomicPublisher;
use crate::replicate::compare::{compare, Relation, ReplicaReport};
use crate::replicate::stop::Stop;
use crate::replicate::types::{
    Progress, PublishHook, ReplicateOptions, Summary, DEFAULT_CONCURRENCY,
};
use crate::replicate::{follow, replicate};

/// Test hook: after the Nth object this process creates at the destination, say so on
/// stderr and hold until a stop is requested (tests SIGKILL or SIGTERM it there).
pub(super) const HOLD_HOOK_VAR: &str = "LINEAGE_TEST_HOLD_AFTER_PUBLISHES";
/// The line the hook prints (followed by the count and the key).
pub(super) const HOLD_HOOK_LINE: &str = "lineage test hook: holding after publish";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The source store (any URL `--store` takes). Its own settings: variables
    /// `LINEAGE_FROM_<NAME>` override `<NAME>` (e.g. LINEAGE_FROM_AWS_PROFILE).
    #[arg(long, value_name = "URL")]
    from: String,
    /// The destination store. Its own settings: `LINEAGE_TO_<NAME>` override `<NAME>`.
    #[arg(long, value_name = "URL")]
    to: String,
    /// S3 endpoint of the source (default: LINEAGE_FROM_AWS_ENDPOINT_URL[_S3], then AWS_ENDPOINT_URL[_S3]).
    #[arg(long, value_name = "URL")]
    from_endpoint_url: Option<String>,
    /// S3 endpoint of the destination (default: LINEAGE_TO_AWS_ENDPOINT_URL[_S3], then AWS_ENDPOINT_URL[_S3]).
    #[arg(long, value_name = "URL")]
    to_endpoint_url: Option<String>,
    #[command(flatten)]
    limit: crate::cli::common::ReadLimitsArg,
    /// Objects copied at once (each worker holds at most one part in memory).
    #[arg(long, default_value_t = DEFAULT_CONCURRENCY)]
    concurrency: usize,
    /// The summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// Keep replicating new commits as they land, until SIGINT or SIGTERM.
    #[arg(long)]
    follow: bool,
    /// With --follow: the wait between passes.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        requires = "follow",
        value_parser = duration
    )]
    interval: chrono::Duration,
}

/// One side of a two-store command: its URL, endpoint and the prefix of its own variables.
pub(crate) fn side<'a>(url: &'a str, endpoint_url: Option<&'a str>, prefix: &str) -> Side<'a> {
    Side {
        url,
        endpoint_url,
        env: SideEnv::prefixed(prefix),
    }
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    // Signals first: a stop requested at any later point is seen.
    let stop = Stop::new();
    let signal = Arc::new(AtomicU8::new(0));
    listen_for_signals(stop.clone(), signal.clone())?;
    if a.from.trim() == a.to.trim() {
        return Err(Error::usage("--from and --to name the same store"));
    }
    let interval = a
        .interval
        .to_std()
        .map_err(|_| Error::usage("--interval must be positive"))?;
    let limits = a.limit.get();
    // A mistyped source must not make an empty replica.
    let from = side(&a.from, a.from_endpoint_url.as_deref(), "LINEAGE_FROM_");
    let src = open(from, limits, Opening::ExistingStore).await?;
    let to = side(&a.to, a.to_endpoint_url.as_deref(), "LINEAGE_TO_");
    let dst = open(to, limits, Opening::Store).await?;
    let progress = Arc::new(Progress::default());
    let opts = ReplicateOptions {
        concurrency: a.concurrency.max(1),
        progress: Some(progress.clone()),
        stop: stop.clone(),
        on_published: hold_hook(stop)?,
    };
    let bar = (std::io::stderr().is_terminal() && !a.follow)
        .then(|| tokio::spawn(show_progress(progress)));
    let result = if a.follow {
        follow(src, dst, opts, interval, |p| {
            let _ = writeln!(std::io::stderr(), "replicate: pass: {}", copied_line(p));
        })
        .await
    } else {
        replicate(src, dst, opts).await
    };
    if let Some(bar) = bar {
        bar.abort();
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    let s = result?;
    if a.json {
        out_raw(&json_line(&s)?)?;
    } else {
        print_summary(&s)?;
    }
    Ok(status(&s, signal.load(Ordering::SeqCst), a.follow))
}

/// The exit status of a finished run (a conflict named on standard error): 3 for a
/// conflict, 1 for refused source objects, 128 + the signal that stopped a one-shot run.
fn status(s: &Summary, signal: u8, follow: bool) -> Status {
    if let Some(c) = s.conflicts.first() {
        let _ = writeln!(
            std::io::stderr(),
            "error: conflict at {}: destination sha256 {}, source sha256 {}; nothing was overwritten{}",
            c.key,
            c.destination_sha256,
            c.source_sha256.as_deref().unwrap_or("(none: the source has no such object)"),
            if s.conflicts.len() > 1 {
                format!(" ({} conflicts in all)", s.conflicts.len())
            } else {
                String::new()
            }
        );
        return 3;
    }
    if !s.refused.is_empty() {
        return 1;
    }
    if s.stopped && !follow && signal > 0 {
        128 + signal
    } else {
        0
    }
}

/// SIGINT/SIGTERM: the first requests a clean stop (objects in flight finish, nothing new
/// starts); a second one ends the process at once.
fn listen_for_signals(stop: Stop, which: Arc<AtomicU8>) -> Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let err = |e: std::io::Error| Error::internal(format!("cannot listen for signals: {e}"));
        let mut int = signal(SignalKind::interrupt()).map_err(err)?;
        let mut term = signal(SignalKind::terminate()).map_err(err)?;
        tokio::spawn(async move {
            loop {
                let n: u8 = tokio::select! {
                    _ = int.recv() => 2,
                    _ = term.recv() => 15,
                };
                if stop.is_requested() {
                    std::process::exit(128 + i32::from(n));
                }
                which.store(n, Ordering::SeqCst);
                stop.request();
                let _ = writeln!(
                    std::io::stderr(),
                    "replicate: stopping once the objects in flight are published (signal again to stop at once)"
                );
            }
        });
    }
    #[cfg(not(unix))]
    {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                which.store(2, Ordering::SeqCst);
                stop.request();
            }
        });
    }
    Ok(())
}

/// The test hook of [`HOLD_HOOK_VAR`], when set.
fn hold_hook(stop: Stop) -> Result<Option<PublishHook>> {
    let Ok(v) = std::env::var(HOLD_HOOK_VAR) else {
        return Ok(None);
    };
    let n: u64 = v
        .trim()
        .parse()
        .map_err(|_| Error::usage(format!("{HOLD_HOOK_VAR}={v:?} is not a number")))?;
    Ok(Some(Arc::new(move |count, key| {
        let stop = stop.clone();
        Box::pin(async move {
            if count == n {
                let _ = writeln!(std::io::stderr(), "{HOLD_HOOK_LINE} {count}: {key}");
                let _ = std::io::stderr().flush();
                stop.wait().await;
            }
        })
    })))
}

fn copied_line(s: &Summary) -> String {
    let c = &s.copied;
    if c.objects == 0 {
        return format!(
            "nothing to copy: the destination already holds all {} objects",
            s.already_present
        );
    }
    format!(
        "copied {} objects ({} parts, {} pointers, {} claims, {} seals, {} other), {} bytes; {} already present",
        c.objects, c.parts, c.pointers, c.claims, c.seals, c.other, c.bytes, s.already_present
    )
}

fn print_summary(s: &Summary) -> Result<()> {
    for n in &s.skipped {
        out(&format!("SKIPPED {}: {}", n.key, n.reason))?;
    }
    for n in &s.refused {
        out(&format!("REFUSED {}: {}", n.key, n.reason))?;
    }
    for c in &s.conflicts {
        out(&format!(
            "CONFLICT {}: destination sha256 {}, source sha256 {}; nothing was overwritten",
            c.key,
            c.destination_sha256,
            c.source_sha256.as_deref().unwrap_or("(none)")
        ))?;
    }
    out(&format!("{} → {}: {}", s.from, s.to, copied_line(s)))?;
    let head = |h: &Option<crate::replicate::types::Head>| {
        h.as_ref().map_or("no seal".to_string(), |h| {
            format!("seal {} sha256 {}", h.seq, h.sha256)
        })
    };
    out(&format!(
        "source head: {}; destination head: {}",
        head(&s.source_head),
        head(&s.destination_head)
    ))?;
    if let Some(i) = &s.iceberg {
        out(&format!(
            "iceberg {} (the destination's own table as of seal {}; objects of {} seals written)",
            i.metadata_location, i.seq, i.seals_written
        ))?;
    }
    if !s.skipped.is_empty() || !s.refused.is_empty() {
        out(&format!(
            "{} skipped (in flight or not lineage-store's), {} refused (corrupt at the source, or naming what was)",
            s.skipped.len(),
            s.refused.len()
        ))?;
    }
    if s.stopped {
        out(&format!(
            "stopped by a signal after {} passes: nothing half-published; run again to resume",
            s.passes
        ))?;
    }
    Ok(())
}

/// Redraw a one-line progress bar on stderr until aborted.
async fn show_progress(p: Arc<Progress>) {
    crate::cli::progress::redraw(|| {
        let done = p.objects_done.load(Ordering::Relaxed);
        let total = p.objects_total.load(Ordering::Relaxed).max(done);
        let (bd, bt) = (
            p.bytes_done.load(Ordering::Relaxed),
            p.bytes_total.load(Ordering::Relaxed),
        );
        let frac = if total > 0 {
            done as f64 / total as f64
        } else {
            0.0
        };
        format!(
            "replicate {} {done}/{total} objects, {} / {} MiB copied",
            crate::cli::progress::bar(frac, '='),
            bd >> 20,
            bt >> 20
        )
    })
    .await
}

/// `verify --replica-of URL`: also compare the store, as a replica, with its source.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplicaOfArgs {
    /// Also compare this store, as a replica, with its source at URL: every object on both
    /// sides byte for byte, and the seal chains (a replica that is behind is not a
    /// problem). The source's own settings: `LINEAGE_REPLICA_OF_<NAME>` override `<NAME>`.
    #[arg(long, value_name = "URL")]
    replica_of: Option<String>,
    /// S3 endpoint of the --replica-of store.
    #[arg(long, value_name = "URL", requires = "replica_of")]
    replica_of_endpoint_url: Option<String>,
}

impl ReplicaOfArgs {
    /// The comparison, when asked for.
    pub(crate) async fn check(&self, store: &dyn AtomicPublisher) -> Result<Option<ReplicaReport>> {
        let Some(url) = &self.replica_of else {
            return Ok(None);
        };
        let of = side(
            url,
            self.replica_of_endpoint_url.as_deref(),
            "LINEAGE_REPLICA_OF_",
        );
        let source = open(of, store.read_limits(), Opening::Store).await?;
        compare(store, source.as_ref()).await.map(Some)
    }
}

/// The lines `verify` prints for a comparison.
pub(crate) fn replica_lines(r: &ReplicaReport) -> Vec<String> {
    let mut lines: Vec<String> = r
        .problems
        .iter()
        .map(|p| {
            let kind = serde_json::to_value(p.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("PROBLEM replica {kind}: {}: {}", p.key, p.detail)
        })
        .collect();
    let head = |h: &Option<crate::replicate::types::Head>| {
        h.as_ref()
            .map_or("no seal".to_string(), |h| format!("seal {}", h.seq))
    };
    let relation = match r.relation {
        Relation::Identical => "the same seals".to_string(),
        Relation::NoSeals => "no seals on either side".to_string(),
        Relation::ReplicaBehind => format!(
            "the replica's seals are a prefix of the source's: behind by {} seals",
            r.behind.seals
        ),
        Relation::SourceBehind => {
            "the source's seals are a prefix of the replica's: the source lost its newest seals"
                .into()
        }
        Relation::Diverged => "the seal chains diverge".into(),
    };
    lines.push(format!(
        "replica of {}: {} objects compared byte for byte ({} bytes hashed); replica head {}, source head {}: {relation}",
        r.source,
        r.objects_compared,
        r.bytes_hashed,
        head(&r.replica_head),
        head(&r.source_head)
    ));
    if r.behind.objects > 0 {
        lines.push(format!(
            "the replica is behind by {} commits ({} objects) not replicated yet: not a problem; `lineage replicate` copies them",
            r.behind.commits, r.behind.objects
        ));
    }
    lines
}

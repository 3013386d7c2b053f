//! `lineage verify`: exit 0 when clean, 1 when anything is wrong (each object named),
//! 2 on a usage or access error (the store or a key file cannot be read).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::audit::findings::{Progress, Report};
use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::platform::{ResolvedShard, ShardRequest};
use crate::audit::verify::report_dir::{read_shard_reports, write_shard_report};
use crate::audit::verify::verify_with;
use crate::base::error::{Error, Result};
use crate::base::limits::ReadLimits;
use crate::cli::common::{duration, open, Side, DEFAULT_GRACE};
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::publish::store::options::{Opening, SideEnv};
use crate::publish::AtomicPublisher;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    merge: Option<Merge>,
    #[command(flatten)]
    store: StoreArg,
    /// The report as one JSON object (every problem, uncapped).
    #[arg(long)]
    json: bool,
    /// Problems printed per kind (the rest counted in one line); 0 prints every one.
    #[arg(long, value_name = "N", default_value_t = PROBLEMS_PER_KIND)]
    problems_per_kind: usize,
    /// Re-hash only N randomly chosen parts (existence, size and footer of every part, and
    /// the whole seal chain, are still checked).
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// Seed for --sample (printed in the report, so a sample can be repeated).
    #[arg(long, value_name = "SEED", requires = "sample")]
    sample_seed: Option<u64>,
    /// Check only what came after seal SEQ (default: the newest): the seals from SEQ on,
    /// the commits sealed after it and those not sealed yet, in O(new) reads. Trusts an
    /// earlier full verify for everything before.
    #[arg(long, value_name = "SEQ", num_args = 0..=1)]
    since_seal: Option<Option<u64>>,
    /// With --expect-head: trust what the expected head covers (an earlier verify checked
    /// it). An RFC 9162 consistency proof from the hash tiles must show the newest seal's
    /// tree extends that seal's; only the seals from it on and the commits after it are
    /// read. The verdict says what was checked by proof and what by reading.
    #[arg(long, requires = "expect_head", conflicts_with_all = ["since_seal", "shard"])]
    trust_expected_head: bool,
    /// Which digests of each part to recompute: `fastest` (BLAKE3 where the pointer
    /// records one, else sha256) or `all` (every recorded digest, sha256 always: for
    /// audits that must rest on a FIPS 180-4 digest).
    #[arg(long, value_name = "WHICH", default_value = "fastest")]
    digest: crate::base::digest::Check,
    /// Objects read at once.
    #[arg(long, value_name = "N", default_value_t = crate::history::pointers::READ_CONCURRENCY)]
    concurrency: usize,
    /// Check shard I of N (from 0) of a full verify; `verify merge` combines the N JSON
    /// reports. `auto`: the index from the batch platform's environment
    /// (AWS_BATCH_JOB_ARRAY_INDEX, JOB_COMPLETION_INDEX, CLOUD_RUN_TASK_INDEX), the count
    /// from --shards N or CLOUD_RUN_TASK_COUNT.
    #[arg(long, value_name = "I/N|auto", conflicts_with = "since_seal")]
    shard: Option<ShardRequest>,
    /// How many shards (tasks) a `--shard auto` verification has.
    #[arg(long, value_name = "N", requires = "shard")]
    shards: Option<u32>,
    /// With --shard: also publish this shard's JSON report into URL (any store URL; never
    /// overwriting, a retried task adds its next attempt).
    #[arg(long, value_name = "URL")]
    report_dir: Option<String>,
    /// Cut the shards from the commits of seal SEQ (give every shard the same one).
    #[arg(long, value_name = "SEQ", requires = "shard")]
    plan_seal: Option<u64>,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    #[command(flatten)]
    tsa_root: crate::cli::timestamps::TsaRootArg,
    /// Temps and well-formed parts without a pointer whose content (temp name, commit id,
    /// commit-key claim) says they were made within this period are in flight, not
    /// problems; each is named. Modification times are never trusted for this. With
    /// --since-seal on a local disk, a data directory unchanged since seal SEQ's clock less
    /// this period is not read again.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_GRACE, value_parser = duration)]
    grace: chrono::Duration,
    #[command(flatten)]
    replica: crate::cli::replicate::ReplicaOfArgs,
    /// Accept the commits `lineage repair` adopted that the expected head does not cover
    /// (sealed after its seal, or all of them without --expect-head): listed as
    /// accepted, not as `adopted_commit` problems, and the verdict says so.
    #[arg(long)]
    accept_adopted: bool,
}

/// `lineage verify merge`.
#[derive(Debug, clap::Subcommand)]
enum Merge {
    /// Combine the JSON reports of every shard (`verify --shard I/N --json`) into one: the
    /// files given, and the newest attempt of every shard report in --report-dir.
    Merge(MergeArgs),
}

#[derive(Debug, clap::Args)]
struct MergeArgs {
    /// The shards' JSON reports.
    #[arg(value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// Where the shards published their reports (`verify --shard … --report-dir URL`).
    #[arg(long, value_name = "URL")]
    report_dir: Option<String>,
    /// S3 endpoint of --report-dir; default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL.
    #[arg(long, value_name = "URL")]
    endpoint_url: Option<String>,
    /// The merged report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Problems printed per kind (the rest counted in one line); 0 prints every one.
    #[arg(long, value_name = "N", default_value_t = PROBLEMS_PER_KIND)]
    problems_per_kind: usize,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    if let Some(Merge::Merge(m)) = &a.merge {
        return merge(m).await;
    }
    let shard = shard_of(&a)?;
    if let Some(s) = &shard {
        tracing::info!("verifying {s}");
    }
    let report_dir = match (&a.report_dir, &shard) {
        (Some(_), None) => {
            return Err(Error::usage(
                "--report-dir: give --shard I/N or --shard auto (each shard publishes its report there), or use `verify merge` (to read them)",
            ))
        }
        (Some(url), Some(_)) => Some(report_location(url, a.store.endpoint_url.as_deref()).await?),
        (None, _) => None,
    };
    let progress = Arc::new(Progress::default());
    let store = a.store.open(Opening::ExistingStore).await?;
    let anchors = a.anchors.anchors(store.as_ref()).await?;
    let opts = options(&a, shard.as_ref(), progress.clone())?.with_anchors(&anchors);
    let mut report = with_progress(progress, verify_with(store.as_ref(), &opts)).await?;
    let cosigners = match &anchors.witness_keys {
        Some(k) => Some(k.judge_into(store.as_ref(), &mut report).await?),
        None => None,
    };
    let replica = a.replica.check(store.as_ref()).await?;
    let witness = a.anchors.witness.check(store.as_ref()).await?;
    if let Some(w) = &witness {
        report.anchors.push(crate::witness::anchor_outcome(w));
        report.settle();
    }
    // Published before anything is printed: a task that could not leave its report fails
    // (exit 2) and is retried by its platform.
    let written = match &report_dir {
        Some(dir) => Some(format!(
            "{} {}",
            dir.describe(),
            write_shard_report(dir.as_ref(), &report).await?
        )),
        None => None,
    };
    let checks = Checks {
        report,
        replica,
        witness,
        cosigners,
        written,
    };
    checks.print(&a, shard.as_ref())
}

/// What one `verify` found: the store's report, the replica and witness checks, and
/// where the shard report was written.
struct Checks {
    report: Report,
    replica: Option<crate::replicate::compare::ReplicaReport>,
    witness: Option<crate::witness::WitnessReport>,
    cosigners: Option<Vec<crate::audit::cosigners::KeyFound>>,
    written: Option<String>,
}

impl Checks {
    /// Print it (`--json`: one object) and say the exit status: 1 when anything is wrong.
    fn print(&self, a: &Args, shard: Option<&ResolvedShard>) -> Result<Status> {
        let more = self.replica.as_ref().map_or(0, |r| r.problems.len())
            + self.witness.as_ref().map_or(0, |w| w.problems.len());
        if a.json {
            let mut v = serde_json::to_value(&self.report).map_err(Error::internal_from)?;
            v["replica"] = serde_json::to_value(&self.replica).map_err(Error::internal_from)?;
            v["witness"] = serde_json::to_value(&self.witness).map_err(Error::internal_from)?;
            if let Some(c) = &self.cosigners {
                v["witness_keys"] = serde_json::to_value(c).map_err(Error::internal_from)?;
            }
            if let Some(w) = &self.written {
                v["report_written"] = serde_json::Value::String(w.clone());
            }
            out_raw(&json_line(&v)?)?;
        } else {
            let mut lines = self
                .replica
                .as_ref()
                .map(crate::cli::replicate::replica_lines)
                .unwrap_or_default();
            lines.extend(
                self.witness
                    .as_ref()
                    .map(crate::cli::witness::witness_lines)
                    .unwrap_or_default(),
            );
            let mut lines = cap_per_kind(lines, a.problems_per_kind);
            lines.extend(shard.map(|s| format!("{s}")));
            lines.extend(
                self.written
                    .as_ref()
                    .map(|w| format!("shard report written: {w}")),
            );
            print_report(&self.report, &lines, more, a.problems_per_kind)?;
        }
        Ok(if self.report.is_clean() && more == 0 {
            0
        } else {
            1
        })
    }
}

/// The library's options from the arguments (the anchors are added by the caller).
fn options(
    a: &Args,
    shard: Option<&ResolvedShard>,
    progress: Arc<Progress>,
) -> Result<VerifyOptions> {
    Ok(VerifyOptions {
        grace: a.grace,
        sample: a.sample,
        sample_seed: a.sample_seed,
        since_seal: a.since_seal,
        trust_expected_head: a.trust_expected_head,
        progress: Some(progress),
        concurrency: a.concurrency.max(1),
        shard: shard.map(|s| s.spec),
        plan_seal: a.plan_seal,
        digest: a.digest,
        accept_adopted: a.accept_adopted,
        tsa_roots: match (a.tsa_root.roots()?, a.since_seal) {
            (Some(_), Some(_)) => return Err(Error::usage(
                "--tsa-root: the seals' times are checked by a full verify; leave out --since-seal",
            )),
            (roots, _) => roots,
        },
        ..VerifyOptions::default()
    })
}

/// Run `work`, showing `progress` on a terminal's standard error meanwhile.
async fn with_progress<T>(
    progress: Arc<Progress>,
    work: impl std::future::Future<Output = T>,
) -> T {
    let bar = std::io::stderr()
        .is_terminal()
        .then(|| tokio::spawn(show_progress(progress)));
    let out = work.await;
    if let Some(bar) = bar {
        bar.abort();
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    out
}

/// The shard `--shard` asks for (`auto`: from the platform's environment).
fn shard_of(a: &Args) -> Result<Option<ResolvedShard>> {
    a.shard
        .map(|r| r.resolve(a.shards, &|k| std::env::var(k).ok()))
        .transpose()
}

/// Where shard reports are published: a location, not a store.
async fn report_location(
    url: &str,
    endpoint_url: Option<&str>,
) -> Result<Arc<crate::publish::store::Store>> {
    let side = Side {
        url,
        endpoint_url,
        env: SideEnv::plain(),
    };
    open(side, ReadLimits::default(), Opening::Location).await
}

/// `verify merge`: one report from the shards' JSON reports (files, and `--report-dir`).
async fn merge(a: &MergeArgs) -> Result<Status> {
    let mut reports = Vec::new();
    if a.reports.is_empty() && a.report_dir.is_none() {
        return Err(Error::usage(
            "verify merge: give the shards' REPORT.json files, or --report-dir URL where they published them",
        ));
    }
    if let Some(url) = &a.report_dir {
        let dir = report_location(url, a.endpoint_url.as_deref()).await?;
        reports.extend(read_shard_reports(dir.as_ref()).await?);
    }
    for path in &a.reports {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let r: Report = serde_json::from_str(text.trim()).map_err(|e| {
            Error::usage(format!(
                "{}: not a `verify --json` report: {e}",
                path.display()
            ))
        })?;
        reports.push(r);
    }
    let report = crate::audit::verify::shard::merge(reports)?;
    if a.json {
        out_raw(&json_line(&report)?)?;
    } else {
        print_report(&report, &[], 0, a.problems_per_kind)?;
    }
    Ok(if report.is_clean() { 0 } else { 1 })
}

/// Problems of one kind printed by default; the rest are counted in one line (a store
/// of a million planted objects must not print a million lines; `--json` keeps all).
const PROBLEMS_PER_KIND: usize = 20;

/// The report, then `more` lines (of `--replica-of`, `--witness`) holding `extra` problems;
/// at most `per_kind` problems of each kind (0: all), then how many more.
fn print_report(r: &Report, more: &[String], extra: usize, per_kind: usize) -> Result<()> {
    print_problems(r, per_kind)?;
    print_counts(r)?;
    print_notes(r)?;
    print_seals(r)?;
    print_adopted(r, per_kind)?;
    for f in &r.in_flight_objects {
        out(&format!("IN FLIGHT {}: {}", f.key, f.detail))?;
    }
    for l in more {
        out(l)?;
    }
    if r.anchored() {
        for l in r.anchor_lines() {
            out(&l)?;
        }
    }
    let verdict = if extra == 0 {
        r.summary()
    } else {
        let flying = match r.in_flight {
            0 => String::new(),
            n => format!("; {n} object{} in flight", if n == 1 { "" } else { "s" }),
        };
        let accepted = match r.accepted_adopted() {
            0 => String::new(),
            n => format!(
                "; {n} adopted commit{} accepted (--accept-adopted)",
                if n == 1 { "" } else { "s" }
            ),
        };
        format!("{} problems{flying}{accepted}", r.problems.len() + extra)
    };
    out(&format!(
        "{verdict}{}",
        anchoring(r, extra == 0 && r.is_clean())
    ))
}

/// What the verdict rests on, after it: the anchors that held, or (for a `clean`
/// verdict) that none was given.
fn anchoring(r: &Report, clean: bool) -> String {
    if !r.anchored() {
        return match clean {
            true => format!(" ({})", crate::audit::anchor_outcome::UNANCHORED),
            false => String::new(),
        };
    }
    let held: Vec<&str> = r
        .anchors
        .iter()
        .filter(|o| o.held)
        .map(|o| o.anchor.name())
        .collect();
    let failed: Vec<&str> = r
        .anchors
        .iter()
        .filter(|o| !o.held)
        .map(|o| o.anchor.name())
        .collect();
    match (held.is_empty(), failed.is_empty()) {
        (_, true) => format!(" (anchored: {} held)", held.join(", ")),
        (true, false) => format!(" (anchors failed: {})", failed.join(", ")),
        (false, false) => format!(
            " (anchors held: {}; failed: {})",
            held.join(", "),
            failed.join(", ")
        ),
    }
}

/// The `PROBLEM <side> <kind>: …` lines of `--replica-of` and `--witness` capped as the
/// store's are: at most `per_kind` of each kind (0: all), then how many more (a hostile
/// witness must not print 100,000 lines); other lines kept.
fn cap_per_kind(lines: Vec<String>, per_kind: usize) -> Vec<String> {
    let mut shown: std::collections::BTreeMap<String, usize> = Default::default();
    let mut out = Vec::new();
    for l in lines {
        let kind = match l.strip_prefix("PROBLEM ").and_then(|r| r.split_once(": ")) {
            Some((kind, _)) => kind.to_string(),
            None => {
                out.push(l);
                continue;
            }
        };
        let n = shown.entry(kind).or_default();
        *n += 1;
        if per_kind == 0 || *n <= per_kind {
            out.push(l);
        }
    }
    for (kind, n) in shown {
        if per_kind > 0 && n > per_kind {
            out.push(format!(
                "PROBLEM {kind}: … and {} more (--json or --problems-per-kind 0 lists every one)",
                n - per_kind
            ));
        }
    }
    out
}

/// At most `per_kind` problems of each kind (0: all), then how many more of each.
fn print_problems(r: &Report, per_kind: usize) -> Result<()> {
    let mut shown: std::collections::BTreeMap<String, usize> = Default::default();
    for p in &r.problems {
        let kind = p.kind.name();
        let n = shown.entry(kind.clone()).or_default();
        *n += 1;
        if per_kind == 0 || *n <= per_kind {
            out(&format!("PROBLEM {kind}: {}: {}", p.key, p.detail))?;
        }
    }
    for (kind, n) in shown {
        if per_kind > 0 && n > per_kind {
            out(&format!(
                "PROBLEM {kind}: … and {} more (--json or --problems-per-kind 0 lists every one)",
                n - per_kind
            ))?;
        }
    }
    Ok(())
}

/// What was checked: commits, parts, how they were hashed, rows and bytes.
fn print_counts(r: &Report) -> Result<()> {
    let mut hashed = format!("{} parts hashed", r.parts_hashed);
    if r.parts_hashed > 0 {
        hashed.push_str(&format!(
            " ({} by sha256, {} by blake3)",
            r.parts_sha256_checked, r.parts_blake3_checked
        ));
    }
    if r.parts_not_hashed > 0 {
        hashed.push_str(&format!(", {} not re-hashed", r.parts_not_hashed));
        if let Some(seed) = r.sample_seed {
            hashed.push_str(&format!(" (sample seed {seed})"));
        }
    }
    let compacted = match r.compacted_parts_ok {
        0 => String::new(),
        n => format!(", and {n} compacted parts (sha256 and rows against their sources)"),
    };
    out(&format!(
        "{}: {} commits, {} parts verified ({hashed}; {} rows, {} bytes hashed){compacted}",
        r.store, r.commits, r.parts_ok, r.rows, r.bytes_hashed
    ))
}

/// What the check covered, when it was less than everything or more than one run.
fn print_notes(r: &Report) -> Result<()> {
    crate::cli::timestamps::seal_time_lines(r)?;
    if let Some(n) = r.unfinished_seal {
        out(&format!(
            "seal {n} is not finished (no head marker yet): `lineage seal` finishes it; its tiles and locators are checked once it is"
        ))?;
    }
    if let (Some(v), Some(h)) = (r.delta_version, r.head_seq) {
        if v < h {
            out(&format!(
                "Delta table at version {v}, behind seal {h}: `lineage seal` writes the versions after it"
            ))?;
        }
    }
    if let Some(t) = &r.trusted_head {
        out(&trusted_head_line(t))?;
    } else if let Some(n) = r.since_seal {
        out(&format!(
            "since seal {n}: checked the seals from {n} on and the commits after it; everything sealed by seal {n} or earlier was not looked at"
        ))?;
    }
    if let Some(a) = &r.data_area {
        out(&data_area_line(a))?;
    }
    if let Some(s) = &r.shard {
        out(&format!(
            "shard {}/{} (plan {}): merge every shard's --json report with `lineage verify merge`",
            s.index, s.count, s.plan
        ))?;
    }
    if let Some(m) = &r.merged {
        out(&format!(
            "merged from {} shards (plan {})",
            m.shards, m.plan
        ))?;
    }
    Ok(())
}

/// How much of the data area a `--since-seal` verify read.
fn data_area_line(a: &crate::audit::findings::DataAreaRead) -> String {
    match &a.unchanged_before_utc {
        Some(t) if a.unchanged_dirs > 0 => format!(
            "data area: read every directory changed since {t} (the file system's clock of the seal it started from, less the grace); {} directories unchanged since then were not read (their files were there for the full verify after that seal; a full `verify` reads them)",
            a.unchanged_dirs
        ),
        Some(t) => format!("data area: read whole (no directory unchanged since {t})"),
        None => "data area: read whole (the seal it started from recorded no file-system clock)".into(),
    }
}

/// What `--trust-expected-head` took on proof, and what it read.
fn trusted_head_line(t: &crate::audit::findings::TrustedHead) -> String {
    let proof = if t.consistent {
        format!(
            "checked by proof: seal {}'s tree of {} commits (the expected head) is extended by seal {}'s tree of {} (RFC 9162 consistency proof of {} hashes from the hash tiles)",
            t.seq, t.tree_size, t.newest_seq, t.newest_tree_size, t.proof_hashes
        )
    } else {
        format!(
            "NOT shown by proof that seal {}'s tree (the expected head) is extended by seal {}'s (see the bad_tile problem)",
            t.seq, t.newest_seq
        )
    };
    format!(
        "{proof}; checked by reading: seals {}-{} and the commits sealed after seal {} or not sealed yet, with their parts; not read (trusted with the expected head): the {} commits it covers, their parts, and the seals before seal {}",
        t.seq, t.newest_seq, t.seq, t.tree_size, t.seq.saturating_sub(1).max(1)
    )
}

/// The seal chain: how many seals, signed, commits sealed and not, and the head.
fn print_seals(r: &Report) -> Result<()> {
    match (&r.head_seq, &r.head) {
        (Some(seq), Some(head)) => out(&format!(
            "seals: {} ({}), {} commits sealed, {} not sealed yet; head: seal {seq} sha256 {head}{}",
            r.seals,
            signed_words(r, *seq),
            r.sealed_commits,
            r.unsealed_commits,
            r.head_sealed_utc
                .as_deref()
                .map(|t| format!(", sealed {t}"))
                .unwrap_or_default()
        )),
        _ if r.unsealed_commits == 0 && !r.problems.is_empty() => out(
            "seals: none, and no commits, while the store holds data: the store's own metadata (_lineage/) is missing; restore it from a replica or backup: `lineage repair --from REPLICA --expect-head H` (do not seal: a seal now would start another history)",
        ),
        _ => out(&format!(
            "seals: none ({} commits not sealed): run `lineage seal` to protect against removal",
            r.unsealed_commits
        )),
    }
}

/// The adopted commits: how many, then each (at most `per_kind`, 0: all) with its standing.
fn print_adopted(r: &Report, per_kind: usize) -> Result<()> {
    if r.adopted_commits.is_empty() {
        return Ok(());
    }
    let anchored = r.adopted_commits.iter().filter(|a| a.anchored).count();
    out(&format!(
        "adopted: {} commits written by `lineage repair` from orphan parts ({anchored} covered by the expected head, {} accepted, {} problems)",
        r.adopted,
        r.accepted_adopted(),
        r.adopted_commits.len() - anchored - r.accepted_adopted() as usize
    ))?;
    for (i, a) in r.adopted_commits.iter().enumerate() {
        if per_kind > 0 && i >= per_kind {
            out(&format!(
                "ADOPTED … and {} more (--json lists every one)",
                r.adopted_commits.len() - per_kind
            ))?;
            break;
        }
        let sealed = a
            .sealed_by
            .map_or("not sealed".to_string(), |s| format!("sealed by seal {s}"));
        let standing = match (a.anchored, a.accepted) {
            (true, _) => "covered by the expected head",
            (false, true) => "accepted (--accept-adopted)",
            (false, false) => "a problem (adopted_commit)",
        };
        out(&format!(
            "ADOPTED {}: commit {}, part {}, {sealed}; {standing}",
            a.key, a.commit_id, a.part_path
        ))?;
    }
    Ok(())
}

/// How many seals are signed: of all of them, or (`--since-seal`) of those checked, with
/// the seals not read said so (never a count of all that only covers some).
fn signed_words(r: &Report, head: u64) -> String {
    match r.since_seal {
        Some(n) => format!(
            "{} of seals {n}-{head} signed; seals before {n} not read",
            r.signed_seals
        ),
        None => format!("{} signed", r.signed_seals),
    }
}

/// Redraw a one-line progress bar on stderr until aborted.
async fn show_progress(p: Arc<Progress>) {
    crate::cli::progress::redraw(|| {
        let (done, total) = (
            p.parts_done.load(Ordering::Relaxed),
            p.parts_total.load(Ordering::Relaxed),
        );
        let (bd, bt) = (
            p.bytes_done.load(Ordering::Relaxed),
            p.bytes_total.load(Ordering::Relaxed),
        );
        let frac = if bt > 0 {
            bd as f64 / bt as f64
        } else if total > 0 {
            done as f64 / total as f64
        } else {
            0.0
        };
        format!(
            "verify {} {done}/{total} parts, {} / {} MiB",
            crate::cli::progress::bar(frac, '#'),
            bd >> 20,
            bt >> 20
        )
    })
    .await
}

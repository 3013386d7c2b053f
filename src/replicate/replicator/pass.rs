//! One pass: the source's listing sorted, the stages run in order, the summary made.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering;

use futures::StreamExt;

use super::seals::{copy_seals, seals_beyond_source};
use super::{Ctx, Done, Handled, Replicator};
use crate::audit::chain::{self, Chain};
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::IcebergKey;
use crate::history::iceberg::complete_table;
use crate::publish::{AtomicPublisher, ObjectInfo};
use crate::replicate::hold::{hold_back, AtDestination};
use crate::replicate::kinds::{kind_of, Kind, Stage};
use crate::replicate::types::{Conflict, Head, IcebergWritten, NotCopied, Progress, Summary};

impl Replicator {
    /// One pass: copy everything the destination lacks (see [`crate::replicate`]).
    pub async fn pass(&mut self) -> Result<Summary> {
        run(self).await
    }
}

/// The source's listing sorted by what a pass does with each key.
#[derive(Default)]
struct Sorted {
    /// Parts: key → size.
    parts: Vec<(String, u64)>,
    /// Unsettled pointers: key, run id, commit id.
    pointers: Vec<(String, String, String)>,
    /// Objects copied verbatim (after a content check where their kind has one), by stage.
    verbatim: BTreeMap<Stage, Vec<(String, Kind)>>,
    /// Every pointer key listed, settled or not.
    pointer_keys: HashSet<String>,
    /// The seals the source has an Iceberg metadata file of.
    iceberg: BTreeSet<u64>,
}

/// Run one pass of `r`.
async fn run(r: &mut Replicator) -> Result<Summary> {
    let (src, dst) = (r.src.as_ref(), r.dst.as_ref());
    let progress = r.opts.progress.clone().unwrap_or_default();
    for c in [
        &progress.objects_total,
        &progress.objects_done,
        &progress.bytes_total,
        &progress.bytes_done,
    ] {
        c.store(0, Ordering::Relaxed);
    }
    // The chain before the listing: every pointer a seal names is then in the listing.
    let chain = chain::walk(src, None).await?;
    let listing = src.list("").await?;
    if listing.is_empty() {
        return Err(Error::NotFound(format!(
            "{}: the source holds no objects (empty, or not where the URL points)",
            src.describe()
        )));
    }
    let dst_sizes: HashMap<String, u64> = dst
        .list("")
        .await?
        .into_iter()
        .map(|o| (o.key, o.size))
        .collect();
    let mut summary = Summary {
        from: src.describe(),
        to: dst.describe(),
        passes: 1,
        source_head: chain.head().map(|(seq, d)| Head {
            seq,
            sha256: d.to_string(),
        }),
        ..Summary::default()
    };
    let mut sorted = sort_listing(r, listing, &mut summary);
    set_totals(&progress, r, &chain, &sorted, &dst_sizes);
    let iceberg = std::mem::take(&mut sorted.iceberg);
    let ctx = Ctx {
        src,
        dst,
        chain: &chain,
        dst_sizes,
        progress: progress.clone(),
        r,
    };
    let (handled, dst_head) = run_stages(&ctx, sorted.pointers, sorted.verbatim).await?;
    let stopped = ctx.stopping();
    if !stopped {
        summary.conflicts.extend(seals_beyond_source(&ctx).await?);
    }
    if !stopped && summary.conflicts.is_empty() {
        summary.iceberg = own_iceberg(dst, &iceberg, dst_head.as_ref()).await?;
    }
    summary.stopped = stopped;
    summary.destination_head = dst_head;
    Ok(finish(r, summary, handled))
}

/// The destination's own Iceberg metadata up to the newest seal it holds (`dst_head`)
/// that the source has a metadata file of (`source`): the same seals, at the destination's
/// location. A metadata file there that is not this location's (a copy of the source's)
/// stops it with a conflict naming the key.
async fn own_iceberg(
    dst: &dyn AtomicPublisher,
    source: &BTreeSet<u64>,
    dst_head: Option<&Head>,
) -> Result<Option<IcebergWritten>> {
    let Some(&seq) = dst_head.and_then(|h| source.range(..=h.seq).next_back()) else {
        return Ok(None);
    };
    Ok(complete_table(dst, seq).await?.map(|o| IcebergWritten {
        seq,
        metadata_location: o.metadata_location,
        seals_written: o.seals_written,
    }))
}

/// Sort the source's listing: symlinks, foreign and unknown keys, and parts no pointer
/// names go to `summary.skipped`; the rest by what the pass does with them.
fn sort_listing(r: &Replicator, listing: Vec<ObjectInfo>, summary: &mut Summary) -> Sorted {
    let mut s = Sorted::default();
    for o in listing {
        if let Some(target) = &o.link {
            // Never followed, never copied: `lineage verify` names it.
            summary.skipped.push(NotCopied {
                reason: format!(
                    "a symlink to {}, never followed (`lineage verify` names it)",
                    crate::schema::rules::quote(target)
                ),
                key: o.key,
            });
            continue;
        }
        let kind = kind_of(&o.key);
        match kind {
            Kind::Part => s.parts.push((o.key, o.size)),
            Kind::Pointer { run_id, commit_id } => {
                s.pointer_keys.insert(o.key.clone());
                if !r.settled.contains_key(&o.key) {
                    s.pointers.push((o.key, run_id, commit_id));
                }
            }
            Kind::Foreign => summary.skipped.push(NotCopied {
                key: o.key,
                reason: "not written by lineage-store".into(),
            }),
            Kind::Unknown => summary.skipped.push(NotCopied {
                key: o.key,
                reason: "under `_lineage/` but not an object lineage-store writes there (`lineage verify` names it)".into(),
            }),
            // Never copied: the destination's own is written after the seals.
            Kind::Iceberg => {
                if let KeyKind::Iceberg(IcebergKey::Metadata(n)) = keys::classify(&o.key) {
                    s.iceberg.insert(n);
                }
            }
            // Seals come from the chain walk; temps are publishes in flight.
            Kind::Seal(_) | Kind::Temp => {}
            _ => {
                if let Some(stage) = kind.stage() {
                    if !r.settled.contains_key(&o.key) {
                        s.verbatim.entry(stage).or_default().push((o.key, kind));
                    }
                }
            }
        }
    }
    skip_unnamed_parts(&s, summary);
    s
}

/// Parts no pointer names (a commit in flight, or an orphan) go to `summary.skipped`:
/// copied once named.
fn skip_unnamed_parts(s: &Sorted, summary: &mut Summary) {
    for (key, _) in &s.parts {
        if let KeyKind::Part {
            run_id, commit_id, ..
        } = keys::classify(key)
        {
            if !s
                .pointer_keys
                .contains(&keys::pointer_key(&run_id, &commit_id))
            {
                summary.skipped.push(NotCopied {
                    key: key.clone(),
                    reason: "no pointer names it yet: a commit in flight (copied once its pointer lands), or an orphan (`lineage repair` at the source adopts it)".into(),
                });
            }
        }
    }
}

/// Store the pass's totals: objects to handle, and part bytes the destination lacks.
fn set_totals(
    progress: &Progress,
    r: &Replicator,
    chain: &Chain,
    s: &Sorted,
    dst_sizes: &HashMap<String, u64>,
) {
    let unsettled_seals = chain
        .seals
        .iter()
        .filter(|s| !r.settled.contains_key(&s.key))
        .count();
    progress.objects_total.store(
        (s.pointers.len() * 2 + s.verbatim.values().map(Vec::len).sum::<usize>() + unsettled_seals)
            as u64,
        Ordering::Relaxed,
    );
    let missing_bytes: u64 = s
        .parts
        .iter()
        .filter(|(k, _)| !dst_sizes.contains_key(k))
        .map(|(_, s)| s)
        .sum();
    progress.bytes_total.store(missing_bytes, Ordering::Relaxed);
}

/// Stage by stage; every unit (a commit, a seal, an object) starts only while no stop
/// is requested, and one that started finishes. Returns what was handled and the
/// destination's head (see [`copy_seals`]).
async fn run_stages(
    ctx: &Ctx<'_>,
    mut pointers: Vec<(String, String, String)>,
    mut verbatim: BTreeMap<Stage, Vec<(String, Kind)>>,
) -> Result<(Vec<Handled>, Option<Head>)> {
    let conc = ctx.r.opts.concurrency.max(1);
    let mut handled: Vec<Handled> = Vec::new();
    let mut dst_head = None;
    for stage in Stage::ALL {
        if ctx.stopping() {
            break;
        }
        match stage {
            Stage::Commits => {
                handled.extend(copy_commits(ctx, std::mem::take(&mut pointers), conc).await?)
            }
            Stage::Seals => {
                let (seals, head) = copy_seals(ctx, &handled).await?;
                handled.extend(seals);
                dst_head = head;
            }
            _ => {
                let objects = verbatim.remove(&stage).unwrap_or_default();
                let conc = if stage.sequential() { 1 } else { conc };
                let more = copy_verbatim(ctx, objects, &handled, dst_head.as_ref(), conc).await?;
                handled.extend(more);
            }
        }
    }
    Ok((handled, dst_head))
}

/// One stage of verbatim objects: history objects only once what they name is at the
/// destination (the rest are held back, skipped), then copied `conc` at a time.
async fn copy_verbatim(
    ctx: &Ctx<'_>,
    mut objects: Vec<(String, Kind)>,
    handled: &[Handled],
    dst_head: Option<&Head>,
    conc: usize,
) -> Result<Vec<Handled>> {
    let settled_here: HashSet<&str> = handled
        .iter()
        .filter(|h| h.settled())
        .map(|h| h.key.as_str())
        .collect();
    let holds = |k: &str| {
        settled_here.contains(k) || ctx.r.settled.contains_key(k) || ctx.dst_sizes.contains_key(k)
    };
    let tree = dst_head.and_then(|h: &Head| {
        ctx.chain
            .seals
            .iter()
            .find(|s| s.key_seq == h.seq)
            .and_then(|s| s.seal.as_ref().ok())
            .map(|s| (h.seq, s.tree_size))
    });
    let held = hold_back(&mut objects, &AtDestination::new(&holds, tree));
    let mut out: Vec<Handled> = held
        .into_iter()
        .map(|(key, kind, why)| Handled::new(key, kind, Done::Skipped(why), None))
        .collect();
    out.extend(run_smalls(ctx, objects, conc).await?);
    Ok(out)
}

/// Remember what settled (all but parts), count everything into `summary`, sort its lists.
fn finish(r: &mut Replicator, mut summary: Summary, handled: Vec<Handled>) -> Summary {
    for h in handled {
        if h.settled() && !matches!(h.kind, Kind::Part) {
            if let Some(d) = &h.digest {
                r.settled.insert(h.key.clone(), d.clone());
            }
        }
        tally(&mut summary, h);
    }
    summary.skipped.sort_by(|a, b| a.key.cmp(&b.key));
    summary.refused.sort_by(|a, b| a.key.cmp(&b.key));
    summary.conflicts.sort_by(|a, b| a.key.cmp(&b.key));
    summary
}

/// Commits, `conc` at a time: each its part, then its pointer.
async fn copy_commits(
    ctx: &Ctx<'_>,
    pointers: Vec<(String, String, String)>,
    conc: usize,
) -> Result<Vec<Handled>> {
    let commits: Vec<Result<Vec<Handled>>> = futures::stream::iter(pointers)
        .map(|(key, run_id, commit_id)| {
            let ctx = &ctx;
            async move {
                if ctx.stopping() {
                    return Ok(Vec::new());
                }
                let out = ctx.commit(key, run_id, commit_id).await?;
                ctx.progress.objects_done.fetch_add(2, Ordering::Relaxed);
                Ok(out)
            }
        })
        .buffer_unordered(conc)
        .collect()
        .await;
    let mut out = Vec::new();
    for c in commits {
        out.extend(c?);
    }
    Ok(out)
}

/// Objects copied verbatim (claims, kinds this version does not know), `conc` at a time
/// (in key order when `conc` is 1).
async fn run_smalls(
    ctx: &Ctx<'_>,
    objects: Vec<(String, Kind)>,
    conc: usize,
) -> Result<Vec<Handled>> {
    let mut objects = objects;
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    let results: Vec<Result<Option<Handled>>> = futures::stream::iter(objects)
        .map(|(key, kind)| async move {
            if ctx.stopping() {
                return Ok(None);
            }
            let h = ctx.small(key, kind).await?;
            ctx.progress.objects_done.fetch_add(1, Ordering::Relaxed);
            Ok(Some(h))
        })
        .buffer_unordered(conc)
        .collect()
        .await;
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// Count one handled object into the summary.
fn tally(s: &mut Summary, h: Handled) {
    match h.done {
        Done::Copied(bytes) => {
            let c = &mut s.copied;
            c.objects += 1;
            c.bytes += bytes;
            match h.kind {
                Kind::Identity => c.identity += 1,
                Kind::Part => c.parts += 1,
                Kind::Pointer { .. } => c.pointers += 1,
                Kind::Claim => c.claims += 1,
                Kind::Seal(_) => c.seals += 1,
                Kind::Index
                | Kind::Compacted
                | Kind::SealAux
                | Kind::Head
                | Kind::Delta(_)
                | Kind::DeltaCheckpoint(_)
                | Kind::Witness
                | Kind::Unknown
                | Kind::Temp
                | Kind::Iceberg
                | Kind::Foreign => c.other += 1,
            }
        }
        Done::Present => s.already_present += 1,
        Done::Refused(reason) => s.refused.push(NotCopied { key: h.key, reason }),
        Done::Skipped(reason) => s.skipped.push(NotCopied { key: h.key, reason }),
        Done::Conflict {
            source,
            destination,
        } => s.conflicts.push(Conflict {
            key: h.key,
            source_sha256: source,
            destination_sha256: destination,
        }),
    }
}

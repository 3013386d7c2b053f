//! One replication pass (see [`super`] for the order and the checks).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use crate::audit::chain::{self, Chain};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::format::claim::{Claim, CLAIM_FORMAT};
use crate::format::keys::seal_key;
use crate::format::keys::{self, KeyKind};
use crate::format::pointer::check_pointer;
use crate::format::pointer::Pointer;
use crate::parts::read::stream_sha256;
use crate::publish::checked::{create_or_read_back, Landed, Published};
use crate::publish::AtomicPublisher;
use crate::replicate::hold::{hold_back, AtDestination};
use crate::replicate::kinds::{kind_of, Kind, Stage};
use crate::replicate::types::{Conflict, Head, NotCopied, Progress, ReplicateOptions, Summary};

/// Copies one store into another, pass after pass. Between passes it remembers which
/// keys are settled (present at both sides with the same bytes), so a later pass reads
/// only what is new (every pass still lists both stores and walks the source chain).
#[derive(Debug)]
pub struct Replicator {
    src: Arc<dyn AtomicPublisher>,
    dst: Arc<dyn AtomicPublisher>,
    opts: ReplicateOptions,
    /// Settled key → sha256 of its bytes (pointers' digests are needed for seals).
    settled: HashMap<String, String>,
    /// Objects created by this replicator so far (for the hook).
    created: Arc<AtomicU64>,
}

impl Replicator {
    /// A replicator from `src` to `dst`.
    pub fn new(
        src: Arc<dyn AtomicPublisher>,
        dst: Arc<dyn AtomicPublisher>,
        opts: ReplicateOptions,
    ) -> Self {
        Self {
            src,
            dst,
            opts,
            settled: HashMap::new(),
            created: Arc::new(AtomicU64::new(0)),
        }
    }

    /// One pass: copy everything the destination lacks (see [`crate::replicate`]).
    pub async fn pass(&mut self) -> Result<Summary> {
        run(self).await
    }
}

/// What happened to one object.
#[derive(Debug)]
enum Done {
    /// Created at the destination, with this many bytes.
    Copied(u64),
    /// Already at the destination with the same bytes.
    Present,
    /// Not copied: the source object, or one it names, failed a check.
    Refused(String),
    /// Not copied, not a problem.
    Skipped(String),
    /// The destination holds other bytes.
    Conflict {
        source: Option<String>,
        destination: String,
    },
}

/// One object handled by the pass.
#[derive(Debug)]
struct Handled {
    pub(super) key: String,
    pub(super) kind: Kind,
    done: Done,
    /// sha256 of the bytes now at both sides (for objects that are settled).
    digest: Option<String>,
}

impl Handled {
    fn new(key: impl Into<String>, kind: Kind, done: Done, digest: Option<String>) -> Self {
        Self {
            key: key.into(),
            kind,
            done,
            digest,
        }
    }

    pub(super) fn settled(&self) -> bool {
        matches!(self.done, Done::Copied(_) | Done::Present)
    }
}

/// What every unit of a pass reads.
struct Ctx<'a> {
    src: &'a dyn AtomicPublisher,
    dst: &'a dyn AtomicPublisher,
    pub(super) chain: &'a Chain,
    /// The destination's listing at the start of the pass: key → size.
    pub(super) dst_sizes: HashMap<String, u64>,
    progress: Arc<Progress>,
    pub(super) r: &'a Replicator,
}

impl Ctx<'_> {
    fn stopping(&self) -> bool {
        self.r.opts.stop.is_requested()
    }

    /// Count a created object and run the hook.
    async fn created(&self, key: &str) {
        let n = self.r.created.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(hook) = &self.r.opts.on_published {
            hook(n, key.to_string()).await;
        }
    }

    /// Create `key` at the destination (read back after an unclear answer).
    async fn publish(&self, key: &str, bytes: Bytes, want: &str) -> Result<Done> {
        let len = bytes.len() as u64;
        let landed = create_or_read_back(self.dst, key, bytes, |have| {
            let got = sha256_hex(have);
            if got == want {
                return Ok(());
            }
            Err(Mismatch {
                why: format!("destination sha256 {got}, source sha256 {want}"),
                destination: Some(got),
            })
        })
        .await?;
        match landed {
            Landed::Ours(kept) if kept.published == Published::Created => {
                self.created(key).await;
                Ok(Done::Copied(len))
            }
            Landed::Ours(_) => Ok(Done::Present),
            Landed::Theirs(Mismatch {
                destination: Some(t),
                ..
            }) => Ok(Done::Conflict {
                source: Some(want.to_string()),
                destination: t,
            }),
            Landed::Theirs(m) => Err(Error::Conflict {
                key: key.to_string(),
                message: m.why,
            }),
        }
    }

    /// A small object (pointer, claim, seal, other): compared when the destination lists
    /// it, published otherwise.
    async fn put_small(&self, key: &str, bytes: Bytes, digest: &str) -> Result<Done> {
        if self.dst_sizes.contains_key(key) {
            if let Some(have) = self.dst.get(key).await? {
                let theirs = sha256_hex(&have);
                return Ok(if theirs == digest {
                    Done::Present
                } else {
                    Done::Conflict {
                        source: Some(digest.to_string()),
                        destination: theirs,
                    }
                });
            }
        }
        self.publish(key, bytes, digest).await
    }

    /// Make the pointer's part present at the destination: hashed when it is there
    /// already (unless `trust_size`: its pointer is there too, identical), else read from
    /// the source, checked against the pointer, and published.
    async fn ensure_part(&self, ptr_key: &str, p: &Pointer, trust_size: bool) -> Result<Done> {
        let key = p.part_path.as_str();
        if let Some(&size) = self.dst_sizes.get(key) {
            if trust_size && size == p.size_bytes {
                return Ok(Done::Present);
            }
            let theirs = stream_sha256(self.dst, key, size, &|_| {}).await?;
            return Ok(if theirs == p.sha256 && size == p.size_bytes {
                Done::Present
            } else {
                Done::Conflict {
                    source: Some(p.sha256.clone()),
                    destination: theirs,
                }
            });
        }
        // One create-only PUT per part, so the part is read whole (one per worker).
        let Some(bytes) = self.src.get(key).await? else {
            return Ok(Done::Refused(format!(
                "missing at the source, though its pointer {ptr_key} records it"
            )));
        };
        if bytes.len() as u64 != p.size_bytes {
            return Ok(Done::Refused(format!(
                "{} bytes at the source, but its pointer {ptr_key} records {}: corrupt at the source, not copied",
                bytes.len(),
                p.size_bytes
            )));
        }
        let got = sha256_hex(&bytes);
        if got != p.sha256 {
            return Ok(Done::Refused(format!(
                "sha256 {got} at the source, but its pointer {ptr_key} records {}: corrupt at the source, not copied",
                p.sha256
            )));
        }
        let done = self.publish(key, bytes, &p.sha256).await?;
        if let Done::Copied(n) = done {
            self.progress.bytes_done.fetch_add(n, Ordering::Relaxed);
        }
        Ok(done)
    }

    /// One commit: its pointer checked, then its part, then the pointer.
    async fn commit(&self, key: String, run_id: String, commit_id: String) -> Result<Vec<Handled>> {
        let kind = Kind::Pointer {
            run_id: run_id.clone(),
            commit_id: commit_id.clone(),
        };
        let Some(bytes) = self.src.get(&key).await? else {
            let why = "removed from the source since it was listed".to_string();
            return Ok(vec![Handled::new(key, kind, Done::Skipped(why), None)]);
        };
        let digest = sha256_hex(&bytes);
        if let Some(&i) = self.chain.by_key.get(&key) {
            let leaf = &self.chain.leaves[i];
            if leaf.digest != digest {
                let why = format!(
                    "sha256 {digest} at the source, but seal {} sealed {}: edited after it was sealed, not copied (nor its part)",
                    leaf.seq, leaf.digest
                );
                return Ok(vec![Handled::new(key, kind, Done::Refused(why), None)]);
            }
        }
        let p = match check_pointer(&key, &bytes, &run_id, &commit_id) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("{e}; not copied (nor its part)");
                return Ok(vec![Handled::new(key, kind, Done::Refused(why), None)]);
            }
        };
        let at_dst = if self.dst_sizes.contains_key(&key) {
            self.dst.get(&key).await?
        } else {
            None
        };
        if let Some(have) = &at_dst {
            let theirs = sha256_hex(have);
            if theirs != digest {
                let done = Done::Conflict {
                    source: Some(digest),
                    destination: theirs,
                };
                return Ok(vec![Handled::new(key, kind, done, None)]);
            }
        }
        let part = self.ensure_part(&key, &p, at_dst.is_some()).await?;
        let part_ok = matches!(part, Done::Copied(_) | Done::Present);
        let mut out = vec![Handled::new(
            p.part_path.clone(),
            Kind::Part,
            part,
            Some(p.sha256.clone()),
        )];
        let pointer = if !part_ok {
            Done::Refused(format!("its part {} was not copied", p.part_path))
        } else if at_dst.is_some() {
            Done::Present
        } else {
            self.put_small(&key, bytes, &digest).await?
        };
        out.push(Handled::new(key, kind, pointer, Some(digest)));
        Ok(out)
    }

    /// One claim, or one object of a kind this version does not know.
    async fn small(&self, key: String, kind: Kind) -> Result<Handled> {
        let Some(bytes) = self.src.get(&key).await? else {
            let why = "removed from the source since it was listed".to_string();
            return Ok(Handled::new(key, kind, Done::Skipped(why), None));
        };
        if kind == Kind::Claim {
            if let Some(why) = claim_problem(&key, &bytes) {
                return Ok(Handled::new(key, kind, Done::Refused(why), None));
            }
        }
        let digest = sha256_hex(&bytes);
        let done = self.put_small(&key, bytes, &digest).await?;
        Ok(Handled::new(key, kind, done, Some(digest)))
    }
}

/// Why a commit-key claim is not one lineage-store wrote under this key, if it is not.
fn claim_problem(key: &str, bytes: &[u8]) -> Option<String> {
    let claim: Claim = match serde_json::from_slice(bytes) {
        Ok(c) => c,
        Err(e) => return Some(format!("not a commit-key claim: {e}")),
    };
    if claim.format != CLAIM_FORMAT {
        return Some(format!("unknown claim format {:?}", claim.format));
    }
    let expect = keys::commit_key_claim_key(&claim.commit_key);
    (expect != key).then(|| {
        format!(
            "claims commit key {:?}, which belongs at {expect}",
            claim.commit_key
        )
    })
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

    let mut parts: Vec<(String, u64)> = Vec::new();
    let mut pointers = Vec::new();
    // Objects copied verbatim (after a content check where their kind has one), by stage.
    let mut verbatim: BTreeMap<Stage, Vec<(String, Kind)>> = BTreeMap::new();
    let mut pointer_keys = HashSet::new();
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
            Kind::Part => parts.push((o.key, o.size)),
            Kind::Pointer { run_id, commit_id } => {
                pointer_keys.insert(o.key.clone());
                if !r.settled.contains_key(&o.key) {
                    pointers.push((o.key, run_id, commit_id));
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
            // Seals come from the chain walk; temps are publishes in flight.
            Kind::Seal(_) | Kind::Temp => {}
            _ => {
                if let Some(stage) = kind.stage() {
                    if !r.settled.contains_key(&o.key) {
                        verbatim.entry(stage).or_default().push((o.key, kind));
                    }
                }
            }
        }
    }
    // Parts no pointer names: a commit in flight, or an orphan. Copied once named.
    for (key, _) in &parts {
        if let KeyKind::Part {
            run_id, commit_id, ..
        } = keys::classify(key)
        {
            if !pointer_keys.contains(&keys::pointer_key(&run_id, &commit_id)) {
                summary.skipped.push(NotCopied {
                    key: key.clone(),
                    reason: "no pointer names it yet: a commit in flight (copied once its pointer lands), or an orphan (`lineage repair` at the source adopts it)".into(),
                });
            }
        }
    }
    let unsettled_seals = chain
        .seals
        .iter()
        .filter(|s| !r.settled.contains_key(&s.key))
        .count();
    progress.objects_total.store(
        (pointers.len() * 2 + verbatim.values().map(Vec::len).sum::<usize>() + unsettled_seals)
            as u64,
        Ordering::Relaxed,
    );
    let missing_bytes: u64 = parts
        .iter()
        .filter(|(k, _)| !dst_sizes.contains_key(k))
        .map(|(_, s)| s)
        .sum();
    progress.bytes_total.store(missing_bytes, Ordering::Relaxed);

    let ctx = Ctx {
        src,
        dst,
        chain: &chain,
        dst_sizes,
        progress: progress.clone(),
        r,
    };
    let conc = r.opts.concurrency.max(1);
    let mut handled: Vec<Handled> = Vec::new();
    let mut dst_head = None;
    // Stage by stage; every unit (a commit, a seal, an object) starts only while no stop
    // is requested, and one that started finishes.
    for stage in Stage::ALL {
        if ctx.stopping() {
            break;
        }
        match stage {
            Stage::Commits => {
                handled.extend(copy_commits(&ctx, std::mem::take(&mut pointers), conc).await?)
            }
            Stage::Seals => {
                let (seals, head) = copy_seals(&ctx, &handled).await?;
                handled.extend(seals);
                dst_head = head;
            }
            _ => {
                let mut objects = verbatim.remove(&stage).unwrap_or_default();
                // History objects only once what they name is at the destination.
                let settled_here: HashSet<&str> = handled
                    .iter()
                    .filter(|h| h.settled())
                    .map(|h| h.key.as_str())
                    .collect();
                let holds = |k: &str| {
                    settled_here.contains(k)
                        || ctx.r.settled.contains_key(k)
                        || ctx.dst_sizes.contains_key(k)
                };
                let tree = dst_head.as_ref().and_then(|h: &Head| {
                    ctx.chain
                        .seals
                        .iter()
                        .find(|s| s.key_seq == h.seq)
                        .and_then(|s| s.seal.as_ref().ok())
                        .map(|s| (h.seq, s.tree_size))
                });
                let held = hold_back(&mut objects, &AtDestination::new(&holds, tree));
                handled.extend(
                    held.into_iter()
                        .map(|(key, kind, why)| Handled::new(key, kind, Done::Skipped(why), None)),
                );
                let conc = if stage.sequential() { 1 } else { conc };
                handled.extend(run_smalls(&ctx, objects, conc).await?);
            }
        }
    }
    let stopped = ctx.stopping();
    if !stopped {
        summary.conflicts.extend(seals_beyond_source(&ctx).await?);
    }

    summary.stopped = stopped;
    summary.destination_head = dst_head;
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
    Ok(summary)
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

/// Copy the source's seals in order. Returns what was handled and the newest seal the
/// destination now holds in agreement with the source.
async fn copy_seals(ctx: &Ctx<'_>, handled: &[Handled]) -> Result<(Vec<Handled>, Option<Head>)> {
    // Pointers at the destination with their digests: this pass's and earlier passes'.
    let mut at_dst: HashMap<&str, &str> = ctx
        .r
        .settled
        .iter()
        .map(|(k, d)| (k.as_str(), d.as_str()))
        .collect();
    for h in handled {
        if let (Kind::Pointer { .. }, true, Some(d)) = (&h.kind, h.settled(), &h.digest) {
            at_dst.insert(h.key.as_str(), d.as_str());
        }
    }
    let mut problems: HashMap<&str, String> = HashMap::new();
    for p in &ctx.chain.problems {
        problems
            .entry(p.key.as_str())
            .or_insert_with(|| format!("{}: {}", p.kind.name(), p.detail));
    }
    let mut out = Vec::new();
    let mut head = None;
    for (expected, s) in (1u64..).zip(&ctx.chain.seals) {
        if ctx.stopping() {
            return Ok((out, head));
        }
        let kind = Kind::Seal(s.key_seq);
        let this_head = Head {
            seq: s.key_seq,
            sha256: s.digest.clone(),
        };
        if s.key_seq != expected {
            let why = format!(
                "seal {expected} is missing at the source, so seals from {} on are not copied",
                s.key_seq
            );
            out.push(Handled::new(
                seal_key(expected),
                kind,
                Done::Refused(why),
                None,
            ));
            break;
        }
        if ctx.r.settled.get(&s.key) == Some(&s.digest) {
            head = Some(this_head);
            continue;
        }
        if let Some(why) = problems.get(s.key.as_str()) {
            let why =
                format!("fails the source's chain check ({why}); not copied, nor any later seal");
            out.push(Handled::new(&s.key, kind, Done::Refused(why), None));
            break;
        }
        let Ok(seal) = &s.seal else {
            let why = "unreadable at the source; not copied, nor any later seal".to_string();
            out.push(Handled::new(&s.key, kind, Done::Refused(why), None));
            break;
        };
        if !ctx.dst_sizes.contains_key(&s.key) {
            let uncovered = seal
                .entries
                .iter()
                .find(|e| at_dst.get(e.key.as_str()) != Some(&e.sha256.as_str()));
            if let Some(e) = uncovered {
                let why = format!(
                    "covers {}, which is not at the destination with the sealed sha256 {} (see above); not copied, nor any later seal",
                    e.key, e.sha256
                );
                out.push(Handled::new(&s.key, kind, Done::Refused(why), None));
                break;
            }
        }
        let done = ctx.put_small(&s.key, s.bytes.clone(), &s.digest).await?;
        ctx.progress.objects_done.fetch_add(1, Ordering::Relaxed);
        let ok = matches!(done, Done::Copied(_) | Done::Present);
        out.push(Handled::new(&s.key, kind, done, Some(s.digest.clone())));
        if !ok {
            break;
        }
        head = Some(this_head);
    }
    Ok((out, head))
}

/// Seals the destination holds beyond the source's newest: the source's newest seals were
/// removed, or something else sealed the destination. Either way the two disagree.
async fn seals_beyond_source(ctx: &Ctx<'_>) -> Result<Vec<Conflict>> {
    let newest = ctx.chain.seals.last().map_or(0, |s| s.key_seq);
    let mut out = Vec::new();
    for key in ctx.dst_sizes.keys() {
        if let KeyKind::Seal(n) = keys::classify(key) {
            if n > newest {
                if let Some(b) = crate::history::seal::get_bytes(ctx.dst, key).await? {
                    out.push(Conflict {
                        key: key.clone(),
                        source_sha256: None,
                        destination_sha256: sha256_hex(&b),
                    });
                }
            }
        }
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

/// Why a destination object is not the source's: the message, and the destination's
/// sha256 when it was read.
struct Mismatch {
    why: String,
    destination: Option<String>,
}

impl From<String> for Mismatch {
    fn from(why: String) -> Self {
        Mismatch {
            why,
            destination: None,
        }
    }
}

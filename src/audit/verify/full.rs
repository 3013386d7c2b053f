//! The full strategy: the whole store (or one shard of it), every object accounted for.
//!
//! - **list**: the seal chain first, then the listing (every pointer a seal names existed
//!   when the seal was written, so it is in a listing made afterwards unless it was
//!   removed; listing first would let a concurrent `seal` name pointers the listing never
//!   saw);
//! - **classify**: parts, pointers, temps (in flight or stale), foreign objects, history
//!   objects;
//! - **pointers**: every listed pointer and every sealed one, each sealed one against its
//!   seal;
//! - the history objects against the chain and the pointers ([`super::history`]);
//! - **check**: every pointer's part;
//! - parts no pointer names: in flight, orphans or malformed ([`super::flight`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::audit::chain::{self, Chain};
use crate::audit::findings::{Problem, ProblemKind, Report};
use crate::audit::verify::compaction;
use crate::audit::verify::delta;
use crate::audit::verify::delta_checkpoint;
use crate::audit::verify::flight::{self, Window};
use crate::audit::verify::history;
use crate::audit::verify::iceberg;
use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::pipeline::Strategy;
use crate::audit::verify::planted;
use crate::audit::verify::pointers::{ReadBack, SealedAs, Wanted};
use crate::audit::verify::shard::Scope;
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::IDENTITY_KEY;
use crate::format::pointer::Pointer;
use crate::history::identity::read_identity;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// The full strategy's state between the steps.
#[derive(Debug, Default)]
pub(crate) struct Full {
    chain: Chain,
    scope: Option<Scope>,
    listing: Vec<ObjectInfo>,
    /// Listed sizes by key.
    sizes: HashMap<String, u64>,
    /// Listed parts no pointer has named yet (indexes into `listing`).
    pointerless: BTreeMap<String, usize>,
    /// Listed history objects (indexes into `listing`).
    history: Vec<usize>,
    /// Whether the store's identity object was listed.
    identity: bool,
    /// Listed objects under `_delta_log/` (indexes into `listing`).
    delta: Vec<usize>,
    /// Listed compaction records and compacted parts (indexes into `listing`).
    compacted: Vec<usize>,
    /// Listed objects under `_iceberg/` (indexes into `listing`).
    iceberg: Vec<usize>,
    /// Sealed pointers as read (for the compaction checks).
    sealed: HashMap<String, Pointer>,
    /// The store's id, when its identity could be read (parts must name it).
    store_id: Option<String>,
}

impl Strategy for Full {
    async fn gather(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
    ) -> Result<Vec<Wanted>> {
        self.chain = chain::walk(store, Some(&opts.trust())).await?;
        self.scope = Scope::of(opts, &self.chain)?;
        report_chain(&self.chain, self.scope.as_ref(), opts, report);
        self.listing = match &self.scope {
            Some(s) => s.list(store).await?,
            None => store.list("").await?,
        };
        if self.listing.is_empty() && self.scope.is_none() {
            // Most likely a mistyped location: "clean, 0 commits" would mislead an auditor.
            return Err(Error::NotFound(format!(
                "{}: the store holds no objects (empty, or not where the URL points)",
                store.describe()
            )));
        }
        let mut wanted = self.classify(&window(opts), report);
        // Sealed pointers that were not listed: read, so that a missing one is named.
        let chain = &self.chain;
        let mut seen: BTreeSet<String> = wanted.iter().map(|w| w.key.clone()).collect();
        for leaf in &chain.leaves {
            let owned = self
                .scope
                .as_ref()
                .is_none_or(|s| s.owns_pointer(&leaf.key));
            if owned && seen.insert(leaf.key.clone()) {
                wanted.push(Wanted {
                    listed_size: None,
                    key: leaf.key.clone(),
                    sealed: sealed_as(chain, &leaf.key),
                });
            }
        }
        Ok(wanted)
    }

    async fn after_pointers(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
        read: ReadBack,
    ) -> Result<Vec<(String, Pointer)>> {
        report.commits = read.present.len() as u64;
        self.sealed = read
            .parsed
            .iter()
            .filter(|(k, _)| self.chain.by_key.contains_key(*k))
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        report.unsealed_commits = read
            .present
            .keys()
            .filter(|k| !self.chain.by_key.contains_key(*k))
            .count() as u64;
        let objects: Vec<&ObjectInfo> = self.history.iter().map(|&i| &self.listing[i]).collect();
        let cx = history::Context {
            chain: &self.chain,
            pointers: read.parsed.iter().map(|(k, p)| (k.as_str(), p)).collect(),
            pointer_keys: read.present.keys().map(String::as_str).collect(),
            now: opts.now,
            grace: opts.grace,
            scope: self.scope.as_ref(),
            tsa_roots: opts.tsa_roots.as_ref(),
        };
        let checked = history::check(store, &cx, &objects).await?;
        if self.identity {
            self.note_identity(store, report).await;
        }
        report.problems.extend(checked.problems);
        report.unfinished_seal = checked.unfinished_seal;
        report.seal_times = checked.seal_times;
        report.seal_times_checked = opts.tsa_roots.is_some();
        report.problems.extend(self.drop_accounted_parts(&read));
        Ok(read.parsed.into_iter().collect())
    }

    fn listed_size(&self, key: &str) -> Option<u64> {
        self.sizes.get(key).copied()
    }

    async fn after_parts(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
        store_ids: &BTreeMap<String, u64>,
    ) -> Result<()> {
        if self.scope.as_ref().is_none_or(Scope::first) {
            if let Some(p) = swapped_identity(self.store_id.as_deref(), store_ids) {
                report.push_problem(p);
            }
        }
        let parts: BTreeMap<&str, &ObjectInfo> = self
            .pointerless
            .iter()
            .map(|(k, &i)| (k.as_str(), &self.listing[i]))
            .collect();
        let (flying, problems): (_, Vec<Problem>) = flight::judge_pointerless_parts(
            store,
            &window(opts),
            parts,
            &self.listing,
            self.store_id.as_deref(),
        )
        .await;
        flying.into_iter().for_each(|f| report.fly(f));
        report.problems.extend(problems);
        // The Delta log: once, by the first shard (it is small: one version per seal).
        if self.scope.as_ref().is_none_or(Scope::first) {
            self.check_delta_log(store, opts, report).await?;
            let listed: Vec<&ObjectInfo> = self.iceberg.iter().map(|&i| &self.listing[i]).collect();
            report.problems.extend(
                iceberg::check(store, &self.chain, self.store_id.as_deref(), &listed).await?,
            );
        }
        Ok(())
    }
}

/// What the walked chain says into the report: its problems (once, by the first shard),
/// counts and head, and the expected head checked.
fn report_chain(chain: &Chain, scope: Option<&Scope>, opts: &VerifyOptions, report: &mut Report) {
    report.shard = scope.map(Scope::info);
    if scope.is_none_or(Scope::first) {
        report.problems.extend(chain.problems.iter().cloned());
    }
    report.seals = chain.seals.len() as u64;
    report.signed_seals = chain.signed;
    report.sealed_commits = chain.leaves.len() as u64;
    if let Some((seq, d)) = chain.head() {
        report.head_seq = Some(seq);
        report.head = Some(d.to_string());
        report.head_sealed_utc = chain
            .seals
            .last()
            .and_then(|s| s.seal.as_ref().ok())
            .map(|s| s.sealed_utc.clone());
    }
    if let Some(want) = &opts.expect_head {
        report.problems.extend(chain::check_head(chain, want));
        let want = want.trim().to_lowercase();
        report.expected_head_seq = chain
            .seals
            .iter()
            .find(|s| s.digest == want)
            .map(|s| s.key_seq);
    }
    // The problems of anchors that failed are reported above; here what each found.
    report.anchors = opts.anchors().judge_chain(chain).outcomes;
}

impl Full {
    /// Classify the listing: the pointers to read (returned), the parts, history, Delta and
    /// compaction objects kept for their steps, temps, symlinks and objects not ours
    /// reported.
    fn classify(&mut self, window: &Window, report: &mut Report) -> Vec<Wanted> {
        let mut wanted = Vec::new();
        for (i, o) in self.listing.iter().enumerate() {
            if let Some(target) = &o.link {
                // Never followed, never classified as what its name says.
                report.push(ProblemKind::Symlink, &o.key, flight::symlink_detail(target));
                continue;
            }
            self.sizes.insert(o.key.clone(), o.size);
            match keys::classify(&o.key) {
                KeyKind::Part { .. } => {
                    self.pointerless.insert(o.key.clone(), i);
                }
                KeyKind::Pointer { .. } => wanted.push(Wanted {
                    sealed: sealed_as(&self.chain, &o.key),
                    listed_size: Some(o.size),
                    key: o.key.clone(),
                }),
                KeyKind::Temp => judge_temp(o, window, report),
                KeyKind::Foreign => report.push_problem(
                    planted::foreign_part(&o.key, o.size).unwrap_or_else(|| {
                        Problem::new(
                            ProblemKind::ForeignObject,
                            &o.key,
                            "not written by lineage-store",
                        )
                    }),
                ),
                KeyKind::Unknown => report.push(
                    ProblemKind::UnknownLineageObject,
                    &o.key,
                    format!(
                        "{} bytes under `_lineage/`, not an object lineage-store writes there",
                        o.size
                    ),
                ),
                KeyKind::History(_) => self.history.push(i),
                KeyKind::Identity => self.identity = true,
                KeyKind::DeltaVersion(_) | KeyKind::DeltaCheckpoint(_) | KeyKind::DeltaOther => {
                    self.delta.push(i)
                }
                KeyKind::CompactionRecord { .. } | KeyKind::CompactedPart { .. } => {
                    self.compacted.push(i)
                }
                KeyKind::Iceberg(_) => self.iceberg.push(i),
                KeyKind::Seal(_) | KeyKind::Claim | KeyKind::Witness => {}
            }
        }
        wanted
    }

    /// The store's id from its identity object; one that cannot be read is reported (once,
    /// by the first shard).
    async fn note_identity(&mut self, store: &dyn AtomicPublisher, report: &mut Report) {
        match read_identity(store).await {
            Ok(id) => self.store_id = id.map(|i| i.store_id),
            Err(e) if self.scope.as_ref().is_none_or(Scope::first) => {
                report.push(ProblemKind::BadIdentity, IDENTITY_KEY, e.to_string())
            }
            Err(_) => {}
        }
    }

    /// Drop from the pointerless parts those a pointer or a record accounts for; the parts
    /// of a commit that its pointer does not name are returned as problems.
    fn drop_accounted_parts(&mut self, read: &ReadBack) -> Vec<Problem> {
        // The parts of each commit, by its pointer key.
        let mut by_commit: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for k in self.pointerless.keys() {
            if let KeyKind::Part {
                run_id, commit_id, ..
            } = keys::classify(k)
            {
                by_commit
                    .entry(keys::pointer_key(&run_id, &commit_id))
                    .or_default()
                    .push(k.clone());
            }
        }
        // A commit's pointer was read: it names its part, and no other file under its
        // commit's part name is accounted for.
        let mut problems = Vec::new();
        for (pk, listed) in &by_commit {
            if let Some(p) = read.parsed.get(pk) {
                problems.extend(planted::beside(
                    pk,
                    &p.part_path,
                    listed.iter().map(String::as_str),
                ));
                for k in listed {
                    self.pointerless.remove(k);
                }
            }
        }
        // Nor is a part pointerless when a seal, an index entry or a leaf locator records
        // its pointer, or its pointer is there but corrupt: that commit was complete, its
        // pointer is gone or corrupt (reported as such), and the part is neither in
        // flight nor an orphan to adopt; but of several such parts of one commit, at most
        // one is its part.
        let recorded: BTreeSet<String> = self
            .history
            .iter()
            .filter_map(|&i| match keys::classify(&self.listing[i].key) {
                KeyKind::History(h) => h.pointer_key(),
                _ => None,
            })
            .collect();
        for (pk, listed) in &by_commit {
            let accounted = self.chain.by_key.contains_key(pk)
                || recorded.contains(pk)
                || read.corrupt.contains(pk);
            if accounted && !read.parsed.contains_key(pk) {
                let names: Vec<&str> = listed.iter().map(String::as_str).collect();
                problems.extend(planted::several(pk, &names));
                for k in listed {
                    self.pointerless.remove(k);
                }
            }
        }
        problems
    }

    /// The Delta log's checkpoints and versions, then the compactions.
    async fn check_delta_log(
        &self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
    ) -> Result<()> {
        let mut versions = BTreeMap::new();
        let mut checkpoints = BTreeMap::new();
        let mut others = Vec::new();
        for &i in &self.delta {
            let o = &self.listing[i];
            match keys::classify(&o.key) {
                KeyKind::DeltaVersion(v) => {
                    versions.insert(v, o);
                }
                KeyKind::DeltaCheckpoint(v) => {
                    checkpoints.insert(v, o);
                }
                _ => others.push(o),
            }
        }
        report
            .problems
            .extend(delta_checkpoint::check(store, &checkpoints).await?);
        let cx = delta::Context {
            chain: &self.chain,
            versions,
            others,
            bad_parts: report.problems.iter().map(|p| p.key.clone()).collect(),
        };
        // Versions with a seal only: one past the head has none ("no seal N", named by the
        // Delta check without reading it), and is not read for the compaction replay either.
        let head = self.chain.head().map_or(0, |(n, _)| n);
        let version_keys: Vec<&str> = cx
            .versions
            .range(..=head)
            .map(|(_, o)| o.key.as_str())
            .collect();
        let found = delta::check(store, &cx).await?;
        report.problems.extend(found.problems);
        report.delta_version = found.newest;
        let cx = compaction::Context {
            chain: &self.chain,
            sealed: &self.sealed,
            listed: self
                .compacted
                .iter()
                .map(|&i| self.listing[i].key.as_str())
                .collect(),
            versions: version_keys,
            all_pointers: self.scope.is_none()
                && !self.chain.broken
                && self.sealed.len() == self.chain.by_key.len(),
            window: window(opts),
            from_seal: 0,
        };
        let found = compaction::check(store, &cx).await?;
        report.compacted_parts_ok = found.parts_ok;
        report.problems.extend(found.problems);
        found.flying.into_iter().for_each(|f| report.fly(f));
        Ok(())
    }
}

/// The identity names store `id`, but no part checked names it (`store_ids`: the ids
/// their footers name): `_lineage/store.json` is another store's.
fn swapped_identity(id: Option<&str>, store_ids: &BTreeMap<String, u64>) -> Option<Problem> {
    let id = id?;
    if store_ids.is_empty() || store_ids.contains_key(id) {
        return None;
    }
    let named: Vec<String> = store_ids
        .iter()
        .take(3)
        .map(|(s, n)| format!("{s} ({n} parts)"))
        .collect();
    Some(Problem::new(
        ProblemKind::BadIdentity,
        IDENTITY_KEY,
        format!(
            "names store {id}, but no part checked names it: their footers name {}; the identity was swapped for another store's (the Delta table id and new parts derive from it)",
            named.join(", ")
        ),
    ))
}

/// A temp: in flight, or stale (reported).
fn judge_temp(o: &ObjectInfo, window: &Window, report: &mut Report) {
    match flight::judge_temp(&o.key, window) {
        Ok(f) => report.fly(f),
        Err(why) => report.push(
            ProblemKind::StaleTemp,
            &o.key,
            format!(
                "temp not in flight: {why} ({} bytes, modified {}); `lineage sweep` removes it",
                o.size,
                o.modified
                    .map_or("at an unknown time".into(), |t| t.to_rfc3339())
            ),
        ),
    }
}

fn window(opts: &VerifyOptions) -> Window {
    Window {
        now: opts.now,
        grace: opts.grace,
    }
}

/// What the chain records of a pointer key (its first sealing).
fn sealed_as(chain: &Chain, key: &str) -> Option<SealedAs> {
    chain.by_key.get(key).map(|&i| SealedAs {
        seq: chain.leaves[i].seq,
        digest: chain.leaves[i].digest.clone(),
        adopted: chain.leaves[i].adopted,
    })
}

//! Splitting a full `verify` across machines: `verify --shard i/n` checks one n-th of the
//! store, and `verify merge` combines the n JSON reports into one.
//!
//! A full verification is O(n) (every part is read), so a huge archive is split; and so
//! that each shard also lists only its share, the split is by key ranges, area by area:
//!
//! - **runs** (data parts `run_id=<r>/…` and pointers `_lineage/commits/run_id=<r>/…`):
//!   cut at the same run boundaries in both areas, so a commit's part and pointer (and any
//!   orphan of the run) are checked by one shard; the boundaries are quantiles of the
//!   sealed commits' runs, so each shard gets about as many commits;
//! - **index** (`_lineage/index/`): cut at the commit times of the same quantiles;
//! - **locators** (`_lineage/leaves/<hh>/`): cut into equal bucket ranges;
//! - everything else (seals, head markers, tiles, commit-key claims, anything foreign) and
//!   the seal chain's own problems: shard 0.
//!
//! Every shard walks the whole seal chain (about 1 % of the work of a full verify): it
//! needs every sealed digest of its runs, and the boundaries are computed from it. The
//! boundaries come from the seals up to `plan_seal` (default: the newest seal when the
//! shard starts), and each report carries the plan's fingerprint: `verify merge` refuses
//! reports of different plans, which is what happens when a seal lands between the start
//! of two shards without `--plan-seal`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::audit::chain::Chain;
use crate::audit::findings::Merged;
use crate::audit::findings::ShardInfo;
use crate::audit::findings::{Problem, Report};
use crate::audit::verify::options::ShardSpec;
use crate::audit::verify::options::VerifyOptions;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::publish::{list_pages, AtomicPublisher, ObjectInfo};

/// Where the shards' ranges are cut (each list holds n+1 bounds, the first and the last
/// being the ends of the area).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// How many shards.
    pub count: u32,
    /// The seal whose commits the boundaries were computed from.
    pub plan_seal: Option<u64>,
    /// Bounds over `run_id=<r>/` (the same in the data and the pointer area).
    pub runs: Vec<String>,
    /// Bounds over index keys.
    pub index: Vec<String>,
    /// Bounds over locator buckets (0 to 256).
    pub buckets: Vec<u32>,
}

const RUNS_AREA: (&str, &str) = ("run_id=", "run_id>");
const POINTERS_AREA: (&str, &str) = ("_lineage/commits/run_id=", "_lineage/commits/run_id>");
const INDEX_AREA: (&str, &str) = ("_lineage/index/", "_lineage/index0");
const LEAVES_AREA: (&str, &str) = ("_lineage/leaves/", "_lineage/leaves0");

impl Plan {
    /// Cut `count` shards from the sealed commits of the chain up to seal `plan_seal`.
    pub fn compute(chain: &Chain, count: u32, plan_seal: Option<u64>) -> Result<Self> {
        let upto = match plan_seal {
            Some(n) if !chain.seals.iter().any(|s| s.key_seq == n) => {
                return Err(Error::invalid(
                    Param::PlanSeal,
                    text![format!("{n}: the store has no seal {n}")],
                ))
            }
            Some(n) => n,
            None => chain.head().map_or(0, |(n, _)| n),
        };
        let runs = sealed_runs(chain, upto);
        let (ends, total) = seal_ends(chain, upto);
        let n = count as usize;
        let mut plan = Self {
            count,
            plan_seal: plan_seal.or(chain.head().map(|(n, _)| n)),
            runs: vec![RUNS_AREA.0.to_string()],
            index: vec![INDEX_AREA.0.to_string()],
            buckets: vec![0],
        };
        for i in 1..n {
            let run = runs
                .get(runs.len() * i / n)
                .cloned()
                .unwrap_or_else(|| RUNS_AREA.1.to_string());
            plan.runs.push(run);
            let pos = total * i as u64 / n as u64;
            let t = ends
                .iter()
                .find(|(end, _)| *end > pos)
                .map_or(INDEX_AREA.1.to_string(), |(_, b)| b.clone());
            plan.index.push(t);
            plan.buckets.push(256 * i as u32 / count);
        }
        plan.runs.push(RUNS_AREA.1.to_string());
        plan.index.push(INDEX_AREA.1.to_string());
        plan.buckets.push(256);
        // Quantiles are monotone already; keep them so if times went backwards.
        plan.index[1..n].sort();
        Ok(plan)
    }

    /// A short fingerprint: shards of one verification must share it.
    pub fn fingerprint(&self) -> String {
        sha256_hex(&serde_json::to_vec(self).unwrap_or_default())[..16].to_string()
    }
}

/// One shard's view: its plan and which ranges are its own.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The plan.
    pub plan: Plan,
    /// This shard.
    pub spec: ShardSpec,
}

fn bucket_key(b: u32) -> String {
    if b >= 256 {
        LEAVES_AREA.1.to_string()
    } else {
        format!("{}{b:02x}/", LEAVES_AREA.0)
    }
}

/// The largest string below `s` that any key could sort between (keys never hold
/// U+10FFFF): the exclusive start that makes a listing include `s` itself.
fn just_below(s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    match chars.pop() {
        None => String::new(),
        Some(c) => {
            let prev = char::from_u32(u32::from(c).saturating_sub(1)).unwrap_or(c);
            chars.push(prev);
            chars.push(char::MAX);
            chars.into_iter().collect()
        }
    }
}

impl Scope {
    /// The scope `--shard` asks for, with its plan cut from the chain; `None` without it.
    pub fn of(opts: &VerifyOptions, chain: &Chain) -> Result<Option<Self>> {
        let Some(spec) = opts.shard else {
            return Ok(None);
        };
        Ok(Some(Self {
            plan: Plan::compute(chain, spec.count, opts.plan_seal)?,
            spec,
        }))
    }

    /// What the report records about this shard.
    pub fn info(&self) -> ShardInfo {
        ShardInfo {
            index: self.spec.index,
            count: self.spec.count,
            plan: self.plan.fingerprint(),
            plan_seal: self.plan.plan_seal,
        }
    }

    /// Shard 0 also owns the seal chain, the head markers, the tiles and everything else.
    pub fn first(&self) -> bool {
        self.spec.index == 0
    }

    fn i(&self) -> usize {
        self.spec.index as usize
    }

    /// Whether a pointer key (or the part of its commit) is this shard's.
    pub fn owns_pointer(&self, pointer_key: &str) -> bool {
        match pointer_key.strip_prefix(keys::COMMITS_PREFIX) {
            Some(rest) => {
                let rest = rest
                    .split_once('/')
                    .map_or(rest.to_string(), |(r, _)| format!("{r}/"));
                rest.as_str() >= self.plan.runs[self.i()].as_str()
                    && rest.as_str() < self.plan.runs[self.i() + 1].as_str()
            }
            None => self.first(),
        }
    }

    /// Whether an index key is in this shard's index range.
    pub fn owns_index(&self, key: &str) -> bool {
        key >= self.plan.index[self.i()].as_str() && key < self.plan.index[self.i() + 1].as_str()
    }

    /// Whether a commit's locator bucket is this shard's.
    pub fn owns_locator(&self, commit_id: &str) -> bool {
        let b = keys::leaf_prefix(commit_id);
        b.as_str() >= bucket_key(self.plan.buckets[self.i()]).as_str()
            && b.as_str() < bucket_key(self.plan.buckets[self.i() + 1]).as_str()
    }

    /// The key ranges this shard lists: (prefix, from, to) for keys in [from, to) under
    /// the prefix (which keeps the last page of a range from running into other areas).
    fn ranges(&self) -> Vec<(&'static str, String, String)> {
        let i = self.i();
        let (r0, r1) = (&self.plan.runs[i], &self.plan.runs[i + 1]);
        let mut v = vec![
            (RUNS_AREA.0, r0.clone(), r1.clone()),
            (
                POINTERS_AREA.0,
                format!("{}{}", keys::COMMITS_PREFIX, r0),
                format!("{}{}", keys::COMMITS_PREFIX, r1),
            ),
            (
                INDEX_AREA.0,
                self.plan.index[i].clone(),
                self.plan.index[i + 1].clone(),
            ),
            (
                LEAVES_AREA.0,
                bucket_key(self.plan.buckets[i]),
                bucket_key(self.plan.buckets[i + 1]),
            ),
        ];
        if self.first() {
            // The gaps between the split areas, and before and after them.
            let mut areas = [RUNS_AREA, POINTERS_AREA, INDEX_AREA, LEAVES_AREA];
            areas.sort();
            let mut from = String::new();
            for (start, end) in areas {
                v.push(("", from, start.to_string()));
                from = end.to_string();
            }
            v.push(("", from, String::new()));
        }
        v
    }

    /// List this shard's objects: one bounded, resumable listing per range.
    pub async fn list(&self, store: &dyn AtomicPublisher) -> Result<Vec<ObjectInfo>> {
        let mut out = Vec::new();
        for (prefix, from, to) in self.ranges() {
            let before = (!to.is_empty()).then_some(to.as_str());
            if before.is_some_and(|b| b <= from.as_str()) {
                continue;
            }
            // The offset is `from` itself when it names a directory (`run_id=<r>/`: no key
            // of a store equals it), else just below it. Never just below a directory's
            // name: `run_id=b.\u{10FFFF}` sorts before every `run_id=b/…` key, but some
            // servers' `start-after` (SeaweedFS) then skips the directory `run_id=b`
            // (docs/object-stores.md).
            let after = if from.ends_with('/') {
                from.clone()
            } else {
                just_below(&from)
            };
            let mut page = list_pages(store, prefix, &after, before).await?;
            page.retain(|o| o.key.as_str() >= from.as_str());
            out.extend(page);
        }
        Ok(out)
    }

    /// Whether a listed history object is this shard's to judge.
    pub fn owns_history(&self, h: &HistoryKey) -> bool {
        match h {
            HistoryKey::Index { .. } => true, // listed by range already
            HistoryKey::Leaf { commit_id, .. } => self.owns_locator(commit_id),
            HistoryKey::Head(_)
            | HistoryKey::Tile { .. }
            | HistoryKey::Checkpoint(_)
            | HistoryKey::Cosignature { .. }
            | HistoryKey::TlogTile { .. }
            | HistoryKey::EntryBundle { .. }
            | HistoryKey::TimestampQuery(_)
            | HistoryKey::TimestampReply(_) => self.first(),
        }
    }
}

/// Combine the reports of every shard of one verification into one report. Refuses a set
/// that is not exactly shards 0..n of one plan.
pub fn merge(reports: Vec<Report>) -> Result<Report> {
    let (by_index, count, fp) = by_shard(reports)?;
    let mut merged = Report::default();
    let mut problems: Vec<Problem> = Vec::new();
    for (i, r) in by_index {
        if i == 0 {
            take_chain_facts(&mut merged, &r);
            merged.anchors = r.anchors.clone();
        }
        merged.commits += r.commits;
        merged.parts_ok += r.parts_ok;
        merged.parts_hashed += r.parts_hashed;
        merged.parts_sha256_checked += r.parts_sha256_checked;
        merged.parts_blake3_checked += r.parts_blake3_checked;
        merged.compacted_parts_ok += r.compacted_parts_ok;
        merged.parts_not_hashed += r.parts_not_hashed;
        merged.rows += r.rows;
        merged.bytes_hashed += r.bytes_hashed;
        merged.unsealed_commits += r.unsealed_commits;
        merged.in_flight += r.in_flight;
        merged.in_flight_objects.extend(r.in_flight_objects);
        merged.adopted_commits.extend(r.adopted_commits);
        problems.extend(r.problems);
    }
    // Each shard judged its own adopted commits; a commit two shards read is one.
    merged.adopted_commits.sort_by(|a, b| a.key.cmp(&b.key));
    merged.adopted_commits.dedup_by(|a, b| a.key == b.key);
    merged.adopted = merged.adopted_commits.len() as u64;
    problems.sort_by(|a, b| (a.kind, &a.key, &a.detail).cmp(&(b.kind, &b.key, &b.detail)));
    problems.dedup();
    merged.problems = problems;
    merged.merged = Some(Merged {
        shards: count,
        plan: fp,
    });
    merged.in_flight_objects.sort_by(|a, b| a.key.cmp(&b.key));
    merged.settle();
    Ok(merged)
}

/// The reports by shard index, the shard count and the plan: every one of shards 0..n of
/// one plan, each once.
fn by_shard(reports: Vec<Report>) -> Result<(BTreeMap<u32, Report>, u32, String)> {
    let mut by_index: BTreeMap<u32, Report> = BTreeMap::new();
    let mut plan: Option<(u32, String)> = None;
    for r in reports {
        let info = r.shard.clone().ok_or_else(|| {
            Error::usage(format!(
                "a report of {} is not a shard report (no `shard`)",
                r.store
            ))
        })?;
        match &plan {
            None => plan = Some((info.count, info.plan.clone())),
            Some((n, p)) if *n != info.count || *p != info.plan => {
                return Err(Error::usage(text![
                    format!(
                        "shard {}/{} used plan {} but others used {n} shards of plan {p}: run every shard with the same ",
                        info.index, info.count, info.plan
                    ),
                    Param::PlanSeal
                ]))
            }
            Some(_) => {}
        }
        if by_index.insert(info.index, r).is_some() {
            return Err(Error::usage(format!("shard {} given twice", info.index)));
        }
    }
    let (count, fp) = plan.ok_or_else(|| Error::usage("no reports to merge"))?;
    let missing: Vec<String> = (0..count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Error::usage(format!(
            "shards {} of {count} are missing",
            missing.join(", ")
        )));
    }
    Ok((by_index, count, fp))
}

/// What every shard saw alike (the seal chain), from shard 0's report.
fn take_chain_facts(merged: &mut Report, r: &Report) {
    merged.store = r.store.clone();
    merged.seals = r.seals;
    merged.signed_seals = r.signed_seals;
    merged.head_seq = r.head_seq;
    merged.head = r.head.clone();
    merged.head_sealed_utc = r.head_sealed_utc.clone();
    merged.seal_times = r.seal_times.clone();
    merged.seal_times_checked = r.seal_times_checked;
    merged.unfinished_seal = r.unfinished_seal;
    merged.delta_version = r.delta_version;
    merged.sealed_commits = r.sealed_commits;
    merged.sample_seed = r.sample_seed;
    merged.expected_head_seq = r.expected_head_seq;
}

/// The runs of the commits sealed by seals 1..=`upto` (with repetition, so quantiles weigh
/// commits), as the bounds they become (`run_id=<r>/`), sorted as such: `run_id=a-b/`
/// sorts before `run_id=a/`, although `run_id=a` sorts before `run_id=a-b`.
fn sealed_runs(chain: &Chain, upto: u64) -> Vec<String> {
    let mut runs: Vec<String> = chain
        .leaves
        .iter()
        .filter(|l| l.seq <= upto)
        .filter_map(|l| l.key.strip_prefix(keys::COMMITS_PREFIX))
        .filter_map(|k| k.split_once('/').map(|(r, _)| format!("{r}/")))
        .collect();
    runs.sort_unstable();
    runs
}

/// The commit time each seal's leaf positions reach (the watermark, or time, of the seal),
/// and how many commits seals 1..=`upto` hold.
fn seal_ends(chain: &Chain, upto: u64) -> (Vec<(u64, String)>, u64) {
    let mut ends: Vec<(u64, String)> = Vec::new();
    let mut total = 0u64;
    for s in chain.seals.iter().filter(|s| s.key_seq <= upto) {
        if let Ok(seal) = &s.seal {
            total += seal.entries.len() as u64;
            let t = seal.watermark_utc.as_deref().unwrap_or(&seal.sealed_utc);
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(t) {
                ends.push((total, keys::index_bound(t.with_timezone(&chrono::Utc))));
            }
        }
    }
    (ends, total)
}

//! Files under a data part's name that nothing names: every object of the data area whose
//! key is not exactly what a pointer names (or a commit in flight) is a problem
//! (`planted_part`), for a full `verify` and `--since-seal` alike.
//!
//! Dataset readers (`run_id=*/target_crs=*/*.parquet` globs, pyarrow's Hive discovery)
//! read every such file; lineage-store reads only what a pointer names. So a file under a
//! real commit's part name in another `target_crs` directory (another EPSG code,
//! `EPSG%3A…`, `garbage`, `EPSG:….bak`, empty) must be named, not accepted because its
//! run and commit id match a pointer.
//!
//! - a part name under a `target_crs` directory lineage-store never writes
//!   ([`keys::is_crs_segment`]): named from its key alone ([`foreign_part`]);
//! - a part of a commit whose pointer was read and names another key ([`beside`]);
//! - several parts of one commit whose pointer is missing or unreadable ([`several`]).
//!
//! `--since-seal` lists the data area and the pointers' keys ([`DataArea`]: one listing
//! request per 1,000 parts and per 1,000 pointers, no reads) and reads only the pointers
//! of commits with more than one part. On a local disk it lists only the directories
//! changed since seal SEQ's file-system clock less the grace ([`UnchangedBefore`]), the pointers of
//! the runs listed, and reads the pointers of the parts listed in a run with a directory
//! left unread.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::audit::findings::{Problem, ProblemKind, Report};
use crate::audit::verify::flight::{self, Window};
use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::pointers::Wanted;
use crate::base::error::Result;
use crate::format::keys::{self, KeyKind};
use crate::format::pointer::Pointer;
use crate::history::seal::StoredSeal;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// The problem of a key that has a data part's name under a `target_crs` directory
/// lineage-store never writes, or `None` when it has no part's name.
pub(crate) fn foreign_part(key: &str, size: u64) -> Option<Problem> {
    let (_, crs, commit) = keys::part_name(key)?;
    Some(Problem::new(
        ProblemKind::PlantedPart,
        key,
        format!(
            "{size} bytes under commit {commit}'s part name in `target_crs={crs}`, a directory lineage-store never writes (its parts lie under `target_crs=EPSG:<code>`): no pointer names it, but dataset readers read its rows"
        ),
    ))
}

/// The parts `listed` of the commit whose pointer `pointer_key` names `part_path`: every
/// one that is not `part_path` is named.
pub(crate) fn beside<'a>(
    pointer_key: &str,
    part_path: &str,
    listed: impl IntoIterator<Item = &'a str>,
) -> Vec<Problem> {
    listed
        .into_iter()
        .filter(|k| *k != part_path)
        .map(|k| {
            Problem::new(
                ProblemKind::PlantedPart,
                k,
                format!(
                    "not the part its commit's pointer {pointer_key} names ({part_path}): a file planted under the commit's part name; dataset readers read its rows beside the real ones"
                ),
            )
        })
        .collect()
}

/// The parts `listed` of one commit whose pointer `pointer_key` is missing or unreadable:
/// when there are several, each is named (at most one of them is the commit's).
pub(crate) fn several(pointer_key: &str, listed: &[&str]) -> Vec<Problem> {
    if listed.len() < 2 {
        return Vec::new();
    }
    listed
        .iter()
        .map(|k| {
            Problem::new(
                ProblemKind::PlantedPart,
                k,
                format!(
                    "one of {} files under the part name of one commit, whose pointer {pointer_key} cannot be read: at most one of them is the commit's part",
                    listed.len()
                ),
            )
        })
        .collect()
}

/// The data area as `--since-seal` sees it: every object under `run_id=` (on a local disk,
/// of the directories changed since seal SEQ: [`UnchangedBefore`]), and the keys of the pointers of
/// the runs listed.
#[derive(Debug, Default)]
pub(crate) struct DataArea {
    listing: Vec<ObjectInfo>,
    pointers: HashSet<String>,
    /// Listed parts by their commit's pointer key.
    parts: BTreeMap<String, Vec<usize>>,
    /// The directories not read, unchanged since [`UnchangedBefore::before_ns`]; `None` when the
    /// whole data area was listed.
    pub(crate) unchanged_dirs: Option<Vec<String>>,
}

/// Where a local disk's data area may be listed in part: the directories whose change
/// time (and whose parent's) is before `before_ns`, on the file system's clock, had every
/// entry they have now when the full `verify` that `--since-seal` trusts ran (after seal
/// SEQ); they are not read again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnchangedBefore {
    pub(crate) before_ns: i128,
}

impl UnchangedBefore {
    /// Before seal `since`'s file-system clock (or now, if that is earlier) less the
    /// grace, so that nothing left unread was in flight when the full `verify` that
    /// `--since-seal` trusts ran after that seal. `None` when the seal read no clock (a
    /// first seal, an object store, a seal made before seals recorded one): the whole data
    /// area is listed.
    pub(crate) fn of(since: &StoredSeal, opts: &VerifyOptions) -> Option<Self> {
        let clock = since
            .seal
            .as_ref()
            .ok()?
            .index_window
            .as_ref()?
            .fs_clock()?;
        let now = i128::from(opts.now.timestamp_nanos_opt()?);
        let grace = i128::from(opts.grace.num_nanoseconds()?);
        Some(Self {
            before_ns: clock.min(now) - grace,
        })
    }
}

impl DataArea {
    /// List the data area, then the pointers (in that order: a writer publishes a part
    /// before its pointer, so a part listed has its pointer in the later listing unless
    /// it is in flight); the pointers of commits with more than one part are added to
    /// `wanted` (to be read by the pipeline's pointers step).
    pub(crate) async fn list(
        store: &dyn AtomicPublisher,
        since: Option<UnchangedBefore>,
        wanted: &mut Vec<Wanted>,
    ) -> Result<Self> {
        let area = Self::listed(store, since).await?;
        let mut seen: HashSet<String> = wanted.iter().map(|w| w.key.clone()).collect();
        for k in area.pointers_to_read() {
            if seen.insert(k.clone()) {
                wanted.push(Wanted {
                    key: k.clone(),
                    sealed: None,
                    listed_size: None,
                });
            }
        }
        Ok(area)
    }

    /// The listings.
    async fn listed(store: &dyn AtomicPublisher, since: Option<UnchangedBefore>) -> Result<Self> {
        // Names only: no part's or pointer's metadata is read (on local disk, the
        // directories' names and types); a foreign object's size is looked up when named.
        let changed = match since {
            Some(s) => store.list_names_changed("run_id=", s.before_ns).await?,
            None => None,
        };
        let (listing, unchanged_dirs) = match changed {
            Some(c) => (c.objects, Some(c.unchanged_dirs)),
            None => (store.list_names("run_id=").await?, None),
        };
        let pointers = match &unchanged_dirs {
            Some(_) => pointers_of_runs(store, &listing).await?,
            None => store
                .list_names(keys::COMMITS_PREFIX)
                .await?
                .into_iter()
                .map(|o| o.key)
                .collect(),
        };
        let mut parts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, o) in listing.iter().enumerate() {
            if let (
                None,
                KeyKind::Part {
                    run_id, commit_id, ..
                },
            ) = (&o.link, keys::classify(&o.key))
            {
                parts
                    .entry(keys::pointer_key(&run_id, &commit_id))
                    .or_default()
                    .push(i);
            }
        }
        Ok(Self {
            listing,
            pointers,
            parts,
            unchanged_dirs,
        })
    }

    /// The pointers to read: those of commits with more than one listed part, and, when
    /// directories were left unread, of every commit with a listed part in a run that has
    /// one (its commit's own part may be there, unlisted, and this one planted beside it).
    fn pointers_to_read(&self) -> impl Iterator<Item = &String> {
        // The pointers' directories of those runs (`_lineage/commits/run_id=R/`).
        let partial: BTreeSet<String> = (self.unchanged_dirs.iter().flatten())
            .filter_map(|d| d.split('/').next())
            .map(|run_dir| format!("{}{run_dir}/", keys::COMMITS_PREFIX))
            .collect();
        self.parts
            .iter()
            .filter(move |(pk, v)| {
                let in_partial = partial.contains(crate::publish::dir_of(pk));
                (v.len() > 1 || in_partial) && self.pointers.contains(*pk)
            })
            .map(|(pk, _)| pk)
    }

    /// Name what nothing names: symlinks, foreign objects, part names in directories not
    /// ours, parts their commit's pointer (`parsed`, as read) does not name, and parts
    /// without a pointer that are not in flight. A part whose pointer is gone but
    /// `recorded` (by a seal or an index entry the caller read: that pointer is the
    /// problem reported) is no orphan.
    pub(crate) async fn judge(
        &self,
        store: &dyn AtomicPublisher,
        window: &Window,
        (parsed, recorded): (&HashMap<String, Pointer>, &HashSet<String>),
        report: &mut Report,
    ) -> Result<()> {
        for o in &self.listing {
            if let Some(target) = &o.link {
                let detail = flight::symlink_detail(target);
                report.push(ProblemKind::Symlink, &o.key, detail);
            } else if keys::classify(&o.key) == KeyKind::Foreign {
                let size = sized(store, o).await?.size;
                report.push_problem(foreign_part(&o.key, size).unwrap_or_else(|| {
                    Problem::new(
                        ProblemKind::ForeignObject,
                        &o.key,
                        "not written by lineage-store",
                    )
                }));
            }
        }
        let mut pointerless = BTreeMap::new();
        for (pk, idx) in &self.parts {
            let listed: Vec<&str> = idx.iter().map(|&i| self.listing[i].key.as_str()).collect();
            let found = match parsed.get(pk) {
                Some(p) => beside(pk, &p.part_path, listed.iter().copied()),
                None if self.pointers.contains(pk) || recorded.contains(pk) => several(pk, &listed),
                None => {
                    pointerless.extend(idx.iter().map(|&i| {
                        let o = &self.listing[i];
                        (o.key.as_str(), o)
                    }));
                    Vec::new()
                }
            };
            found.into_iter().for_each(|p| report.push_problem(p));
        }
        if !pointerless.is_empty() {
            let mut looked_up = Vec::new();
            for o in pointerless.values() {
                looked_up.push(sized(store, o).await?);
            }
            let pointerless: BTreeMap<&str, &ObjectInfo> =
                looked_up.iter().map(|o| (o.key.as_str(), o)).collect();
            let claims = store.list(keys::COMMIT_KEYS_PREFIX).await?;
            let (flying, problems) =
                flight::judge_pointerless_parts(store, window, pointerless, &claims, None).await;
            flying.into_iter().for_each(|f| report.fly(f));
            problems.into_iter().for_each(|p| report.push_problem(p));
        }
        Ok(())
    }
}

/// The keys of the pointers of the runs with a part in `listing` (one listing of each
/// run's pointers): all that is asked of the pointers is whether a listed part's is there.
async fn pointers_of_runs(
    store: &dyn AtomicPublisher,
    listing: &[ObjectInfo],
) -> Result<HashSet<String>> {
    let runs: BTreeSet<String> = listing
        .iter()
        .filter_map(|o| match keys::classify(&o.key) {
            KeyKind::Part { run_id, .. } => Some(run_id),
            _ => None,
        })
        .collect();
    let mut out = HashSet::new();
    for run in runs {
        let prefix = format!("{}run_id={run}/", keys::COMMITS_PREFIX);
        out.extend(store.list_names(&prefix).await?.into_iter().map(|o| o.key));
    }
    Ok(out)
}

/// A listed object with its size and time, looked up when the listing gave names only
/// (one listing of its key); as listed when it is gone since.
async fn sized(store: &dyn AtomicPublisher, o: &ObjectInfo) -> Result<ObjectInfo> {
    if o.size > 0 || o.modified.is_some() || o.link.is_some() {
        return Ok(o.clone());
    }
    Ok(store
        .list(&o.key)
        .await?
        .into_iter()
        .find(|l| l.key == o.key)
        .unwrap_or_else(|| o.clone()))
}

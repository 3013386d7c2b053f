//! The `--since-seal [SEQ]` strategy: only what changed since seal SEQ (default: the
//! newest), in O(commits since + log n) requests.
//!
//! Checked: the seals from SEQ on (found from the head marker, read by number): their
//! links to the seal before, sequence numbers, frontiers against roots (and each against
//! its predecessor's frontier and its own entries), watermarks and signatures; the
//! expected head (walking back from SEQ if it is older); the pointers sealed after SEQ
//! (byte for byte) and their parts; every commit not sealed yet that the index lists (its
//! entry, pointer and part); the newest seal's head marker and the tiles its frontier
//! comes from; and the data area: every file under a part's name that no pointer names
//! ([`super::planted`]: the data area and the pointers' keys are listed, one request per
//! 1,000 keys; on a local disk only the directories changed since seal SEQ's file-system
//! clock less the grace); the Delta log, compactions and Iceberg metadata of the seals from SEQ on
//! ([`super::since_log`]). Not checked: anything else sealed by SEQ or earlier, temps and
//! locators; a full `verify` (or its shards) checks those.
//!
//! The steps are the pipeline's ([`super`]): **list** = the seals after SEQ and the index
//! after the newest seal's watermark, **classify** = sealed after SEQ or not sealed yet,
//! then **pointers** and **check** as for a full verify.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};

use crate::audit::anchors::{head_outcome, judge_keys};
use crate::audit::findings::{DataAreaRead, Problem, ProblemKind, Report};
use crate::audit::verify::flight::Window;
use crate::audit::verify::history::entries::{entry_matches, index_entry_problem};
use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::pipeline::Strategy;
use crate::audit::verify::planted::{DataArea, UnchangedBefore};
use crate::audit::verify::pointers::{ReadBack, SealedAs, Wanted};
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::time::rfc3339_ns;
use crate::format::keys::{self, seal_key};
use crate::format::pointer::Pointer;
use crate::history::head::{self, read_seal};
use crate::history::index;
use crate::history::seal::StoredSeal;
use crate::history::tiles;
use crate::publish::AtomicPublisher;

/// The since strategy's state between the steps.
#[derive(Debug)]
pub(crate) struct Since {
    /// The seals found from the head marker.
    heads: head::Heads,
    /// The newest seal.
    newest: StoredSeal,
    /// Check from this seal on.
    since: u64,
    /// Keys of the pointers sealed after `since`.
    sealed_after: Vec<String>,
    /// Index entries of commits not sealed yet.
    entries: Vec<index::Entry>,
    /// The seals from SEQ on, in order (their Delta versions are checked).
    checked_seals: Vec<StoredSeal>,
    /// The data area and the pointers' keys, as listed.
    area: DataArea,
    /// The pointers read, by key (what they name is the data area's yardstick).
    parsed: HashMap<String, Pointer>,
    /// Seals already read while planning (`--trust-expected-head`'s walk back).
    preread: BTreeMap<u64, StoredSeal>,
    /// `--trust-expected-head`: `since` is the expected head's seal, shown consistent with
    /// the newest by a proof ([`super::from_head`]).
    trusted: bool,
}

impl Since {
    /// A strategy from seal `since` (nothing read yet but the seals in `preread`).
    fn start(
        heads: head::Heads,
        newest: StoredSeal,
        since: u64,
        preread: BTreeMap<u64, StoredSeal>,
        trusted: bool,
    ) -> Self {
        Self {
            heads,
            newest,
            since,
            sealed_after: Vec::new(),
            entries: Vec::new(),
            checked_seals: Vec::new(),
            area: DataArea::default(),
            parsed: HashMap::new(),
            preread,
            trusted,
        }
    }

    /// The strategy for `opts.since_seal`, or `None` when the newest seal is of an earlier
    /// format (no index to list from): then the store gets a full verify.
    pub(crate) async fn plan(
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
    ) -> Result<Option<Self>> {
        let heads = head::find(store).await?;
        let newest = match heads.newest() {
            Some(n) if heads.legacy.is_none() && n.seal.as_ref().is_ok_and(|s| s.is_v2()) => {
                n.clone()
            }
            _ => {
                if let Some(Some(n)) = opts.since_seal {
                    if read_seal(store, n).await?.is_none() {
                        return Err(Error::invalid(
                            Param::SinceSeal,
                            text![format!("{n}: the store has no seal {n}")],
                        ));
                    }
                }
                tracing::info!("no seal of the current format: verifying the whole store");
                return Ok(None);
            }
        };
        let since = opts.since_seal.flatten().unwrap_or(newest.key_seq);
        if since > newest.key_seq || since == 0 {
            return Err(Error::invalid(
                Param::SinceSeal,
                text![format!(
                    "{since}: the store has no seal {since} (the newest is {})",
                    newest.key_seq
                )],
            ));
        }
        Ok(Some(Self::start(
            heads,
            newest,
            since,
            BTreeMap::new(),
            false,
        )))
    }

    /// The strategy for `--trust-expected-head`: from the seal with the expected head
    /// digest, found walking back from the newest seal. `None` when the newest seal is of
    /// an earlier format or no seal has the digest: then a full verify (which names the
    /// head as not found).
    pub(crate) async fn from_head(
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
    ) -> Result<Option<Self>> {
        let Some(want) = opts.expect_head.as_deref() else {
            return Err(Error::invalid(
                Param::TrustExpectedHead,
                text!["trusts the expected head: give ", Param::ExpectHead],
            ));
        };
        let heads = head::find(store).await?;
        let newest = match heads.newest() {
            Some(n) if heads.legacy.is_none() && n.seal.as_ref().is_ok_and(|s| s.is_v2()) => {
                n.clone()
            }
            _ => return Ok(None),
        };
        let (found, preread) = super::from_head::find(store, newest.key_seq, want).await?;
        let Some(since) = found else {
            tracing::warn!("no seal has the expected head digest: verifying the whole store");
            return Ok(None);
        };
        Ok(Some(Self::start(heads, newest, since, preread, true)))
    }
}

impl Strategy for Since {
    async fn gather(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
    ) -> Result<Vec<Wanted>> {
        let (newest, since) = (&self.newest, self.since);
        report.since_seal = Some(since);
        report.head_seq = Some(newest.key_seq);
        report.head = Some(newest.digest.clone());
        report.head_sealed_utc = newest.seal.as_ref().ok().map(|s| s.sealed_utc.clone());
        let from = since.saturating_sub(1).max(1);
        let seals = read_seals_from(
            store,
            opts,
            (&self.heads, &self.preread),
            since,
            newest.key_seq,
            report,
        )
        .await?;
        check_seals(opts, &seals, since, report);
        if let (true, Some(old)) = (self.trusted, seals.get(&since)) {
            super::from_head::check(store, old, newest, report).await?;
        }
        self.checked_seals = seals
            .range(since.max(1)..)
            .map(|(_, s)| s.clone())
            .collect();
        anchors(store, opts, &seals, (from, since, newest.key_seq), report).await?;
        let head_seal = newest
            .seal
            .as_ref()
            .map_err(|m| Error::internal(m.to_string()))?;
        report.seals = newest.key_seq;
        report.signed_seals = seals
            .values()
            .filter(|s| s.key_seq >= since)
            .filter(|s| {
                s.seal
                    .as_ref()
                    .is_ok_and(|x| matches!(opts.trust().judge(s.key_seq, x), Ok(Some(_))))
            })
            .count() as u64;
        report.sealed_commits = head_seal.tree_size;
        let mut wanted = sealed_after(&seals, since);
        self.sealed_after = wanted.iter().map(|w| w.key.clone()).collect();
        // Commits not sealed yet: from the index, after the newest seal's watermark, and
        // late ones in its window.
        self.entries = crate::history::window::unsealed_after(store, head_seal).await?;
        wanted.extend(self.entries.iter().map(|e| Wanted {
            key: e.pointer_key.clone(),
            sealed: None,
            listed_size: None,
        }));
        let unchanged = seals.get(&since).and_then(|s| UnchangedBefore::of(s, opts));
        self.area = DataArea::list(store, unchanged, &mut wanted).await?;
        report.data_area = Some(DataAreaRead {
            unchanged_before_utc: unchanged.map(|u| rfc3339_ns(u.before_ns)),
            unchanged_dirs: self
                .area
                .unchanged_dirs
                .as_ref()
                .map_or(0, |d| d.len() as u64),
        });
        Ok(wanted)
    }

    async fn after_pointers(
        &mut self,
        store: &dyn AtomicPublisher,
        _opts: &VerifyOptions,
        report: &mut Report,
        read: ReadBack,
    ) -> Result<Vec<(String, Pointer)>> {
        let mut pointers: Vec<(String, Pointer)> = Vec::new();
        for k in &self.sealed_after {
            if let Some(p) = read.parsed.get(k) {
                pointers.push((k.clone(), p.clone()));
            }
        }
        report.commits = pointers.len() as u64;
        for e in &self.entries {
            if read.corrupt.contains(&e.pointer_key) {
                continue; // the pointer is the problem reported
            }
            let pointer = read.parsed.get(&e.pointer_key);
            report.problems.extend(index_entry_problem(
                &e.key,
                e.size,
                e.committed,
                &e.commit_id,
                &e.pointer_key,
                pointer,
            ));
            // A commit the entry stands for is checked even when the entry itself is not
            // empty.
            if let Some(p) = pointer.filter(|p| entry_matches(p, e.committed, &e.commit_id)) {
                report.unsealed_commits += 1;
                report.commits += 1;
                pointers.push((e.pointer_key.clone(), p.clone()));
            }
        }
        check_head_structures(store, &self.newest, report).await?;
        self.parsed = read.parsed;
        Ok(pointers)
    }

    fn listed_size(&self, _key: &str) -> Option<u64> {
        None
    }

    async fn after_parts(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
        _store_ids: &BTreeMap<String, u64>,
    ) -> Result<()> {
        let window = Window {
            now: opts.now,
            grace: opts.grace,
        };
        let recorded: HashSet<String> = (self.sealed_after.iter().cloned())
            .chain(self.entries.iter().map(|e| e.pointer_key.clone()))
            .collect();
        self.area
            .judge(store, &window, (&self.parsed, &recorded), report)
            .await?;
        // The Delta versions of the seals from SEQ on, each against the version before.
        let seals: Vec<&StoredSeal> = self.checked_seals.iter().collect();
        let bad_parts = report.problems.iter().map(|p| p.key.clone()).collect();
        let found = super::delta::check_since(store, &seals, &bad_parts).await?;
        report.problems.extend(found.problems);
        // The rest of the Delta log since SEQ, and the compactions since then.
        let range = (self.since, self.newest.key_seq);
        super::since_log::check(store, opts, range, &self.checked_seals, report).await?;
        Ok(())
    }
}

/// The seals from the one before `since` to `newest`, by number: those `heads` found or
/// were read before (`preread`), the others read (a missing one reported).
async fn read_seals_from(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    (heads, preread): (&head::Heads, &BTreeMap<u64, StoredSeal>),
    since: u64,
    newest: u64,
    report: &mut Report,
) -> Result<BTreeMap<u64, StoredSeal>> {
    let mut seals: BTreeMap<u64, StoredSeal> = heads
        .marked
        .iter()
        .chain(&heads.unmarked)
        .chain(preread.values())
        .filter(|s| s.key_seq + 1 >= since)
        .map(|s| (s.key_seq, s.clone()))
        .collect();
    let from = since.saturating_sub(1).max(1);
    let missing: Vec<u64> = (from..=newest).filter(|n| !seals.contains_key(n)).collect();
    let read: Vec<(u64, Option<StoredSeal>)> = futures::stream::iter(missing)
        .map(|n| async move { Ok::<_, Error>((n, read_seal(store, n).await?)) })
        .buffer_unordered(opts.concurrency.max(1))
        .try_collect()
        .await?;
    for (n, s) in read {
        match s {
            Some(s) => {
                seals.insert(n, s);
            }
            None => report.push_problem(Problem::new(
                ProblemKind::SealMissing,
                &seal_key(n),
                format!("seal {n} is missing: the chain jumps over it"),
            )),
        }
    }
    Ok(seals)
}

/// Commits sealed after seal `since`: their pointers must be what was sealed.
fn sealed_after(seals: &BTreeMap<u64, StoredSeal>, since: u64) -> Vec<Wanted> {
    seals
        .values()
        .filter(|s| s.key_seq > since)
        .filter_map(|s| s.seal.as_ref().ok().map(|x| (s.key_seq, x)))
        .flat_map(|(seq, s)| {
            s.entries.iter().map(move |e| Wanted {
                listed_size: None,
                key: e.key.clone(),
                sealed: Some(SealedAs {
                    seq,
                    digest: e.sha256.to_lowercase(),
                    adopted: e.adopted,
                }),
            })
        })
        .collect()
}

/// Chain checks of the seals from `since` on, each against the one before it
/// ([`crate::audit::links`]).
fn check_seals(
    opts: &VerifyOptions,
    seals: &BTreeMap<u64, StoredSeal>,
    since: u64,
    report: &mut Report,
) {
    for p in crate::audit::links::check_from(seals, since, &opts.trust()) {
        report.push_problem(p);
    }
}

/// The head and key anchors of a since verify into `report` (outcomes, and the head's
/// problem): the head found among the seals read or walking back from `from`; the keys
/// judged on the seals from `since` on (the only ones read). `seqs`: (from, since, newest).
async fn anchors(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    seals: &BTreeMap<u64, StoredSeal>,
    (from, since, newest): (u64, u64, u64),
    report: &mut Report,
) -> Result<()> {
    if let Some(want) = &opts.expect_head {
        let found = match find_head(store, seals, from, want).await? {
            Ok(seq) => {
                report.expected_head_seq = Some(seq);
                Some(seq)
            }
            Err(p) => {
                report.push_problem(p);
                None
            }
        };
        let want = want.trim().to_lowercase();
        report.anchors.push(head_outcome(&want, found, newest));
    }
    if !opts.public_keys.is_empty() || opts.signed_from.is_some() {
        let (mut o, _) = judge_keys(
            seals.range(since..).map(|(_, s)| s),
            &opts.trust(),
            !opts.public_keys.is_empty(),
        );
        o.statement = format!("of the seals from {since} on: {}", o.statement);
        report.anchors.push(o);
    }
    Ok(())
}

/// `--expect-head`: among the seals read, else walking back (checking links) from the
/// oldest one read. Costs the seals made since that head.
async fn find_head(
    store: &dyn AtomicPublisher,
    seals: &BTreeMap<u64, StoredSeal>,
    from: u64,
    want: &str,
) -> Result<std::result::Result<u64, Problem>> {
    let want = want.trim().to_lowercase();
    if let Some(s) = seals.values().find(|s| s.digest == want) {
        return Ok(Ok(s.key_seq));
    }
    let mut expect_digest = seals
        .get(&from)
        .and_then(|s| s.seal.as_ref().ok())
        .and_then(|s| s.prev_sha256.clone());
    let mut n = from;
    while n > 1 {
        n -= 1;
        let Some(s) = read_seal(store, n).await? else {
            break;
        };
        if expect_digest.as_deref().is_some_and(|d| d != s.digest) {
            return Ok(Err(Problem::new(
                ProblemKind::SealChainBroken,
                &s.key,
                format!(
                    "has sha256 {}, but the next seal records another: edited or replaced",
                    s.digest
                ),
            )));
        }
        if s.digest == want {
            return Ok(Ok(n));
        }
        expect_digest = s.seal.as_ref().ok().and_then(|x| x.prev_sha256.clone());
    }
    Ok(Err(Problem::new(
        ProblemKind::HeadNotFound,
        keys::SEALS_PREFIX,
        text![
            format!("no seal has the expected head digest {want} ("),
            Param::ExpectHead,
            "): the newest seals were cut off, or the store was rolled back or rewritten"
        ],
    )))
}

/// The newest seal's marker, and the tiles of its tree against its frontier.
async fn check_head_structures(
    store: &dyn AtomicPublisher,
    newest: &StoredSeal,
    report: &mut Report,
) -> Result<()> {
    let Ok(seal) = &newest.seal else {
        return Ok(());
    };
    let marked = head::newest_marker(store).await? == Some(newest.key_seq);
    if !marked {
        // Not finished yet (see check::unfinished): its tiles may not be there.
        report.unfinished_seal = Some(newest.key_seq);
        return Ok(());
    }
    let want = seal.frontier.clone().unwrap_or_default();
    match tiles::frontier_from_tiles(store, seal.tree_size).await {
        Ok(got) if got.iter().map(hex::encode).eq(want.iter().map(|h| h.to_lowercase())) => {}
        Ok(_) => report.push_problem(Problem::new(
            ProblemKind::BadTile,
            keys::TILES_PREFIX,
            format!("the right edge of the tiles does not give seal {}'s frontier: a tile was changed (a full `verify` names it)", newest.key_seq),
        )),
        Err(e) => report.push_problem(Problem::new(ProblemKind::BadTile, keys::TILES_PREFIX, e.to_string())),
    }
    Ok(())
}

//! Sealing in O(commits since the last seal + log n).
//!
//! An incremental seal reads the newest seal (head marker + one probe), lists the index
//! from that seal's watermark on (`start-after`: one request per thousand new commits),
//! skips the entries the seal records as `ahead` (sealed already), reads each new commit's
//! pointer, appends the pointers' digests to the seal's frontier for the new root, and
//! writes the next seal; then its locators, the tiles the tree grew by and its head marker.
//!
//! A full seal reads every seal and lists every pointer, as sealing always did: the first
//! seal of this format on an older store (which then also writes every tile and locator),
//! a store whose newest seal was made by an older version, and `seal --rescan` (commits the
//! index misses: a crash between pointer and index entry, an adopted orphan, a writer whose
//! clock was behind by more than the lookback).
//!
//! Why a watermark and `ahead`: index keys are the writers' clocks, and writers on other
//! machines may be behind the sealer's, or slow between pointer and index entry. So a seal
//! does not trust that nothing older than "now" will still appear; it takes as its
//! watermark `now - lookback` and records every sealed entry at or after it as `ahead`. The
//! next seal lists from the watermark and skips `ahead`: an entry that lands late, but
//! within the lookback, is still sealed, exactly once.

mod base;
mod draft;

use serde::Serialize;

use bytes::Bytes;
use chrono::Duration;
use ed25519_dalek::{Signer, SigningKey};

use crate::base::clock::Clock;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::time::rfc3339;
use crate::format::checkpoint::vkey;
use crate::format::compaction::CompactionRef;
use crate::format::keys;
use crate::format::keys::seal_key;
use crate::format::pointer::tool_version;
use crate::history::checkpoint;
use crate::history::complete;
pub use crate::history::delta::DeltaConflict;
use crate::history::head::{self, Heads};
pub use crate::history::iceberg::IcebergOutcome;
use crate::history::merkle;
use crate::history::seal::{Seal, StoredSeal, MAX_SEAL_ATTEMPTS, SEAL_FORMAT_V2};
use crate::history::signing::key_id;
use crate::publish::memo::PointerMemo;
use crate::publish::AtomicPublisher;
pub use draft::NotSealed;
use draft::{draft, Draft};

/// Default lookback: how late (by the sealer's clock) an index entry may land and still be
/// sealed by an incremental seal.
pub(crate) const DEFAULT_LOOKBACK_MINUTES: i64 = 5;

/// How to seal.
#[derive(Debug, Clone)]
pub struct SealOptions {
    /// See [`DEFAULT_LOOKBACK_MINUTES`]: larger than any writer's clock error plus the
    /// time between its pointer and its index entry.
    pub lookback: Duration,
    /// Read every seal and list every pointer (commits the index misses).
    pub rescan: bool,
    /// Publish a seal even when no commit is new (a heartbeat, e.g. to show a witness the
    /// log is alive). Without it, nothing new publishes nothing and the outcome is the
    /// current head ([`SealOutcome::nothing_new`]).
    pub allow_empty: bool,
    /// Publish an unsigned seal after a signed one. Without it, sealing without a key a
    /// store whose newest seal is signed is refused: signing that stops unnoticed is what
    /// `verify --signed-from` would then report forever.
    pub allow_unsigned: bool,
    /// Compaction records this seal puts into effect ([`Seal::compactions`]; `lineage
    /// compact` seals with them). With any, the seal is published even when no commit is new.
    pub compactions: Vec<CompactionRef>,
    /// The newest seal when those compactions were planned: when a seal after it already
    /// put compactions into effect, sealing is refused ([`Error::Conflict`]), so two
    /// compactors never both take a commit into the table (the one whose seal landed first
    /// wins; the other's records and parts stay unreferenced, which `verify` names).
    pub compactions_planned_at: u64,
    /// Write a Delta checkpoint for the seal's version when it is a multiple of this, or
    /// removes files (a compaction's); 0: never ([`crate::format::delta_checkpoint::due`]).
    pub delta_checkpoint_interval: u64,
    /// The origin (log name) of the seal's C2SP checkpoint (signed seals only); `None`:
    /// derived from the store's identity ([`crate::history::checkpoint::origin`]). Keep it
    /// the same for every seal of a store: tlog clients pin it.
    pub origin: Option<String>,
    /// Also make the seal an Iceberg snapshot (`_iceberg/metadata/`,
    /// [`crate::history::iceberg`]): the metadata of every seal up to it that lacks it is
    /// written too, and with nothing new to seal the newest seal's is completed.
    pub iceberg: bool,
}

impl Default for SealOptions {
    fn default() -> Self {
        Self {
            lookback: Duration::minutes(DEFAULT_LOOKBACK_MINUTES),
            rescan: false,
            allow_empty: false,
            allow_unsigned: false,
            compactions: Vec::new(),
            compactions_planned_at: 0,
            delta_checkpoint_interval: 0,
            origin: None,
            iceberg: false,
        }
    }
}

/// Write the next seal (see the module docs). Concurrent sealers race on the create-only
/// seal key; the loser completes the winner's seal and retries at the next number.
pub async fn seal_with(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    signing: Option<&SigningKey>,
    opts: &SealOptions,
) -> Result<SealOutcome> {
    // Each new pointer is read to draft the seal and again for its Delta `add`: once from
    // the store ([`PointerMemo`]).
    let memo = PointerMemo::new(store);
    let store: &dyn AtomicPublisher = &memo;
    let origin = checkpoint_origin(store, signing, opts).await?;
    for lost in 0..MAX_SEAL_ATTEMPTS as u64 {
        let heads = head::find(store).await?;
        let newest = complete_pending(store, &heads).await?;
        preflight(store, newest.as_ref(), signing.is_some(), opts).await?;
        let mut draft = draft(store, clock, opts.lookback, opts.rescan, heads, newest).await?;
        let full = draft.all_leaves.is_some();
        let not_sealed = std::mem::take(&mut draft.refused);
        if draft.new.is_empty() && !opts.allow_empty && opts.compactions.is_empty() {
            let head = draft.prev.as_ref().map_or(0, |p| p.key_seq);
            return Ok(SealOutcome {
                not_sealed,
                iceberg: iceberg(store, head, opts).await?,
                ..nothing_new(draft.prev.as_ref(), full, lost)
            });
        }
        let signer = signing.zip(origin.as_deref());
        let (seal, bytes) = build(draft_seal(&draft, clock, &opts.compactions)?, signer)?;
        let key = seal_key(seal.seq);
        within_limit(store, &key, &bytes, &seal)?;
        if !crate::publish::checked::publish_racing(store, &key, bytes.clone()).await? {
            tracing::info!(
                seq = seal.seq,
                "another sealer took this sequence number; retrying"
            );
            continue;
        }
        tracing::info!(seq = seal.seq, tree_size = seal.tree_size, full, "sealed");
        let delta_conflict = finish(store, &draft, &seal, &key, &bytes, opts).await?;
        return Ok(SealOutcome {
            seq: seal.seq,
            key,
            head: sha256_hex(&bytes),
            added: seal.entries.len() as u64,
            tree_size: seal.tree_size,
            root: seal.root,
            key_id: signing.map(|k| key_id(&k.verifying_key())),
            vkey: signer.map(|(k, o)| vkey(o, k.verifying_key().as_bytes())),
            lost_races: lost,
            full_scan: full,
            nothing_new: false,
            not_sealed,
            delta_conflict,
            iceberg: iceberg(store, seal.seq, opts).await?,
        });
    }
    Err(Error::Conflict {
        key: keys::SEALS_PREFIX.to_string(),
        message: format!("lost {MAX_SEAL_ATTEMPTS} sealing races in a row; try again"),
    })
}

/// Seal `seq`'s Iceberg snapshot, when asked for.
async fn iceberg(
    store: &dyn AtomicPublisher,
    seq: u64,
    opts: &SealOptions,
) -> Result<Option<IcebergOutcome>> {
    if !opts.iceberg {
        return Ok(None);
    }
    crate::history::iceberg::complete_table(store, seq).await
}

/// The origin of a signed seal's checkpoint (none for an unsigned seal).
async fn checkpoint_origin(
    store: &dyn AtomicPublisher,
    signing: Option<&SigningKey>,
    opts: &SealOptions,
) -> Result<Option<String>> {
    match signing {
        Some(_) => Ok(Some(
            checkpoint::origin(store, opts.origin.as_deref()).await?,
        )),
        None => Ok(None),
    }
}

/// Refuse a seal larger than its readers read ([`Param::MaxSealBytes`]).
fn within_limit(store: &dyn AtomicPublisher, key: &str, bytes: &Bytes, seal: &Seal) -> Result<()> {
    let max = store.read_limits().max_seal_bytes;
    if bytes.len() as u64 > max {
        return Err(Error::usage(text![
            format!(
                "{key} would be {} bytes ({} commits), more than ",
                bytes.len(),
                seal.entries.len()
            ),
            Param::MaxSealBytes,
            format!(" {max}: every reader would refuse it; pass a larger "),
            Param::MaxSealBytes,
            " here and to every command that reads this store"
        ]));
    }
    Ok(())
}

/// What refuses a seal before it is drafted: the seal it chains onto does not verify, an
/// unsigned seal after a signed one, compactions no longer as planned.
async fn preflight(
    store: &dyn AtomicPublisher,
    newest: Option<&StoredSeal>,
    signed: bool,
    opts: &SealOptions,
) -> Result<()> {
    base::check_base(store, newest).await?;
    if !signed && !opts.allow_unsigned {
        refuse_unsigned(newest)?;
    }
    if !opts.compactions.is_empty() {
        compactions_still_planned(store, newest, opts).await?;
    }
    Ok(())
}

/// Refuse an unsigned seal after a signed one.
fn refuse_unsigned(newest: Option<&StoredSeal>) -> Result<()> {
    if let Some(Ok(s)) = newest.map(|n| &n.seal) {
        if s.signature.is_some() {
            let id = s
                .public_key
                .as_deref()
                .and_then(|k| crate::history::signing::parse_public_key(k).ok())
                .map_or_else(|| "?".to_string(), |k| key_id(&k));
            return Err(Error::usage(text![
                format!(
                    "the newest seal, {}, is signed (key id {id}): sign this one too (",
                    s.seq
                ),
                Param::SigningKey,
                "), or pass ",
                Param::Unsigned,
                " to publish an unsigned seal after signed ones (verify ",
                Param::SignedFrom,
                " then reports it)"
            ]));
        }
    }
    Ok(())
}

/// Refuse compactions when a seal after the one they were planned at put other
/// compactions into effect.
async fn compactions_still_planned(
    store: &dyn AtomicPublisher,
    newest: Option<&StoredSeal>,
    opts: &SealOptions,
) -> Result<()> {
    let now = newest.map_or(0, |s| s.key_seq);
    for seq in opts.compactions_planned_at + 1..=now {
        let later = crate::history::head::read_seal(store, seq).await?;
        if later
            .as_ref()
            .and_then(|s| s.seal.as_ref().ok())
            .is_some_and(|s| s.compactions.as_ref().is_some_and(|c| !c.is_empty()))
        {
            return Err(Error::Conflict {
                key: seal_key(seq),
                message: format!(
                    "seal {seq} put other compactions into effect after this one was planned (as of seal {}): its records and parts stay unreferenced (`lineage verify` names them); run `lineage compact` again",
                    opts.compactions_planned_at
                ),
            });
        }
    }
    Ok(())
}

/// After seal `seal` (stored as `key`, `bytes`) is published: its locators, tiles and head
/// marker, then a Delta checkpoint when one is due. Returns the Delta version name held by
/// an object not ours, when one is.
async fn finish(
    store: &dyn AtomicPublisher,
    draft: &Draft,
    seal: &Seal,
    key: &str,
    bytes: &Bytes,
    opts: &SealOptions,
) -> Result<Option<DeltaConflict>> {
    let stored = StoredSeal::new(key.to_string(), seal.seq, bytes.clone());
    checkpoint::publish(store, seal.seq, seal).await?;
    let completed = match &draft.all_leaves {
        Some(leaves) => {
            let mut leaves = leaves.clone();
            leaves.extend(
                seal.entries
                    .iter()
                    .map(|e| (e.key.clone(), e.sha256.clone())),
            );
            complete::complete_growth(store, seal.seq, 0, &leaves).await?
        }
        None => complete::complete(store, &stored).await?,
    };
    // The checkpoint is an optimisation for Delta readers: the seal stands without it.
    if let Err(e) = crate::history::delta_checkpoint::write_if_due(
        store,
        seal.seq,
        opts.delta_checkpoint_interval,
        // A seal's Delta version removes files exactly when the seal carries compactions.
        seal.compactions.as_ref().is_some_and(|c| !c.is_empty()),
    )
    .await
    {
        tracing::warn!(seq = seal.seq, error = %e, "Delta checkpoint not written");
    }
    Ok(completed.delta_conflict)
}

/// The outcome of a seal with nothing new to add: the current head, nothing published.
fn nothing_new(prev: Option<&StoredSeal>, full: bool, lost: u64) -> SealOutcome {
    let parsed = prev.and_then(|p| p.seal.as_ref().ok());
    SealOutcome {
        seq: prev.map_or(0, |p| p.key_seq),
        key: prev.map_or_else(String::new, |p| p.key.clone()),
        head: prev.map_or_else(String::new, |p| p.digest.clone()),
        added: 0,
        tree_size: parsed.map_or(0, |s| s.tree_size),
        root: parsed.map_or_else(String::new, |s| s.root.clone()),
        key_id: parsed
            .and_then(|s| s.public_key.as_deref())
            .and_then(|k| crate::history::signing::parse_public_key(k).ok())
            .map(|k| key_id(&k)),
        vkey: None,
        lost_races: lost,
        full_scan: full,
        nothing_new: true,
        not_sealed: Vec::new(),
        delta_conflict: None,
        iceberg: None,
    }
}

/// Complete every seal after the newest marker (a sealer that crashed before its marker,
/// or one still writing: completing is idempotent). Returns the newest seal.
async fn complete_pending(
    store: &dyn AtomicPublisher,
    heads: &Heads,
) -> Result<Option<StoredSeal>> {
    let pending: Vec<&StoredSeal> = match &heads.legacy {
        // No markers at all: only a newest seal of this format is worth completing (an
        // older store's first seal of this format writes everything anyway).
        Some(all) => all
            .last()
            .filter(|s| s.seal.as_ref().is_ok_and(Seal::is_v2))
            .into_iter()
            .collect(),
        None => heads.unmarked.iter().collect(),
    };
    for s in pending {
        s.seal.as_ref().map_err(|m| Error::Corrupt {
            what: "seal",
            key: s.key.clone(),
            message: format!("{m}; run `lineage verify` before sealing again").into(),
        })?;
        complete::complete(store, s).await?;
    }
    Ok(heads.newest().cloned())
}

fn draft_seal(d: &Draft, clock: &dyn Clock, compactions: &[CompactionRef]) -> Result<Seal> {
    let mut frontier = d.frontier.clone();
    for c in &d.new {
        let digest =
            merkle::parse_hash(&c.entry.sha256).ok_or_else(|| Error::internal("bad digest"))?;
        frontier.push(merkle::leaf_hash(&digest));
    }
    Ok(Seal {
        format: SEAL_FORMAT_V2.to_string(),
        seq: d.prev.as_ref().map_or(1, |s| s.key_seq + 1),
        prev_sha256: d.prev.as_ref().map(|s| s.digest.clone()),
        tree_size: frontier.size(),
        root: hex::encode(frontier.root()),
        sealed_utc: rfc3339(clock.now()),
        tool_version: tool_version(),
        entries: d.new.iter().map(|c| c.entry.clone()).collect(),
        frontier: Some(frontier.to_hex()),
        watermark_utc: Some(rfc3339(d.watermark)),
        ahead: Some(d.ahead.clone()),
        index_window: d.window.clone(),
        compactions: (!compactions.is_empty()).then(|| compactions.to_vec()),
        public_key: None,
        key_id: None,
        signature: None,
        checkpoint: None,
    })
}

/// Sign (when a key is given: with the checkpoint's origin) and serialise.
fn build(mut s: Seal, signing: Option<(&SigningKey, &str)>) -> Result<(Seal, Bytes)> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some((k, origin)) = signing {
        s.checkpoint = Some(checkpoint::sign(origin, &s, k)?);
        s.public_key = Some(b64.encode(k.verifying_key().as_bytes()));
        s.key_id = Some(key_id(&k.verifying_key()));
        s.signature = Some(b64.encode(k.sign(&s.signed_message()?).to_bytes()));
    }
    let bytes = Bytes::from(s.to_bytes()?);
    Ok((s, bytes))
}

/// What `seal` made.
#[derive(Debug, Clone, Serialize)]
pub struct SealOutcome {
    /// Sequence number of the new seal.
    pub seq: u64,
    /// Its key.
    pub key: String,
    /// sha256 of its bytes: the new head digest, to be kept outside the store.
    pub head: String,
    /// Commits added by this seal.
    pub added: u64,
    /// Commits covered in total.
    pub tree_size: u64,
    /// Merkle root (hex).
    pub root: String,
    /// Key id of the signing key, when signed.
    pub key_id: Option<String>,
    /// The verifier key of the seal's C2SP checkpoint (`<origin>+<id>+<key>`), when signed:
    /// what a tlog client is given to check it.
    pub vkey: Option<String>,
    /// Sequence numbers lost to concurrent sealers before this one landed.
    pub lost_races: u64,
    /// True when the seal read every seal and listed every pointer (the first seal of
    /// this format, or `--rescan`), false when it read only what was new.
    pub full_scan: bool,
    /// True when no commit was new and nothing was published (without
    /// [`SealOptions::allow_empty`]): the other fields describe the current head (`seq` 0
    /// and empty digests when the store has no seal).
    pub nothing_new: bool,
    /// Pointers read and left out of the seal, because their objects are not pointers of
    /// ours (unparseable, too large, contradicting their keys): sealing goes on without
    /// them, and `verify` names them. Sorted by key.
    pub not_sealed: Vec<NotSealed>,
    /// A Delta version name held by an object not ours: the seal is published and
    /// complete, but the Delta log is not extended past that object until it is gone
    /// (docs/operations.md). `verify` names the object.
    pub delta_conflict: Option<DeltaConflict>,
    /// The seal's Iceberg snapshot, when asked for ([`SealOptions::iceberg`]): the newest
    /// metadata file's key and location.
    pub iceberg: Option<IcebergOutcome>,
}

/// Write the next seal over every commit not sealed yet, with the default options of
/// [`crate::history::sealer::seal_with`] (incremental when the newest seal allows it). A
/// pointer that cannot be parsed, or contradicts its key, is refused rather than sealed.
pub async fn seal(
    store: &dyn AtomicPublisher,
    clock: &dyn Clock,
    signing: Option<&SigningKey>,
) -> Result<SealOutcome> {
    seal_with(store, clock, signing, &Default::default()).await
}

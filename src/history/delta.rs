//! Writing the Delta log ([`crate::format::delta`]): version N is seal N, written by the
//! sealer while it finishes the seal, before its head marker ([`crate::history::complete`]).
//!
//! [`complete_log`] makes versions 0..=N exist for seal N. Usually version N-1 is there
//! (one read) and only version N is written; otherwise (a sealer cut off before its
//! version, or a store sealed before Delta versions existed) the log is listed and every
//! missing version from the first gap on is written, in order. Each version is a pure
//! function of the store's identity, the seals and what they name ([`Builder`]), published
//! create-only; one already there is accepted only when its bytes are exactly these.

use std::collections::BTreeSet;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::base::clock::SystemClock;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::format::compaction::{CompactionRecord, CompactionRef};
use crate::format::delta;
use crate::format::delta::{
    millis, parse_actions, recorded_contract, version_bytes, AddFile, CompactedFile, SealFacts,
    Table, Version,
};
use crate::format::keys;
use crate::format::keys::delta_version_key as version_key;
use crate::format::keys::kind::KeyKind;
use crate::format::pointer::Pointer;
use crate::history::head::read_seal;
use crate::history::identity::ensure_identity;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::{Seal, SealEntry, StoredSeal};
use crate::parts::stats::footer_stats;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;
use crate::schema::contract::{self, Column, ContractVersion, SCHEMA_VERSION};

/// The most a Delta version of ours can hold: each sealed commit is one `add` of at most a
/// few KiB (its path, partition values, tags and stats of at most 64 characters a value),
/// about five times its seal entry, and a seal is at most
/// [`max_seal_bytes`](crate::base::limits::ReadLimits::max_seal_bytes); 8 times that bound.
pub(crate) fn max_version_bytes(store: &dyn AtomicPublisher) -> u64 {
    store.read_limits().max_seal_bytes.saturating_mul(8)
}

/// Version `v`'s bytes, at most [`max_version_bytes`] of them (`None`: not there; a larger
/// object under its key is [`Error::TooLarge`], not read).
pub(crate) async fn read_version(store: &dyn AtomicPublisher, v: u64) -> Result<Option<Bytes>> {
    store
        .get_at_most(&version_key(v), max_version_bytes(store))
        .await
}

/// A compaction record's bytes, at most [`max_seal_bytes`](crate::base::limits::ReadLimits::max_seal_bytes)
/// of them (a record names its sources as a seal names its commits).
pub(crate) async fn read_record(store: &dyn AtomicPublisher, key: &str) -> Result<Option<Bytes>> {
    store
        .get_at_most(key, store.read_limits().max_seal_bytes)
        .await
}

/// Builds version after version: the table as of the last one built.
#[derive(Debug, Clone)]
pub(crate) struct Builder {
    table: Table,
    /// Seal 1's tool version (version 0's engine), when known.
    created_by: Option<String>,
    /// Whether `table.created_ms` is known (seal 1 read): only a `metaData` needs it.
    created_known: bool,
}

fn parsed(s: &StoredSeal) -> Result<&Seal> {
    s.seal.as_ref().map_err(|m| Error::Corrupt {
        what: "seal",
        key: s.key.clone(),
        message: format!("{m}; run `lineage verify`").into(),
    })
}

fn registered(v: &str) -> Result<std::sync::Arc<ContractVersion>> {
    contract::version(v).map_err(|e| {
        Error::Schema(format!(
            "{e}: this lineage-store cannot describe that contract version in the Delta log; \
             seal with the lineage-store that wrote it"
        ))
    })
}

/// Position of a registered version in the registry (oldest first).
fn rank(v: &str) -> Option<usize> {
    contract::versions().iter().position(|c| c.version == v)
}

impl Builder {
    /// The table before version 0: seal 1 gives its creation time.
    pub(crate) fn new(store_id: &str, seal1: &StoredSeal) -> Result<Self> {
        let s = parsed(seal1)?;
        Ok(Builder {
            table: Table {
                id: delta::table_id(store_id),
                created_ms: millis(&s.sealed_utc, "sealed_utc")?,
                contract: SCHEMA_VERSION.to_string(),
            },
            created_by: Some(s.tool_version.clone()),
            created_known: true,
        })
    }

    /// The table after version `prev`, from its bytes (the contract version it records).
    pub(crate) fn after(store_id: &str, prev: u64, bytes: &[u8]) -> Result<Self> {
        let key = version_key(prev);
        let actions = parse_actions(&key, bytes)?;
        let contract = recorded_contract(&actions).ok_or_else(|| Error::Corrupt {
            what: "Delta version",
            key: key.clone(),
            message: "records no lineageStore.contractVersion; run `lineage verify`".into(),
        })?;
        Ok(Builder {
            table: Table {
                id: delta::table_id(store_id),
                created_ms: 0,
                contract,
            },
            created_by: None,
            created_known: false,
        })
    }

    /// Follow a version whose expected bytes could not be built: take the contract version
    /// it records, so the versions after it are still checked.
    pub(crate) fn follow(&mut self, actions: &[(String, serde_json::Value)]) {
        if let Some(c) = recorded_contract(actions) {
            self.table.contract = c;
        }
    }

    /// Version 0's bytes.
    pub(crate) fn create(&self) -> Result<Vec<u8>> {
        let columns = registered(&self.table.contract)?.columns.clone();
        version_bytes(&Version::Create {
            table: &self.table,
            columns: &columns,
            tool_version: self.created_by.as_deref().unwrap_or_default(),
        })
    }

    /// Seal `seal`'s version: its bytes and its adds. Reads every pointer it seals (each
    /// must still be the pointer sealed) and each part's footer (a part that cannot be
    /// read gets an `add` without stats).
    pub(crate) async fn seal(
        &mut self,
        store: &dyn AtomicPublisher,
        seal: &StoredSeal,
    ) -> Result<(Vec<u8>, Vec<AddFile>)> {
        let s = parsed(seal)?;
        let seal_key = seal.key.as_str();
        let adds: Vec<AddFile> = futures::stream::iter(s.entries.clone())
            .map(|e| add_file(store, seal_key, e))
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let new_columns = self.newer_contract(store, &adds).await?;
        let mut compactions = Vec::new();
        for r in s.compactions.iter().flatten() {
            compactions.push(compacted_file(store, seal_key, r).await?);
        }
        let facts = SealFacts {
            seq: seal.key_seq,
            sha256: seal.digest.clone(),
            tree_size: s.tree_size,
            root: s.root.clone(),
            sealed_ms: millis(&s.sealed_utc, "sealed_utc")?,
            tool_version: s.tool_version.clone(),
        };
        let bytes = version_bytes(&Version::Seal {
            seal: &facts,
            table: &self.table,
            new_columns: new_columns.as_deref(),
            adds: &adds,
            compactions: &compactions,
        })?;
        Ok((bytes, adds))
    }

    /// When `adds` bring a contract version newer than the table's: the table moves to it,
    /// and its columns are returned (the version then carries the new schema).
    async fn newer_contract(
        &mut self,
        store: &dyn AtomicPublisher,
        adds: &[AddFile],
    ) -> Result<Option<Vec<Column>>> {
        let newest = adds
            .iter()
            .filter_map(|a| rank(&a.pointer.schema_version).map(|r| (r, &a.pointer.schema_version)))
            .max();
        let Some((r, v)) = newest else {
            return Ok(None);
        };
        if rank(&self.table.contract).is_some_and(|have| r <= have) {
            return Ok(None);
        }
        if !self.created_known {
            let seal1 = read_seal(store, 1)
                .await?
                .ok_or_else(|| Error::NotFound(keys::seal_key(1)))?;
            self.table.created_ms = millis(&parsed(&seal1)?.sealed_utc, "sealed_utc")?;
            self.created_known = true;
        }
        self.table.contract = v.clone();
        Ok(Some(registered(v)?.columns.clone()))
    }
}

/// The `add` of sealed entry `e` (sealed by `seal_key`): its pointer, which must still be
/// the one sealed, and its part footer's stats (`None` when the footer cannot be read).
async fn add_file(store: &dyn AtomicPublisher, seal_key: &str, e: SealEntry) -> Result<AddFile> {
    let bytes = crate::history::pointers::get_pointer(store, &e.key)
        .await?
        .ok_or_else(|| Error::Corrupt {
            what: "pointer",
            key: e.key.clone(),
            message: format!(
                "sealed by {seal_key} but missing: its Delta version cannot be written; run `lineage verify`"
            ).into(),
        })?;
    let digest = sha256_hex(&bytes);
    if !digest.eq_ignore_ascii_case(&e.sha256) {
        return Err(Error::Corrupt {
            what: "pointer",
            key: e.key.clone(),
            message: format!(
                "sha256 {digest}, sealed by {seal_key} as {}: its Delta version cannot be written; run `lineage verify`",
                e.sha256
            ).into(),
        });
    }
    let pointer = Pointer::from_bytes(&e.key, &bytes)?;
    let columns = registered(&pointer.schema_version)?.columns.clone();
    let stats = match footer_stats(store, &pointer.part_path, pointer.size_bytes, &columns).await {
        Ok(s) => Some(s),
        Err(err) => {
            tracing::warn!(part = %pointer.part_path, error = %err, "part footer unreadable: its Delta add carries no stats (the part is not as its pointer records)");
            None
        }
    };
    Ok(AddFile {
        pointer,
        pointer_sha256: e.sha256.to_lowercase(),
        stats,
    })
}

/// The compaction `r` (named by `seal_key`): its record, which must have the digest the
/// seal records, and its part footer's stats (`None` when the footer cannot be read).
async fn compacted_file(
    store: &dyn AtomicPublisher,
    seal_key: &str,
    r: &CompactionRef,
) -> Result<CompactedFile> {
    let bytes = read_record(store, &r.key).await?.ok_or_else(|| Error::Corrupt {
        what: "compaction record",
        key: r.key.clone(),
        message: format!(
            "named by {seal_key} but missing: its Delta version cannot be written; run `lineage verify`"
        ).into(),
    })?;
    let digest = sha256_hex(&bytes);
    if !digest.eq_ignore_ascii_case(&r.sha256) {
        return Err(Error::Corrupt {
            what: "compaction record",
            key: r.key.clone(),
            message: format!(
                "sha256 {digest}, named by {seal_key} as {}: its Delta version cannot be written; run `lineage verify`",
                r.sha256
            ).into(),
        });
    }
    let record = CompactionRecord::from_bytes(&r.key, &bytes)?;
    let columns = registered(&record.schema_version)?.columns.clone();
    let stats = match footer_stats(store, &record.part_path, record.size_bytes, &columns).await {
        Ok(s) => Some(s),
        Err(err) => {
            tracing::warn!(part = %record.part_path, error = %err, "compacted part's footer unreadable: its Delta add carries no stats (the part is not as its record says)");
            None
        }
    };
    Ok(CompactedFile {
        record,
        record_sha256: r.sha256.to_lowercase(),
        stats,
    })
}

/// Publish one version create-only; an object already there must hold exactly `bytes`.
async fn publish_version(store: &dyn AtomicPublisher, v: u64, bytes: Vec<u8>) -> Result<()> {
    let want = Bytes::from(bytes);
    let cmp = want.clone();
    publish_checked(store, &version_key(v), want, move |have| {
        if have == cmp.as_ref() {
            Ok(())
        } else {
            Err(format!(
                "holds other bytes than seal {v} gives (a foreign Delta writer, or an edit); \
                 run `lineage verify`"
            ))
        }
    })
    .await
    .map(|_| ())
}

/// Make Delta versions 0..=`seq` exist (see the module docs). Returns how many versions
/// were written (or found already written by another sealer) from the first missing one.
pub async fn complete_log(store: &dyn AtomicPublisher, seq: u64) -> Result<u64> {
    if seq == 0 {
        return Ok(0);
    }
    // Only seals that exist get versions (a completion with no seal behind it writes none).
    let Some(seal) = read_seal(store, seq).await? else {
        tracing::debug!(seq, "no seal {seq}: no Delta version to write");
        return Ok(0);
    };
    let id = ensure_identity(store, &SystemClock).await?;
    // Usually the version before is there: write only this seal's.
    if let Some(prev) = read_version(store, seq - 1).await? {
        let mut b = Builder::after(&id.store_id, seq - 1, &prev)?;
        let (bytes, _) = b.seal(store, &seal).await?;
        publish_version(store, seq, bytes).await?;
        return Ok(1);
    }
    let listed = listed_versions(store).await?;
    let Some(first) = (0..=seq).find(|v| !listed.contains(v)) else {
        return Ok(0);
    };
    tracing::info!(
        from = first,
        to = seq,
        "writing the Delta versions the log lacks"
    );
    let mut b = if first == 0 {
        let seal1 = read_seal(store, 1)
            .await?
            .ok_or_else(|| Error::NotFound(keys::seal_key(1)))?;
        let b = Builder::new(&id.store_id, &seal1)?;
        publish_version(store, 0, b.create()?).await?;
        b
    } else {
        let prev = store
            .get_at_most(&version_key(first - 1), max_version_bytes(store))
            .await?
            .ok_or_else(|| Error::NotFound(version_key(first - 1)))?;
        Builder::after(&id.store_id, first - 1, &prev)?
    };
    for v in first.max(1)..=seq {
        let seal = read_seal(store, v)
            .await?
            .ok_or_else(|| Error::NotFound(keys::seal_key(v)))?;
        let (bytes, _) = b.seal(store, &seal).await?;
        publish_version(store, v, bytes).await?;
    }
    Ok(seq + 1 - first)
}

/// What [`restore_missing`] did.
#[derive(Debug, Default)]
pub(crate) struct DeltaRestore {
    /// Versions written again (with `dry_run`: that would be).
    pub restored: Vec<u64>,
    /// Versions missing that could not be written again byte-identical, with why.
    pub missing: Vec<(u64, String)>,
}

/// Write again, create-only, every Delta version 0..=`head` the log lacks (`repair`).
/// A version is a pure function of its seal, the pointers it seals and their parts'
/// footers, so the bytes rebuilt are the bytes that were there: built by the sealer's own
/// [`Builder`], from the version before the first missing one. A version whose pointers or
/// part footers cannot all be read (a part still missing) would not be those bytes: it is
/// reported, not written, and nothing after it is. A store with no Delta log at all (sealed
/// before Delta versions existed) is left to its next `seal`.
pub(crate) async fn restore_missing(
    store: &dyn AtomicPublisher,
    head: u64,
    dry_run: bool,
) -> Result<DeltaRestore> {
    let mut out = DeltaRestore::default();
    let listed = listed_versions(store).await?;
    if listed.is_empty() || head == 0 {
        return Ok(out);
    }
    let Some(first) = (0..=head).find(|v| !listed.contains(v)) else {
        return Ok(out);
    };
    let Some(id) = crate::history::identity::read_identity(store).await? else {
        out.missing.push((first, "the store has no identity (`_lineage/store.json`): its Delta versions cannot be rebuilt".into()));
        return Ok(out);
    };
    let Some(mut builder) = first_builder(store, &id.store_id, first, dry_run, &mut out).await?
    else {
        return Ok(out);
    };
    for v in first.max(1)..=head {
        match rebuild(store, &mut builder, v).await? {
            Ok(bytes) if !listed.contains(&v) => {
                if !dry_run {
                    publish_version(store, v, bytes).await?;
                }
                out.restored.push(v);
            }
            Ok(_) => {}
            Err(why) => {
                // Every missing version from here on depends on this one's table state.
                for m in (v..=head).filter(|m| !listed.contains(m)) {
                    out.missing.push((
                        m,
                        if m == v {
                            why.clone()
                        } else {
                            format!("version {v} cannot be rebuilt first")
                        },
                    ));
                }
                break;
            }
        }
    }
    Ok(out)
}

/// The builder to rebuild from version `first` on: version 0 written again (unless
/// `dry_run`) when it is the first missing, else the version before read. `None` (and
/// why, in `out`) when seal 1 is missing.
async fn first_builder(
    store: &dyn AtomicPublisher,
    store_id: &str,
    first: u64,
    dry_run: bool,
    out: &mut DeltaRestore,
) -> Result<Option<Builder>> {
    if first == 0 {
        let Some(seal1) = read_seal(store, 1).await? else {
            out.missing
                .push((0, "seal 1 is missing: restore it first".into()));
            return Ok(None);
        };
        let b = Builder::new(store_id, &seal1)?;
        if !dry_run {
            publish_version(store, 0, b.create()?).await?;
        }
        out.restored.push(0);
        return Ok(Some(b));
    }
    let prev = store
        .get_at_most(&version_key(first - 1), max_version_bytes(store))
        .await?
        .ok_or_else(|| Error::NotFound(version_key(first - 1)))?;
    Ok(Some(Builder::after(store_id, first - 1, &prev)?))
}

/// Version `v` rebuilt byte-identical; the inner `Err` says why it cannot be (its seal
/// missing, a pointer not the one sealed, a part footer unreadable).
async fn rebuild(
    store: &dyn AtomicPublisher,
    builder: &mut Builder,
    v: u64,
) -> Result<std::result::Result<Vec<u8>, String>> {
    Ok(match read_seal(store, v).await? {
        None => Err(format!("seal {v} is missing: restore it first")),
        Some(seal) => match builder.seal(store, &seal).await {
            Err(e) => Err(e.to_string()),
            Ok((_, adds)) if adds.iter().any(|a| a.stats.is_none()) => {
                let unread: Vec<&str> = adds
                    .iter()
                    .filter(|a| a.stats.is_none())
                    .map(|a| a.pointer.part_path.as_str())
                    .collect();
                Err(format!(
                    "the footers of {} cannot be read (restore the parts first): {}",
                    unread.len(),
                    unread.join(", ")
                ))
            }
            Ok((bytes, _)) => Ok(bytes),
        },
    })
}

/// The table's newest Delta version that Delta readers see: the newest version such that
/// versions 0..=it are all there (`None`: the store has no Delta log, e.g. it was sealed
/// only before Delta versions existed, or never). One listing of `_delta_log/`.
pub async fn delta_version(store: &dyn AtomicPublisher) -> Result<Option<u64>> {
    let listed = listed_versions(store).await?;
    Ok((0..).take_while(|v| listed.contains(v)).last())
}

/// The versions listed under `_delta_log/`.
async fn listed_versions(store: &dyn AtomicPublisher) -> Result<BTreeSet<u64>> {
    Ok(store
        .list(keys::DELTA_LOG_PREFIX)
        .await?
        .into_iter()
        .filter_map(|o| match keys::classify(&o.key) {
            KeyKind::DeltaVersion(v) => Some(v),
            _ => None,
        })
        .collect())
}

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
    millis, parse_actions, recorded_contract, recorded_declared, version_bytes, AddFile,
    CompactedFile, SealFacts, Table, Version,
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
                declared: true,
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
                declared: recorded_declared(&actions),
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
        self.table.declared = recorded_declared(actions);
    }

    /// Take the version just built to be its legacy form ([`Built::legacy`], found stored):
    /// the table still does not declare its stats columns.
    pub(crate) fn follow_legacy(&mut self) {
        self.table.declared = false;
    }

    /// Version 0's bytes.
    pub(crate) fn create(&self) -> Result<Vec<u8>> {
        self.create_as(&self.table)
    }

    /// Version 0 as a lineage-store before issue 35 wrote it (no declared stats columns).
    pub(crate) fn create_legacy(&self) -> Result<Vec<u8>> {
        let mut t = self.table.clone();
        t.declared = false;
        self.create_as(&t)
    }

    fn create_as(&self, table: &Table) -> Result<Vec<u8>> {
        let columns = registered(&table.contract)?.columns.clone();
        version_bytes(&Version::Create {
            table,
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
        let b = self.seal_forms(store, seal).await?;
        Ok((b.bytes, b.adds))
    }

    /// Seal `seal`'s version in every form a stored one may rightly have: the one this
    /// lineage-store writes and, when the table does not yet declare its stats columns,
    /// the one a lineage-store before issue 35 wrote (then the table is declared after).
    pub(crate) async fn seal_forms(
        &mut self,
        store: &dyn AtomicPublisher,
        seal: &StoredSeal,
    ) -> Result<Built> {
        let s = parsed(seal)?;
        let seal_key = seal.key.as_str();
        let adds: Vec<AddFile> = futures::stream::iter(s.entries.clone())
            .map(|e| add_file(store, seal_key, e))
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let new_columns = self.newer_contract(store, &adds).await?;
        let legacy_table = (!self.table.declared).then(|| self.table.clone());
        let declared_columns = match (&new_columns, &legacy_table) {
            (None, Some(_)) => Some(self.current_columns(store).await?),
            _ => new_columns.clone(),
        };
        self.table.declared = true;
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
            new_columns: declared_columns.as_deref(),
            adds: &adds,
            compactions: &compactions,
        })?;
        let legacy = legacy_table
            .map(|table| {
                version_bytes(&Version::Seal {
                    seal: &facts,
                    table: &table,
                    new_columns: new_columns.as_deref(),
                    adds: &adds,
                    compactions: &compactions,
                })
            })
            .transpose()?;
        Ok(Built {
            bytes,
            legacy,
            adds,
        })
    }

    /// The columns of the table's contract version, for a `metaData` (seal 1 read for
    /// the table's creation time when not yet known).
    async fn current_columns(&mut self, store: &dyn AtomicPublisher) -> Result<Vec<Column>> {
        self.learn_created(store).await?;
        Ok(registered(&self.table.contract)?.columns.clone())
    }

    async fn learn_created(&mut self, store: &dyn AtomicPublisher) -> Result<()> {
        if !self.created_known {
            let seal1 = read_seal(store, 1)
                .await?
                .ok_or_else(|| Error::NotFound(keys::seal_key(1)))?;
            self.table.created_ms = millis(&parsed(&seal1)?.sealed_utc, "sealed_utc")?;
            self.created_known = true;
        }
        Ok(())
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
        self.learn_created(store).await?;
        self.table.contract = v.clone();
        Ok(Some(registered(v)?.columns.clone()))
    }
}

/// A seal's version as built ([`Builder::seal_forms`]).
pub(crate) struct Built {
    /// Its bytes as this lineage-store writes them.
    pub bytes: Vec<u8>,
    /// Its bytes as a lineage-store before issue 35 wrote them, when the table did not
    /// declare its stats columns before it (a stored version with these bytes is as right).
    pub legacy: Option<Vec<u8>>,
    /// Its adds.
    pub adds: Vec<AddFile>,
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
pub(crate) async fn publish_version(
    store: &dyn AtomicPublisher,
    v: u64,
    bytes: Vec<u8>,
    legacy: Option<Vec<u8>>,
) -> Result<()> {
    let want = Bytes::from(bytes);
    let cmp = want.clone();
    publish_checked(store, &version_key(v), want, move |have| {
        if have == cmp.as_ref() || legacy.as_deref() == Some(have) {
            Ok(())
        } else {
            Err(format!(
                "holds other bytes than seal {v} gives (a foreign Delta writer, a plant, or an \
                 edit); no version is written on top of it (docs/operations.md, \"A Delta \
                 version name taken\"); run `lineage verify`"
            ))
        }
    })
    .await
    .map(|_| ())
}

/// A Delta version name held by an object that is not ours (a foreign Delta writer, or a
/// plant): the sealer writes no version at or after it, and names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeltaConflict {
    /// The version.
    pub version: u64,
    /// Its key (`_delta_log/<version>.json`).
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The version whose object is not ours, when `e` (from [`complete_log`]) says so: a
/// version key taken by other bytes, one that cannot be parsed, or one too large to be
/// ours. Other errors (a sealed pointer missing, the store failing) are not about the log.
pub(crate) fn foreign_version(e: &Error) -> Option<DeltaConflict> {
    let key = match e {
        Error::Conflict { key, .. } | Error::Corrupt { key, .. } | Error::TooLarge { key, .. } => {
            key
        }
        _ => return None,
    };
    keys::parse_delta_version_key(key).map(|version| DeltaConflict {
        version,
        key: key.clone(),
        reason: e.to_string(),
    })
}

/// Version `v` (`key`) is not the version of seal `v`: refused as not ours.
fn not_ours(v: u64, why: &str) -> Error {
    Error::Conflict {
        key: version_key(v),
        message: format!(
            "{why}: not the version of seal {v} (a foreign Delta writer, or a plant); no \
             version is written on top of it (docs/operations.md, \"A Delta version name \
             taken\"); run `lineage verify`"
        ),
    }
}

/// The builder after version `prev` (its bytes `bytes`), once it is known to be ours:
/// version 0 is exactly what seal 1 (`next`, then) gives, a later version records seal
/// `prev` with the digest that seal `next` names as its predecessor. Reads nothing.
fn builder_after_ours(
    store_id: &str,
    prev: u64,
    bytes: &[u8],
    next: &StoredSeal,
) -> Result<Builder> {
    if prev == 0 {
        let b = Builder::new(store_id, next)?;
        if b.create()? != bytes {
            return Err(not_ours(0, "it holds other bytes than seal 1 gives"));
        }
        return Ok(b);
    }
    let actions =
        parse_actions(&version_key(prev), bytes).map_err(|e| not_ours(prev, &e.to_string()))?;
    let info = actions
        .iter()
        .find(|(k, _)| k == "commitInfo")
        .and_then(|(_, v)| v.get("lineageStore"));
    let seq = info.and_then(|i| i.get("sealSeq")).and_then(|v| v.as_u64());
    let sha = info
        .and_then(|i| i.get("sealSha256"))
        .and_then(|v| v.as_str());
    let want = parsed(next)?.prev_sha256.as_deref();
    if seq != Some(prev) || sha.is_none() || sha != want {
        return Err(not_ours(
            prev,
            &format!(
                "it records seal {} with sha256 {}, not seal {prev} with {}",
                seq.map_or("none".into(), |s| s.to_string()),
                sha.unwrap_or("none"),
                want.unwrap_or("none")
            ),
        ));
    }
    Builder::after(store_id, prev, bytes).map_err(|e| not_ours(prev, &e.to_string()))
}

/// Make Delta versions 0..=`seq` exist (see the module docs). Returns how many versions
/// were written (or found already written by another sealer) from the first missing one.
/// A version that is not ours, before `seq` or at it, is an error naming it
/// ([`foreign_version`] tells it apart): nothing is written at or after it.
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
        let mut b = builder_after_ours(&id.store_id, seq - 1, &prev, &seal)?;
        let built = b.seal_forms(store, &seal).await?;
        publish_version(store, seq, built.bytes, built.legacy).await?;
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
        publish_version(store, 0, b.create()?, Some(b.create_legacy()?)).await?;
        b
    } else {
        let prev = read_version(store, first - 1)
            .await?
            .ok_or_else(|| Error::NotFound(version_key(first - 1)))?;
        let next = read_seal(store, first)
            .await?
            .ok_or_else(|| Error::NotFound(keys::seal_key(first)))?;
        builder_after_ours(&id.store_id, first - 1, &prev, &next)?
    };
    for v in first.max(1)..=seq {
        let seal = read_seal(store, v)
            .await?
            .ok_or_else(|| Error::NotFound(keys::seal_key(v)))?;
        let built = b.seal_forms(store, &seal).await?;
        publish_version(store, v, built.bytes, built.legacy).await?;
    }
    Ok(seq + 1 - first)
}

/// The table's newest Delta version that Delta readers see: the newest version such that
/// versions 0..=it are all there (`None`: the store has no Delta log, e.g. it was sealed
/// only before Delta versions existed, or never). One listing of `_delta_log/`.
pub async fn delta_version(store: &dyn AtomicPublisher) -> Result<Option<u64>> {
    let listed = listed_versions(store).await?;
    Ok((0..).take_while(|v| listed.contains(v)).last())
}

/// The versions listed under `_delta_log/`.
pub(crate) async fn listed_versions(store: &dyn AtomicPublisher) -> Result<BTreeSet<u64>> {
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

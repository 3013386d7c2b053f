//! Where the table is: its location for a store ([`table_location`]), whether a recorded
//! location is this store's ([`same_location`]), and the newest metadata file at or
//! before a seal ([`newest_table`], what `lineage files --iceberg` and the report print).

use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::format::iceberg::metadata::{TableMetadata, SEAL_SEQ, SEAL_SHA256};
use crate::format::keys::kind::KeyKind;
use crate::format::keys::{iceberg_metadata_key, IcebergKey, ICEBERG_METADATA_PREFIX};
use crate::history::head::read_seal;
use crate::history::iceberg::build::{self, max_object_bytes};
use crate::publish::AtomicPublisher;

/// The table's location for `store`: where it was opened, as readers outside
/// lineage-store open it (an absolute path on local disk, the URL on an object store).
pub fn table_location(store: &dyn AtomicPublisher) -> String {
    let base = store.describe();
    if let Some(root) = base.strip_prefix("file://") {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.into());
        return root.to_string_lossy().trim_end_matches('/').to_string();
    }
    if base.ends_with("://") {
        return base;
    }
    base.trim_end_matches('/').to_string()
}

/// The Iceberg table as of one seal: its metadata file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IcebergTable {
    /// The seal (snapshot id) the metadata file is the table as of.
    pub seq: u64,
    /// Its key (`_iceberg/metadata/v<N>.metadata.json`).
    pub metadata_key: String,
    /// Its absolute location: what `StaticTable.from_metadata`, `iceberg_scan`,
    /// `scan_iceberg`, `daft.read_iceberg` and a catalog's `metadata_location` are given.
    pub metadata_location: String,
}

/// Whether two table locations are one: equal, or local paths that resolve to the same
/// directory (a store opened through a symlink).
pub(crate) fn same_location(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let local = |p: &str| {
        p.starts_with('/')
            .then(|| std::fs::canonicalize(p).ok())
            .flatten()
    };
    matches!((local(a), local(b)), (Some(x), Some(y)) if x == y)
}

/// The newest metadata file of a seal at or before `seq` (`None`: no seal up to it has
/// one: the store was sealed without `--iceberg`), checked as far as a reader's pointer
/// can be without a rebuild (`verify` rebuilds every object): it records this store's
/// location, and its current snapshot records that seal with that seal's digest. One
/// read when seal `seq` has one; else a listing of `_iceberg/metadata/`.
pub async fn newest_table(store: &dyn AtomicPublisher, seq: u64) -> Result<Option<IcebergTable>> {
    if seq == 0 {
        return Ok(None);
    }
    let key = iceberg_metadata_key(seq);
    let max = max_object_bytes(store);
    let (n, bytes) = match store.get_at_most(&key, max).await? {
        Some(b) => (seq, b),
        None => {
            let listed = store.list(ICEBERG_METADATA_PREFIX).await?;
            let newest = listed
                .iter()
                .filter_map(|o| match crate::format::keys::classify(&o.key) {
                    KeyKind::Iceberg(IcebergKey::Metadata(n)) if n <= seq => Some(n),
                    _ => None,
                })
                .max();
            let Some(n) = newest else {
                return Ok(None);
            };
            let key = iceberg_metadata_key(n);
            let b = store
                .get_at_most(&key, max)
                .await?
                .ok_or_else(|| Error::NotFound(key.clone()))?;
            (n, b)
        }
    };
    let key = iceberg_metadata_key(n);
    let bad = |why: String| Error::Corrupt {
        what: "Iceberg metadata",
        key: key.clone(),
        message: format!("{why}; run `lineage verify`").into(),
    };
    let meta = TableMetadata::parse(&bytes).map_err(&bad)?;
    let here = table_location(store);
    if !same_location(&meta.location, &here) {
        return Err(bad(format!(
            "records the table at {}, not this store's location {here} (Iceberg paths are absolute: a reader given it reads that location's files)",
            meta.location
        )));
    }
    let seal = read_seal(store, n)
        .await?
        .ok_or_else(|| bad(format!("the metadata of seal {n}, which the store lacks")))?;
    let summary = meta.current().map(|s| &s.summary);
    let got = |k: &str| summary.and_then(|s| s.get(k)).map(String::as_str);
    if got(SEAL_SEQ) != Some(n.to_string().as_str())
        || got(SEAL_SHA256) != Some(seal.digest.to_lowercase().as_str())
    {
        return Err(bad(format!(
            "its current snapshot records seal {} with sha256 {}, not seal {n} with {}",
            got(SEAL_SEQ).unwrap_or("none"),
            got(SEAL_SHA256).unwrap_or("none"),
            seal.digest
        )));
    }
    Ok(Some(IcebergTable {
        seq: n,
        metadata_location: build::at(&meta.location, &key),
        metadata_key: key,
    }))
}

//! What a full `verify` checks of the Iceberg metadata ([`crate::format::iceberg`],
//! written by `seal --iceberg`): every object under `_iceberg/` is one the seals give, with
//! exactly the bytes they give (rebuilt by the sealer's own code at the location the
//! newest metadata file records), and every seal up to the newest metadata file has its
//! objects:
//!
//! - `bad_iceberg_object`: a metadata file, manifest list or manifest whose bytes are not
//!   the seals' (diagnosed: a manifest that adds a file no seal adds or drops one a seal
//!   adds, a changed count or size, a manifest list naming other manifests, a metadata
//!   file with other snapshots or fields), or a metadata file of a seal the chain lacks;
//! - `missing_iceberg_object`: an object of a seal at or before the newest metadata file
//!   that is not there (metadata files after the newest are not written yet: seals made
//!   without `--iceberg`);
//! - `unknown_iceberg_object`: anything else under `_iceberg/` (`version-hint.text`, a
//!   planted file, a manifest of a seal that writes none);
//! - `iceberg_location_mismatch`: the newest metadata file records another table location
//!   than the store's own ([`table_location`]): its absolute paths name another
//!   location's files (a replica or copy holding its source's metadata). The objects are
//!   then rebuilt at the location they record, so a changed one is still named.
//!
//! A store without `_iceberg/` was never sealed with `--iceberg`: nothing to check.
//! `verify --since-seal SEQ` ([`check_since`]) checks the same of the objects of seals
//! SEQ and later, and every object not ours by name.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::audit::chain::Chain;
use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::format::iceberg::manifest::{manifest_entries, manifest_list_entries, Entry};
use crate::format::keys::kind::KeyKind;
use crate::format::keys::ICEBERG_PREFIX;
use crate::format::keys::{iceberg_metadata_key, IcebergKey};
use crate::history::iceberg::locate::{same_location, table_location};
use crate::history::iceberg::{expected_objects_since, iceberg_seal_of, max_object_bytes};
use crate::history::identity::read_identity;
use crate::publish::{AtomicPublisher, ObjectInfo};

/// Check the listed objects under `_iceberg/` against the chain; `store_id` from the
/// store's identity (`None`: unreadable, reported elsewhere; nothing is rebuilt).
pub(crate) async fn check(
    store: &dyn AtomicPublisher,
    chain: &Chain,
    store_id: Option<&str>,
    listed: &[&ObjectInfo],
) -> Result<Vec<Problem>> {
    let scope = Scope {
        head: chain.head().map_or(0, |(n, _)| n),
        since: 1,
        store_id,
        rebuild: !chain.broken,
    };
    judge(store, &scope, listed).await
}

/// What `verify --since-seal SEQ` checks of `_iceberg/` (listed whole, one request per
/// 1,000 keys): the objects of seals SEQ..=N (N the newest metadata file), rebuilt on the
/// stored table of seal SEQ−1 ([`expected_objects_since`]) and compared byte for byte;
/// every object there that is not ours by name; metadata files of seals after `head`;
/// the table location of the newest metadata file. Objects of seals before SEQ are a
/// full verify's.
pub(crate) async fn check_since(
    store: &dyn AtomicPublisher,
    since: u64,
    head: u64,
) -> Result<Vec<Problem>> {
    let listed = store.list(ICEBERG_PREFIX).await?;
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    // Unreadable: nothing is rebuilt (a full verify names the identity).
    let store_id = read_identity(store)
        .await
        .ok()
        .flatten()
        .map(|i| i.store_id);
    let listed: Vec<&ObjectInfo> = listed
        .iter()
        .filter(|o| !matches!(crate::format::keys::classify(&o.key), KeyKind::Temp))
        .collect();
    let scope = Scope {
        head,
        since,
        store_id: store_id.as_deref(),
        rebuild: true,
    };
    judge(store, &scope, &listed).await
}

/// What one check covers.
struct Scope<'a> {
    /// The chain's newest seal.
    head: u64,
    /// The first seal whose objects are checked (1: all).
    since: u64,
    /// The store id (`None`: nothing is rebuilt).
    store_id: Option<&'a str>,
    /// Whether the chain holds together well enough to rebuild from.
    rebuild: bool,
}

async fn judge(
    store: &dyn AtomicPublisher,
    scope: &Scope<'_>,
    listed: &[&ObjectInfo],
) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    if listed.is_empty() {
        return Ok(out);
    }
    let head = scope.head;
    let mut metadata: BTreeMap<u64, &ObjectInfo> = BTreeMap::new();
    for o in listed {
        if let KeyKind::Iceberg(IcebergKey::Metadata(n)) = crate::format::keys::classify(&o.key) {
            metadata.insert(n, o);
        }
    }
    for (n, o) in metadata.range(head + 1..) {
        out.push(Problem::new(
            ProblemKind::BadIcebergObject,
            &o.key,
            format!(
                "the metadata of seal {n}, which the chain does not hold (its head is seal {head})"
            ),
        ));
    }
    let newest = metadata
        .range(..=head)
        .next_back()
        .map(|(n, _)| *n)
        .unwrap_or(0);
    let location = location(store, &metadata, newest).await;
    if let Some(p) = location
        .as_deref()
        .and_then(|l| elsewhere(store, l, newest))
    {
        out.push(p);
    }
    let expected = match (scope.store_id, location, newest) {
        (Some(id), Some(loc), n) if n >= scope.since && n > 0 && scope.rebuild => {
            match expected_objects_since(store, id, &loc, scope.since, n).await {
                Ok(e) => e,
                Err(e) => {
                    out.push(Problem::new(
                        ProblemKind::BadIcebergObject,
                        &iceberg_metadata_key(n),
                        format!("cannot be rebuilt from the seals: {e}"),
                    ));
                    return Ok(out);
                }
            }
        }
        (_, None, n) if n > 0 => {
            out.push(Problem::new(
                ProblemKind::BadIcebergObject,
                &iceberg_metadata_key(n),
                "records no table location: not a metadata file lineage-store writes",
            ));
            Vec::new()
        }
        _ => Vec::new(),
    };
    let listed_keys: BTreeSet<&str> = listed.iter().map(|o| o.key.as_str()).collect();
    let expected_keys: BTreeSet<&str> = expected.iter().map(|(k, _)| k.as_str()).collect();
    for (key, want) in &expected {
        if !listed_keys.contains(key.as_str()) {
            out.push(Problem::new(
                ProblemKind::MissingIcebergObject,
                key,
                format!("seal {newest}'s table names it (Iceberg readers of it fail)"),
            ));
            continue;
        }
        let have = store.get_at_most(key, max_object_bytes(store)).await?;
        match have {
            Some(h) if h.as_ref() == want.as_slice() => {}
            Some(h) => out.push(Problem::new(
                ProblemKind::BadIcebergObject,
                key,
                differs(key, &h, want),
            )),
            None => out.push(Problem::new(
                ProblemKind::MissingIcebergObject,
                key,
                "listed, then gone",
            )),
        }
    }
    for o in listed {
        let seal = iceberg_seal_of(&o.key);
        let beyond = matches!(
            crate::format::keys::classify(&o.key),
            KeyKind::Iceberg(IcebergKey::Metadata(n)) if n > head
        );
        // Objects of seals before `since` are a full verify's to judge.
        let earlier = seal.is_some_and(|n| n < scope.since);
        if !expected_keys.contains(o.key.as_str())
            && !beyond
            && !earlier
            && !ours_not_yet(&o.key, newest)
        {
            out.push(Problem::new(
                ProblemKind::UnknownIcebergObject,
                &o.key,
                format!(
                    "{} bytes under `_iceberg/`, not an object the seals give",
                    o.size
                ),
            ));
        }
    }
    Ok(out)
}

/// The problem of metadata recording the table at `recorded` when the store is opened
/// elsewhere (`None` when it is this store's location).
fn elsewhere(store: &dyn AtomicPublisher, recorded: &str, newest: u64) -> Option<Problem> {
    let own = table_location(store);
    if same_location(recorded, &own) {
        return None;
    }
    Some(Problem::new(
        ProblemKind::IcebergLocationMismatch,
        &iceberg_metadata_key(newest),
        format!(
            "records the table at {recorded}, but this store is at {own}: its manifest lists and manifests name the files at {recorded} (Iceberg paths are absolute), not this location's sealed parts, so an Iceberg reader given it reads the other location's files"
        ),
    ))
}

/// An object of a seal after the newest metadata file (a sealer still writing it).
fn ours_not_yet(key: &str, newest: u64) -> bool {
    match crate::format::keys::classify(key) {
        KeyKind::Iceberg(IcebergKey::Manifest(n) | IcebergKey::ManifestList(n)) => n > newest,
        _ => false,
    }
}

/// The table location the newest metadata file (or, unreadable, the one before) records.
async fn location(
    store: &dyn AtomicPublisher,
    metadata: &BTreeMap<u64, &ObjectInfo>,
    newest: u64,
) -> Option<String> {
    for (_, o) in metadata.range(..=newest).rev() {
        let Ok(Some(b)) = store.get_at_most(&o.key, max_object_bytes(store)).await else {
            continue;
        };
        if let Some(l) = serde_json::from_slice::<Value>(&b).ok().and_then(|v| {
            v.get("location")
                .and_then(Value::as_str)
                .map(str::to_string)
        }) {
            return Some(l);
        }
    }
    None
}

/// How stored object `key` (`have`) differs from what the seals give (`want`).
fn differs(key: &str, have: &[u8], want: &[u8]) -> String {
    let kind = crate::format::keys::classify(key);
    let detail = match kind {
        KeyKind::Iceberg(IcebergKey::Manifest(_)) => {
            manifest_differs(manifest_entries(have), manifest_entries(want))
        }
        KeyKind::Iceberg(IcebergKey::ManifestList(_)) => {
            match (manifest_list_entries(have), manifest_list_entries(want)) {
                (Ok(h), Ok(w)) => {
                    let hp: Vec<&str> = h.iter().map(|m| m.path.as_str()).collect();
                    let wp: Vec<&str> = w.iter().map(|m| m.path.as_str()).collect();
                    if hp != wp {
                        Some(format!("names manifests {hp:?}, the seals give {wp:?}"))
                    } else {
                        Some("a manifest's length, counts or sequence numbers changed".into())
                    }
                }
                (Err(e), _) => Some(format!("cannot be read as a manifest list of ours: {e}")),
                _ => None,
            }
        }
        KeyKind::Iceberg(IcebergKey::Metadata(_)) => metadata_differs(have, want),
        _ => None,
    };
    format!(
        "{} bytes, not the {} bytes the seals give{}",
        have.len(),
        want.len(),
        detail.map_or(String::new(), |d| format!(": {d}"))
    )
}

fn manifest_differs(
    have: std::result::Result<Vec<Entry>, String>,
    want: std::result::Result<Vec<Entry>, String>,
) -> Option<String> {
    let (h, w) = match (have, want) {
        (Ok(h), Ok(w)) => (h, w),
        (Err(e), _) => return Some(format!("cannot be read as a manifest of ours: {e}")),
        _ => return None,
    };
    let by_path = |v: &[Entry]| -> BTreeMap<String, Entry> {
        v.iter().map(|e| (e.file.path.clone(), e.clone())).collect()
    };
    let (hm, wm) = (by_path(&h), by_path(&w));
    let mut why = Vec::new();
    for p in hm.keys().filter(|p| !wm.contains_key(*p)) {
        why.push(format!("lists {p}, which no seal adds here"));
    }
    for p in wm.keys().filter(|p| !hm.contains_key(*p)) {
        why.push(format!("drops {p}, which the seal adds"));
    }
    for (p, e) in &hm {
        if let Some(x) = wm.get(p).filter(|x| *x != e) {
            why.push(format!(
                "{p}: status {}, {} records, {} bytes, snapshot {}; the seals give status {}, {} records, {} bytes, snapshot {}",
                e.status, e.file.record_count, e.file.size, e.snapshot_id,
                x.status, x.file.record_count, x.file.size, x.snapshot_id
            ));
        }
    }
    if why.is_empty() {
        why.push("entries in another order or partition values changed".into());
    }
    Some(why.join("; "))
}

fn metadata_differs(have: &[u8], want: &[u8]) -> Option<String> {
    let Ok(Value::Object(h)) = serde_json::from_slice::<Value>(have) else {
        return Some("not a JSON object".into());
    };
    let Ok(Value::Object(w)) = serde_json::from_slice::<Value>(want) else {
        return None;
    };
    let keys: BTreeSet<&String> = h.keys().chain(w.keys()).collect();
    let mut fields: Vec<String> = Vec::new();
    for k in keys {
        if h.get(k) != w.get(k) {
            fields.push(if k == "snapshots" {
                snapshots_differ(h.get(k), w.get(k))
            } else {
                format!("`{k}`")
            });
        }
    }
    Some(if fields.is_empty() {
        "the same fields, formatted otherwise".to_string()
    } else {
        format!("differs in {}", fields.join(", "))
    })
}

fn snapshots_differ(have: Option<&Value>, want: Option<&Value>) -> String {
    let list = |v: Option<&Value>| -> BTreeMap<i64, Value> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| Some((s.get("snapshot-id")?.as_i64()?, s.clone())))
            .collect()
    };
    let (h, w) = (list(have), list(want));
    let ids: BTreeSet<i64> = h.keys().chain(w.keys()).copied().collect();
    let changed: Vec<String> = ids
        .into_iter()
        .filter(|i| h.get(i) != w.get(i))
        .map(|i| i.to_string())
        .collect();
    format!("`snapshots` (snapshot ids {})", changed.join(", "))
}

//! Restoring the Delta versions a store's log lacks (`lineage repair`): each written again
//! byte-identical by the sealer's own [`Builder`], from the version before the first one
//! missing.

use crate::base::error::{Error, Result};
use crate::format::keys::delta_version_key as version_key;
use crate::history::delta::{listed_versions, max_version_bytes, publish_version, Builder};
use crate::history::head::read_seal;
use crate::publish::AtomicPublisher;

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
                    publish_version(store, v, bytes, None).await?;
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
            publish_version(store, 0, b.create()?, None).await?;
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

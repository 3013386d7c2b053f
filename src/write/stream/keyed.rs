//! An append with a commit key ([`crate::write::commit_key`]): claim the key for the
//! payload's digest before anything is published, and check an older format-1 claim by
//! encoding every flush once without publishing.

use std::sync::Arc;

use futures::stream::FuturesOrdered;
use futures::StreamExt;

use crate::base::error::{Error, Result};
use crate::base::time::rfc3339;
use crate::format::claim::derived_commit_id;
use crate::format::claim::payload_sha256;
use crate::format::claim::ClaimedCommit;
use crate::parts::encode::{self, EncodedPart, PartEncoding};
use crate::write::commit_key::{self, Claimed};
use crate::write::flush::WriteConfig;
use crate::write::input::source::BatchSource;
use crate::write::stream::first_pass::{conform_valid, reader, spawn_first_pass, FirstPass};
use crate::write::stream::group::Grouper;
use crate::write::stream::payload_summary::PayloadSummary;
use crate::write::stream::version::VersionPin;
use crate::write::validate::Validator;

/// Claim `key` for the payload; the encoder settings to write with, and, when the claim
/// stands for this payload written as `older` (the version text input came as, which a
/// binary from before the version written now wrote it as), the first pass of the payload
/// as that version: the retry is the same commit, written as it was.
pub(super) async fn claim(
    writer: &WriteConfig,
    source: Arc<dyn BatchSource>,
    version: &VersionPin,
    key: &str,
    payload: &PayloadSummary,
    older: Option<Arc<crate::schema::contract::ContractVersion>>,
) -> Result<(PartEncoding, Option<FirstPass>)> {
    // The store's identity is created with the first part (`publish_flush`), not here:
    // a claim refused as a conflict publishes nothing at all.
    let store = writer.store.as_ref();
    let now = rfc3339(writer.clock.now());
    let resume = writer.resume;
    let may_differ = older.is_some();
    match commit_key::claim(
        store,
        key,
        payload,
        PartEncoding::default(),
        now,
        resume,
        may_differ,
    )
    .await?
    {
        Claimed::Ours(how, encoding) => {
            tracing::info!(commit_key = key, ?how, ?encoding, payload = %payload.payload_sha256, "commit key claimed");
            Ok((encoding, None))
        }
        Claimed::Other(other) => {
            let encoding = PartEncoding::from_tag(other.part_encoding)?;
            if let Some(older) = older {
                let pin = VersionPin::new(Some(&older.version))?;
                let pass = spawn_first_pass(writer, &source, pin).await?;
                if pass.summary.as_ref().map(|s| &s.payload_sha256) == Some(&other.payload_sha256) {
                    tracing::info!(commit_key = key, version = %older.version, "the key's claim stands for this payload written as {}: writing it as that", older.version);
                    return Ok((encoding, Some(pass)));
                }
            }
            if !resume {
                return Err(Error::Conflict {
                    key: crate::format::keys::commit_key_claim_key(key),
                    message: commit_key::conflict_message(
                        key,
                        &other.payload_sha256,
                        &payload.payload_sha256,
                    ),
                });
            }
            tracing::warn!(commit_key = key, claimed = %other.payload_sha256, ours = %payload.payload_sha256, "resuming a commit key claimed for another payload: committed flushes are kept");
            Ok((encoding, None))
        }
        Claimed::Format1(old) => {
            tracing::info!(
                commit_key = key,
                "format-1 claim found: comparing part digests before publishing"
            );
            let ours = format1_digest(writer, source, version.clone(), key).await?;
            if ours == old.payload_sha256 || resume {
                Ok((PartEncoding::V1, None))
            } else {
                Err(Error::Conflict {
                    key: crate::format::keys::commit_key_claim_key(key),
                    message: commit_key::conflict_message(key, &old.payload_sha256, &ours),
                })
            }
        }
    }
}

/// The format-1 payload digest of `source`: encode every flush with the settings format-1
/// claims were written with ([`PartEncoding::V1`]; never more than one per encoder at
/// once, nothing kept but its sha256), publish nothing.
async fn format1_digest(
    writer: &WriteConfig,
    source: Arc<dyn BatchSource>,
    version: VersionPin,
    key: &str,
) -> Result<String> {
    let mut grouper = Grouper::new(writer.batch_rows, writer.max_buffered_bytes);
    let mut v = Validator::new();
    let (validated, typed) = (source.validated(), source.typed());
    let mut pending = FuturesOrdered::new();
    let mut done: Vec<(String, String, u64, EncodedPart)> = Vec::new();
    let encoders = writer.encoders();
    let mut rx = reader(source);
    let mut last = false;
    while !last {
        let flushes = match rx.recv().await {
            Some(b) => {
                let (batch, _) = conform_valid(&version, &mut v, b?, validated, typed)?;
                grouper.push(&batch, chrono::DateTime::UNIX_EPOCH, false)?
            }
            None => {
                last = true;
                grouper.finish()?
            }
        };
        for f in flushes {
            let id = derived_commit_id(&f.run_id, &f.target_crs, key, f.index_in_group).to_string();
            pending.push_back(async move {
                let enc = crate::base::pool::run(move || {
                    encode::encode_with(&f.rows.into_batch()?, &id, PartEncoding::V1)
                })
                .await??;
                Ok::<_, Error>((f.run_id, f.target_crs, f.index_in_group, enc))
            });
            while pending.len() >= encoders {
                if let Some(r) = pending.next().await {
                    done.push(r?);
                }
            }
        }
    }
    while let Some(r) = pending.next().await {
        done.push(r?);
    }
    Ok(payload_sha256(&format1_order(grouper.partitions(), done)))
}

/// The encoded flushes as the commits a format-1 claim lists: partition by partition (in
/// the order of `partitions`, their first appearance), then by index in the partition.
fn format1_order(
    partitions: Vec<(String, String)>,
    mut done: Vec<(String, String, u64, EncodedPart)>,
) -> Vec<ClaimedCommit> {
    let rank: std::collections::HashMap<(String, String), usize> = partitions
        .into_iter()
        .enumerate()
        .map(|(i, p)| (p, i))
        .collect();
    done.sort_by_key(|(r, c, i, _)| (rank.get(&(r.clone(), c.clone())).copied(), *i));
    done.into_iter()
        .map(|(run_id, target_crs, _, e)| ClaimedCommit {
            run_id,
            target_crs,
            commit_id: e.commit_id,
            sha256: e.sha256,
            rows: e.rows,
        })
        .collect()
}

//! The "check" step of the verify pipeline: each pointer's part, against its pointer.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use futures::StreamExt;

use crate::audit::findings::{ProblemKind, Progress, Report};
use crate::audit::verify::options::VerifyOptions;
use crate::base::digest::Want;
use crate::base::error::Error;
use crate::base::rng::Rng;
use crate::base::time::rfc3339_us;
use crate::format::pointer::Pointer;
use crate::parts::read::facts::{hash_and_facts, read_facts};
use crate::parts::read::PartFacts;
use crate::publish::AtomicPublisher;

/// Which pointers' parts get hashed: all, or a sample of `--sample` of them.
fn choose_hashed(
    opts: &VerifyOptions,
    report: &mut Report,
    pointers: &[(String, Pointer)],
) -> Vec<bool> {
    let mut hash: Vec<bool> = vec![true; pointers.len()];
    if let Some(n) = opts.sample {
        let seed = opts.sample_seed.unwrap_or_else(|| {
            let mut b = [0u8; 8];
            let _ = crate::base::rng::os_random(&mut b);
            u64::from_le_bytes(b)
        });
        report.sample_seed = Some(seed);
        let mut candidates: Vec<usize> = (0..hash.len()).filter(|&i| hash[i]).collect();
        // Sort by key first so a seed picks the same parts whatever the listing order.
        candidates.sort_by(|&a, &b| pointers[a].0.cmp(&pointers[b].0));
        let mut rng = Rng::new(seed);
        for i in 0..candidates.len().min(n) {
            let j = i + (rng.next_u64() % (candidates.len() - i) as u64) as usize;
            candidates.swap(i, j);
        }
        for &i in candidates.iter().skip(n) {
            hash[i] = false;
        }
    }
    hash
}

/// The "check" step of the verify pipeline: every pointer's part exists with the recorded
/// size, footer, rows and ranges, and (all, or a `--sample`) has the recorded digests.
/// `listed_size`: the part's size from the strategy's listing, when it listed parts (a
/// part missing from it is looked up again: a listing is not a snapshot). Returns the
/// store ids the footers read name, with how many parts name each.
pub(crate) async fn check_parts(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    report: &mut Report,
    pointers: Vec<(String, Pointer)>,
    listed_size: &(dyn Fn(&str) -> Option<u64> + Sync),
) -> BTreeMap<String, u64> {
    let hash = choose_hashed(opts, report, &pointers);
    let progress = opts.progress.clone().unwrap_or_default();
    progress
        .parts_total
        .store(pointers.len() as u64, Ordering::Relaxed);
    let bytes_total: u64 = pointers
        .iter()
        .zip(&hash)
        .filter(|(_, h)| **h)
        .map(|((_, p), _)| p.size_bytes)
        .sum();
    progress.bytes_total.store(bytes_total, Ordering::Relaxed);
    let progress = &progress;
    let results: Vec<(Pointer, Option<Want>, Checked)> =
        futures::stream::iter(pointers.into_iter().zip(hash))
            .map(|((key, p), hash)| {
                let listed = listed_size(&p.part_path);
                // The digests to recompute: what --digest asks of what this pointer records.
                let want = hash.then(|| Want::for_check(opts.digest, p.blake3.is_some()));
                async move {
                    let found = check_part(store, &key, &p, listed, want, progress).await;
                    progress.parts_done.fetch_add(1, Ordering::Relaxed);
                    (p, want, found)
                }
            })
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
    let mut store_ids: BTreeMap<String, u64> = BTreeMap::new();
    for (p, hashed, (found, store_id)) in results {
        if let Some(id) = store_id {
            *store_ids.entry(id).or_default() += 1;
        }
        if found.is_empty() {
            report.parts_ok += 1;
            report.rows += p.row_count;
            if let Some(want) = hashed {
                report.parts_hashed += 1;
                report.parts_sha256_checked += u64::from(want.sha256);
                report.parts_blake3_checked += u64::from(want.blake3);
                report.bytes_hashed += p.size_bytes;
            } else {
                report.parts_not_hashed += 1;
            }
        }
        for (kind, detail) in found {
            report.push(kind, &p.part_path, detail);
        }
    }
    store_ids
}

/// Problems found with one part, as (kind, detail).
type Found = Vec<(ProblemKind, String)>;

/// What checking one part found, and the store id its footer names.
type Checked = (Found, Option<String>);

/// The problems of one pointer's part (empty when it checks out), and the store id its
/// footer names; `want`: the digests to recompute, `None` to check existence, size and
/// footer only.
async fn check_part(
    store: &dyn AtomicPublisher,
    key: &str,
    p: &Pointer,
    listed: Option<u64>,
    want: Option<Want>,
    progress: &Progress,
) -> Checked {
    let size = match part_size(store, key, p, listed).await {
        Ok(size) => size,
        Err(found) => return (found, None),
    };
    if size != p.size_bytes {
        let why = format!("{size} bytes, pointer {key} records {}", p.size_bytes);
        return (vec![(ProblemKind::SizeMismatch, why)], None);
    }
    let mut out = Vec::new();
    let facts = if let Some(want) = want {
        let on_bytes = |n: u64| {
            progress.bytes_done.fetch_add(n, Ordering::Relaxed);
        };
        let (got, facts) = hash_and_facts(store, &p.part_path, size, want, true, &on_bytes).await;
        match got {
            Ok(got) => {
                let pk = format!("pointer {key}");
                let bad = got.mismatches(&p.sha256, p.blake3.as_deref(), &pk);
                if !bad.is_empty() {
                    out.push((ProblemKind::DigestMismatch, bad.join("; ")));
                }
            }
            Err(e) => out.push((ProblemKind::MissingPart, format!("cannot read: {e}"))),
        }
        facts
    } else {
        read_facts(store, &p.part_path, size, true).await
    };
    let store_id = facts.as_ref().ok().and_then(|f| f.store_id.clone());
    match facts {
        Ok(f) => {
            let mut why: Vec<String> = f
                .mismatch(&p.run_id, &p.target_crs, &p.commit_id)
                .into_iter()
                .collect();
            if f.schema_problem.is_none() {
                why.extend(summary_mismatch(&f, p, key));
            }
            if !why.is_empty() {
                out.push((ProblemKind::FooterMismatch, why.join("; ")));
            }
            if let Some(why) = writer_signature_problem(store, p, size, &f).await {
                out.push((ProblemKind::BadWriterSignature, why));
            }
        }
        Err(e) => out.push((ProblemKind::FooterMismatch, e.to_string())),
    }
    (out, store_id)
}

/// Why the writer signature of a signed part does not hold, or `None` (unsigned, or it
/// holds). Signed by whichever key its footer names: the check is that the part holds
/// together, not who signed it (`repair --writer-key` asks that). The signed bytes are
/// hashed again only for an adopted part: any other part's bytes are bound by the digest
/// its pointer recorded when it was written, which the part check compares.
async fn writer_signature_problem(
    store: &dyn AtomicPublisher,
    p: &Pointer,
    size: u64,
    f: &PartFacts,
) -> Option<String> {
    use crate::parts::writer_sig::{check_writer_signature, WriterKeys};
    if f.writer_sig.is_unsigned() {
        return None;
    }
    let body = match (p.adopted, f.writer_sig.signed_len()) {
        (true, Some(n)) => {
            let d = crate::parts::read::stream_digests_chunked(
                store,
                &p.part_path,
                n.min(size),
                crate::parts::read::HASH_CHUNK_BYTES,
                Want::SHA256,
                &|_| {},
            )
            .await;
            match d {
                Ok(d) => d.sha256,
                Err(e) => return Some(format!("its signed bytes cannot be read: {e}")),
            }
        }
        _ => None,
    };
    let v = check_writer_signature(&f.signed_footer(), body.as_deref(), WriterKeys::Any);
    (!v.is_verified()).then(|| v.describe())
}

/// The size of pointer `key`'s part `p`: as `listed`, else looked up (a read of none of
/// it, which learns the size first: `fstat` of the opened file, an object store's response
/// headers; not a listing of its directory, which on local disk reads every name of the
/// partition); `Err` holds the problem when it is not there (or only a symlink is).
async fn part_size(
    store: &dyn AtomicPublisher,
    key: &str,
    p: &Pointer,
    listed: Option<u64>,
) -> Result<u64, Found> {
    if let Some(s) = listed {
        return Ok(s);
    }
    let missing = |detail: String| Err(vec![(ProblemKind::MissingPart, detail)]);
    match store.get_at_most(&p.part_path, 0).await {
        Ok(Some(b)) => Ok(b.len() as u64),
        Err(Error::TooLarge { size, .. }) => Ok(size),
        Ok(None) => missing(format!("recorded by {key}, not in the store")),
        Err(Error::Symlink { .. }) => missing(format!(
            "recorded by {key}; only a symlink is there, which is never followed"
        )),
        Err(e) => missing(format!("cannot read: {e}")),
    }
}

/// Where the part's row count, sequence range or event-time range contradicts the summary
/// its pointer records (so an edited pointer field is caught even before a seal pins it).
fn summary_mismatch(f: &PartFacts, p: &Pointer, key: &str) -> Vec<String> {
    let mut why = Vec::new();
    if f.schema_version.as_deref() != Some(p.schema_version.as_str()) {
        why.push(format!(
            "footer schema version {}, pointer {key} records {}",
            f.schema_version.as_deref().unwrap_or("(none)"),
            p.schema_version
        ));
    }
    if f.rows != p.row_count {
        why.push(format!(
            "{} rows, pointer {key} records {}",
            f.rows, p.row_count
        ));
    }
    let seq = f.sequence.unwrap_or((0, 0));
    if seq != (p.first_sequence, p.last_sequence) {
        why.push(format!(
            "sequence {}..{}, pointer {key} records {}..{}",
            seq.0, seq.1, p.first_sequence, p.last_sequence
        ));
    }
    let (lo, hi) = f.event_time_us.unwrap_or((0, 0));
    let (lo, hi) = (rfc3339_us(lo), rfc3339_us(hi));
    if lo != p.min_event_time_utc || hi != p.max_event_time_utc {
        why.push(format!(
            "event_time_utc {lo}..{hi}, pointer {key} records {}..{}",
            p.min_event_time_utc, p.max_event_time_utc
        ));
    }
    why
}

//! The seal stage: the source's seals copied in order, each only once every pointer it
//! covers is at the destination; seals only the destination holds named.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::{Ctx, Done, Handled};
use crate::base::digest::sha256_hex;
use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::seal_key;
use crate::history::seal::StoredSeal;
use crate::replicate::kinds::Kind;
use crate::replicate::types::{Conflict, Head};

/// Copy the source's seals in order. Returns what was handled and the newest seal the
/// destination now holds in agreement with the source.
pub(super) async fn copy_seals(
    ctx: &Ctx<'_>,
    handled: &[Handled],
) -> Result<(Vec<Handled>, Option<Head>)> {
    let at_dst = pointers_at_dst(ctx, handled);
    let mut problems: HashMap<&str, String> = HashMap::new();
    for p in &ctx.chain.problems {
        problems
            .entry(p.key.as_str())
            .or_insert_with(|| format!("{}: {}", p.kind.name(), p.detail));
    }
    let mut out = Vec::new();
    let mut head = None;
    for (expected, s) in (1u64..).zip(&ctx.chain.seals) {
        if ctx.stopping() {
            return Ok((out, head));
        }
        let kind = Kind::Seal(s.key_seq);
        let this_head = Head {
            seq: s.key_seq,
            sha256: s.digest.clone(),
        };
        if s.key_seq != expected {
            let why = format!(
                "seal {expected} is missing at the source, so seals from {} on are not copied",
                s.key_seq
            );
            out.push(Handled::new(
                seal_key(expected),
                kind,
                Done::Refused(why),
                None,
            ));
            break;
        }
        if ctx.r.settled.get(&s.key) == Some(&s.digest) {
            head = Some(this_head);
            continue;
        }
        if let Some(why) = seal_refusal(ctx, s, &problems, &at_dst) {
            out.push(Handled::new(&s.key, kind, Done::Refused(why), None));
            break;
        }
        let done = ctx.put_small(&s.key, s.bytes.clone(), &s.digest).await?;
        ctx.progress.objects_done.fetch_add(1, Ordering::Relaxed);
        let ok = matches!(done, Done::Copied(_) | Done::Present);
        out.push(Handled::new(&s.key, kind, done, Some(s.digest.clone())));
        if !ok {
            break;
        }
        head = Some(this_head);
    }
    Ok((out, head))
}

/// Pointers at the destination with their digests: this pass's and earlier passes'.
fn pointers_at_dst<'a>(ctx: &'a Ctx<'_>, handled: &'a [Handled]) -> HashMap<&'a str, &'a str> {
    let mut at_dst: HashMap<&str, &str> = ctx
        .r
        .settled
        .iter()
        .map(|(k, d)| (k.as_str(), d.as_str()))
        .collect();
    for h in handled {
        if let (Kind::Pointer { .. }, true, Some(d)) = (&h.kind, h.settled(), &h.digest) {
            at_dst.insert(h.key.as_str(), d.as_str());
        }
    }
    at_dst
}

/// Why the seal `s` is not copied (nor any later one), if it is not: it fails the source's
/// chain check, is unreadable, or (when the destination lacks it) covers a pointer the
/// destination does not hold with the sealed digest.
fn seal_refusal(
    ctx: &Ctx<'_>,
    s: &StoredSeal,
    problems: &HashMap<&str, String>,
    at_dst: &HashMap<&str, &str>,
) -> Option<String> {
    if let Some(why) = problems.get(s.key.as_str()) {
        return Some(format!(
            "fails the source's chain check ({why}); not copied, nor any later seal"
        ));
    }
    let Ok(seal) = &s.seal else {
        return Some("unreadable at the source; not copied, nor any later seal".to_string());
    };
    if ctx.dst_sizes.contains_key(&s.key) {
        return None;
    }
    let e = seal
        .entries
        .iter()
        .find(|e| at_dst.get(e.key.as_str()) != Some(&e.sha256.as_str()))?;
    Some(format!(
        "covers {}, which is not at the destination with the sealed sha256 {} (see above); not copied, nor any later seal",
        e.key, e.sha256
    ))
}

/// Seals the destination holds beyond the source's newest: the source's newest seals were
/// removed, or something else sealed the destination. Either way the two disagree.
pub(super) async fn seals_beyond_source(ctx: &Ctx<'_>) -> Result<Vec<Conflict>> {
    let newest = ctx.chain.seals.last().map_or(0, |s| s.key_seq);
    let mut out = Vec::new();
    for key in ctx.dst_sizes.keys() {
        if let KeyKind::Seal(n) = keys::classify(key) {
            if n > newest {
                if let Some(b) = crate::history::seal::get_bytes(ctx.dst, key).await? {
                    out.push(Conflict {
                        key: key.clone(),
                        source_sha256: None,
                        destination_sha256: sha256_hex(&b),
                    });
                }
            }
        }
    }
    Ok(out)
}

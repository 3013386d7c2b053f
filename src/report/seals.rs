//! The seal chain as the report shows it: who signed which seal (by key id), the signing
//! keys given and found, and the timeline of seals (grouped when there are more than
//! [`MAX_TIMELINE_POINTS`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::audit::findings::{ProblemKind, Report};
use crate::history::seal::StoredSeal;
use crate::history::signing::{key_id, parse_public_key};
use crate::report::model::{KeyCheck, Timeline, TimelinePoint, MAX_TIMELINE_POINTS};
use crate::report::options::ReportOptions;

/// One seal: (seq, sealed_utc, commits, signed, witnessed).
pub(crate) type SealRow = (u64, String, u64, bool, bool);

/// The seals that parse, oldest first, and the seals each key id signed (a signature
/// `verify` found bad counts as none). `witnessed`: the seals a witness recorded.
pub(crate) fn seal_rows(
    stored: &[StoredSeal],
    verified: &Report,
    witnessed: Option<&BTreeSet<u64>>,
) -> (Vec<SealRow>, BTreeMap<String, Vec<u64>>) {
    let mut by_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut rows = Vec::new();
    let bad_sig: BTreeSet<&str> = verified
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::BadSignature)
        .map(|p| p.key.as_str())
        .collect();
    for s in stored {
        let Ok(seal) = &s.seal else { continue };
        let signer = seal
            .signature
            .as_ref()
            .and(seal.public_key.as_deref())
            .and_then(|k| parse_public_key(k).ok())
            .map(|k| key_id(&k))
            .filter(|_| !bad_sig.contains(s.key.as_str()));
        if let Some(id) = &signer {
            by_key.entry(id.clone()).or_default().push(s.key_seq);
        }
        rows.push((
            s.key_seq,
            seal.sealed_utc.clone(),
            seal.entries.len() as u64,
            signer.is_some(),
            witnessed.is_some_and(|seqs| seqs.contains(&s.key_seq)),
        ));
    }
    (rows, by_key)
}

/// Every key the seals were signed with: the keys given first (in their order, named by
/// where they came from), then those only the seals name.
pub(crate) fn key_checks(
    opts: &ReportOptions,
    mut by_key: BTreeMap<String, Vec<u64>>,
) -> Vec<KeyCheck> {
    let mut keys = Vec::new();
    let given: Vec<String> = opts.verify.public_keys.iter().map(key_id).collect();
    for (i, id) in given.iter().enumerate() {
        let seqs = by_key.remove(id).unwrap_or_default();
        keys.push(KeyCheck {
            key_id: id.clone(),
            source: Some(
                opts.key_sources
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("public key {}", i + 1)),
            ),
            seals_signed: seqs.len() as u64,
            seal_ranges: ranges(&seqs),
        });
    }
    for (id, seqs) in by_key {
        keys.push(KeyCheck {
            key_id: id,
            source: None,
            seals_signed: seqs.len() as u64,
            seal_ranges: ranges(&seqs),
        });
    }
    keys
}

/// "1-4, 7" from sorted sequence numbers.
fn ranges(seqs: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seqs.len() {
        let mut j = i;
        while j + 1 < seqs.len() && seqs[j + 1] == seqs[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            seqs[i].to_string()
        } else {
            format!("{}-{}", seqs[i], seqs[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// The seals → at most [`MAX_TIMELINE_POINTS`] points.
pub(crate) fn timeline(seals: &[SealRow], with_witness: bool) -> Timeline {
    let per = seals.len().div_ceil(MAX_TIMELINE_POINTS).max(1);
    let points = seals
        .chunks(per)
        .filter_map(|c| {
            let (first, last) = (c.first()?, c.last()?);
            Some(TimelinePoint {
                first_seq: first.0,
                last_seq: last.0,
                sealed_utc: last.1.clone(),
                tsa_utc: None,
                commits: c.iter().map(|s| s.2).sum(),
                signed: c.iter().filter(|s| s.3).count() as u64,
                witnessed: c.iter().filter(|s| s.4).count() as u64,
            })
        })
        .collect();
    Timeline {
        seals: seals.len() as u64,
        signed: seals.iter().filter(|s| s.3).count() as u64,
        witnessed: with_witness.then(|| seals.iter().filter(|s| s.4).count() as u64),
        grouped: per > 1,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_ranges_are_compact() {
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[1, 2, 3, 4, 7, 9, 10]), "1-4, 7, 9-10");
    }

    #[test]
    fn a_long_chain_is_grouped_into_at_most_the_cap() {
        let seals: Vec<(u64, String, u64, bool, bool)> = (1..=1001)
            .map(|i| {
                (
                    i,
                    format!("2026-01-01T00:00:{:02}Z", i % 60),
                    2,
                    i % 2 == 0,
                    i == 5,
                )
            })
            .collect();
        let t = timeline(&seals, true);
        assert!(
            t.grouped && t.points.len() <= MAX_TIMELINE_POINTS,
            "{}",
            t.points.len()
        );
        assert_eq!(t.points.iter().map(|p| p.commits).sum::<u64>(), 2002);
        assert_eq!((t.seals, t.signed, t.witnessed), (1001, 500, Some(1)));
        assert_eq!(t.points.first().map(|p| p.first_seq), Some(1));
        assert_eq!(t.points.last().map(|p| p.last_seq), Some(1001));
        let few = timeline(&seals[..3], false);
        assert!(!few.grouped && few.points.len() == 3 && few.witnessed.is_none());
    }
}

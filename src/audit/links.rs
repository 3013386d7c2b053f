//! Checking seals one against the seal before it, without the seals before those: what
//! `verify --since-seal` checks of the seals from SEQ on, and what a repeat `lineage
//! witness` checks of the seals since its newest record ([`crate::witness`]).
//!
//! Checked per seal: it parses (not larger than the limit), its `seq` is its key's, its
//! `prev_sha256` is the sha256 of the seal before, it is not dated before that seal, its
//! frontier (compact range) fits its tree size and gives its root, and the predecessor's
//! frontier with its entries gives its tree size and root; its watermark and `ahead`
//! (against `sealed`, when given); its signature as `trust` asks. Not checked: that the
//! seals before were not cut, edited or reordered (a full walk,
//! [`crate::audit::chain::walk`], checks those), nor a commit sealed again that a seal
//! before the first one given sealed.

use std::collections::{BTreeMap, HashMap};

use crate::audit::findings::{Problem, ProblemKind};
use crate::history::frontier::Frontier;
use crate::history::merkle;
use crate::history::seal::{seal_fields, Seal, StoredSeal, Trust};

/// The problems of the seals in `seals` from `since` on, each against the one before it
/// (`seals` holds seal `since - 1` when there is one: it is the first one's yardstick).
pub(crate) fn check_from(
    seals: &BTreeMap<u64, StoredSeal>,
    since: u64,
    trust: &Trust,
) -> Vec<Problem> {
    let mut out = Vec::new();
    for (n, s) in seals.range(since..) {
        let prev = n.checked_sub(1).and_then(|p| seals.get(&p));
        out.extend(check_one(prev, s, trust, None));
    }
    out
}

/// The problems of seal `s` against the seal before it, `prev`; `sealed`: the pointer keys
/// known to be sealed by `s` or a seal before it (its `ahead` is checked against them).
pub(crate) fn check_one(
    prev: Option<&StoredSeal>,
    s: &StoredSeal,
    trust: &Trust,
    sealed: Option<&HashMap<String, usize>>,
) -> Vec<Problem> {
    let seal = match &s.seal {
        Ok(seal) => seal,
        Err(m) => return vec![Problem::new(ProblemKind::SealCorrupt, &s.key, m.clone())],
    };
    let mut out = Vec::new();
    if seal.seq != s.key_seq {
        out.push(Problem::new(
            ProblemKind::SealMisplaced,
            &s.key,
            format!(
                "records seq {} but is stored as seal {}",
                seal.seq, s.key_seq
            ),
        ));
    }
    out.extend(link_problem(prev, s, seal));
    if let Some(why) = prev.and_then(|p| crate::audit::chain::sealed_earlier(p, seal)) {
        out.push(Problem::new(ProblemKind::SealOutOfOrder, &s.key, why));
    }
    if let Some(f) = &seal.frontier {
        out.extend(frontier_problems(prev, s, seal, f, sealed));
    }
    if let Err(why) = trust.judge(s.key_seq, seal) {
        out.push(Problem::new(ProblemKind::BadSignature, &s.key, why));
    }
    out
}

/// Seal `s` (parsed: `seal`) against the seal before it, `prev`.
fn link_problem(prev: Option<&StoredSeal>, s: &StoredSeal, seal: &Seal) -> Option<Problem> {
    match (prev, &seal.prev_sha256) {
        (Some(before), Some(p)) if p != &before.digest => Some(Problem::new(
            ProblemKind::SealChainBroken,
            &before.key,
            format!(
                "has sha256 {}, but the next seal {} records {p}: this seal was edited or replaced after {} was made",
                before.digest, s.key, s.key
            ),
        )),
        (Some(before), None) => Some(Problem::new(
            ProblemKind::SealChainBroken,
            &s.key,
            format!("records no previous seal, but follows {}", before.key),
        )),
        _ => None,
    }
}

/// Seal `s`'s frontier `f` against its root and its predecessor's tree, and its
/// `lineage-seal/2` fields.
fn frontier_problems(
    prev: Option<&StoredSeal>,
    s: &StoredSeal,
    seal: &Seal,
    f: &[String],
    sealed: Option<&HashMap<String, usize>>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let why = match Frontier::from_hex(seal.tree_size, f) {
        None => Some("its frontier does not fit its tree size".to_string()),
        Some(fr) if !hex::encode(fr.root()).eq_ignore_ascii_case(&seal.root) => {
            Some("its frontier does not give its root".to_string())
        }
        Some(_) => grows_from(prev, seal),
    };
    if let Some(w) = why {
        out.push(Problem::new(
            ProblemKind::SealRootMismatch,
            &s.key,
            format!("{w}: the seal was edited"),
        ));
    }
    let prev_w = prev
        .and_then(|p| p.seal.as_ref().ok())
        .and_then(|p| p.watermark_utc.as_deref());
    for w in seal_fields(seal, prev_w, sealed) {
        out.push(Problem::new(ProblemKind::SealCorrupt, &s.key, w));
    }
    out
}

/// Why a seal's tree is not its predecessor's tree plus its entries (`None` when it is, or
/// when the predecessor has no frontier to extend).
fn grows_from(prev: Option<&StoredSeal>, seal: &Seal) -> Option<String> {
    let p = prev?.seal.as_ref().ok()?;
    let mut f = Frontier::from_hex(p.tree_size, p.frontier.as_deref()?)?;
    for e in &seal.entries {
        let Some(d) = merkle::parse_hash(&e.sha256) else {
            return Some(format!("entry {} has no valid sha256", e.key));
        };
        f.push(merkle::leaf_hash(&d));
    }
    let ok = f.size() == seal.tree_size && hex::encode(f.root()).eq_ignore_ascii_case(&seal.root);
    (!ok).then(|| {
        format!(
            "records tree size {} root {}, but seal {}'s tree and its entries give {} and {}",
            seal.tree_size,
            seal.root,
            p.seq,
            f.size(),
            hex::encode(f.root())
        )
    })
}

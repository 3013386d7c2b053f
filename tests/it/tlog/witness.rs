//! Outside witnesses (issue 36 item 5): each new checkpoint pushed to C2SP tlog witnesses
//! (`add-checkpoint` with the consistency proof from the witness's size), their
//! cosignatures stored beside the checkpoint and required by `verify --witness-key`.
//! The witness is a test double written from the specification ([`witness_double`]);
//! the stored cosigned checkpoints are also checked by the independent `signed_note`
//! crate. `signed_note` 0.2 has no `cosignature/v1` verifier of its own (only Ed25519
//! note signatures, type 0x01): its `Verifier` trait is the extension point, and the
//! cosignature verifier below is written here from the specification.

use std::sync::Arc;

use bytes::Bytes;
use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};
use lineage_store::internal::checkpoint as cp;
use lineage_store::internal::keys;
use lineage_store::witness::tlog::{push, PushOutcome, TlogWitness};
use lineage_store::{
    keygen, parse_witness_vkey, read_signing_key, seal_with, AnchorKind, AtomicPublisher,
    CosignError, MemoryPublisher, ProblemKind, SealOptions, SystemClock, WitnessKeys,
};
use signed_note::{Note, NoteError, StandardVerifier, VerifierList};

use super::witness_double::{Silent, Witness};
use crate::support::audit::{append, of_kind, verify_later};

const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// A `cosignature/v1` verifier for the independent `signed_note` crate, from the spec.
struct CosigVerifier {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl CosigVerifier {
    fn new(vkey: &str) -> Self {
        use base64::Engine;
        let mut p = vkey.splitn(3, '+');
        let name = p.next().unwrap().to_string();
        let _id = p.next().unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(p.next().unwrap())
            .unwrap();
        assert_eq!(raw[0], 0x04);
        let key = VerifyingKey::from_bytes(&raw[1..].try_into().unwrap()).unwrap();
        // The key id as the independent crate computes it, over 0x04 || key.
        let id = signed_note::key_id(&name, &raw);
        CosigVerifier { name, id, key }
    }
}

impl signed_note::Verifier for CosigVerifier {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.id
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        if sig.len() != 72 {
            return false;
        }
        let time = u64::from_be_bytes(sig[..8].try_into().unwrap());
        let mut m = format!("cosignature/v1\ntime {time}\n").into_bytes();
        m.extend_from_slice(msg);
        let s = Signature::from_slice(&sig[8..]).unwrap();
        time > 0 && self.key.verify(&m, &s).is_ok()
    }
}

/// A signed store of `n` seals; the log's verifier key and the signing key.
async fn signed_store(n: u64) -> (Arc<MemoryPublisher>, String, ed25519_dalek::SigningKey) {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    keygen(&prefix).unwrap();
    let key = read_signing_key(&prefix.with_extension("key")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    let mut vkey = String::new();
    for seed in 1..=n {
        vkey = seal_more(&mem, &key, seed).await;
    }
    (mem, vkey, key)
}

/// Append and seal once more; the log's vkey.
async fn seal_more(
    mem: &Arc<MemoryPublisher>,
    key: &ed25519_dalek::SigningKey,
    seed: u64,
) -> String {
    append(mem.clone(), 5 + seed as usize, 2, seed).await;
    let s = seal_with(
        mem.as_ref(),
        &SystemClock,
        Some(key),
        &SealOptions::default(),
    )
    .await
    .unwrap();
    s.vkey.unwrap()
}

fn client(w: &Witness) -> TlogWitness {
    TlogWitness::new(&w.url, &w.vkey(), TIMEOUT).unwrap()
}

async fn get_text(mem: &MemoryPublisher, key: &str) -> String {
    String::from_utf8(mem.get(key).await.unwrap().unwrap().to_vec()).unwrap()
}

async fn note_of(mem: &MemoryPublisher, seq: u64) -> cp::Checkpoint {
    cp::parse(&get_text(mem, &keys::checkpoint_key(seq)).await).unwrap()
}

fn origin(vkey: &str) -> &str {
    vkey.split('+').next().unwrap()
}

fn one_failure(o: &PushOutcome) -> &CosignError {
    assert!(o.cosigned.is_empty(), "{o:?}");
    assert_eq!(o.failed.len(), 1, "{o:?}");
    &o.failed[0].error
}

#[tokio::test]
async fn a_witness_cosigns_each_checkpoint_and_the_independent_verifier_accepts_it() {
    let (mem, log, key) = signed_store(1).await;
    let w = Witness::start("witness.example/w1", 11);
    w.trust(&log);
    let o = push(mem.as_ref(), &[client(&w)], 1).await.unwrap();
    assert!(o.failed.is_empty(), "{o:?}");
    assert_eq!(o.cosigned.len(), 1);
    assert_eq!(o.cosigned[0].old_size, Some(0));
    let k1 = keys::cosignature_key(1, &w.vkey());
    assert_eq!(o.cosigned[0].key, k1);
    assert_eq!(
        o.cosigned[0].witness,
        format!("witness.example/w1 ({})", w.url)
    );
    // Stored: the checkpoint as published, then the witness's cosignature line.
    let stored = get_text(&mem, &k1).await;
    let checkpoint = get_text(&mem, &keys::checkpoint_key(1)).await;
    assert!(stored.starts_with(&checkpoint), "{stored}");
    let extra = &stored[checkpoint.len()..];
    assert!(
        extra.starts_with("\u{2014} witness.example/w1 ") && extra.lines().count() == 1,
        "{extra}"
    );

    // The independent crate: both signatures verify, each under its own key.
    let both = || {
        VerifierList::new(vec![
            Box::new(StandardVerifier::new(&log).unwrap()),
            Box::new(CosigVerifier::new(&w.vkey())),
        ])
    };
    let (ok, unknown) = Note::from_bytes(stored.as_bytes())
        .unwrap()
        .verify(&both())
        .unwrap();
    assert_eq!((ok.len(), unknown.len()), (2, 0));
    assert_eq!(ok[1].name(), "witness.example/w1");
    // A changed cosignature is refused by it.
    let bad = flip_last_sig_char(&stored);
    let e = Note::from_bytes(bad.as_bytes())
        .unwrap()
        .verify(&both())
        .unwrap_err();
    assert!(
        matches!(e, NoteError::InvalidSignature { ref name, .. } if name == "witness.example/w1"),
        "{e:?}"
    );

    // Seal 2: sent with the proof from the size the witness cosigned, which it checks.
    seal_more(&mem, &key, 2).await;
    let size1 = note_of(&mem, 1).await.tree_size;
    let size2 = note_of(&mem, 2).await.tree_size;
    let o = push(mem.as_ref(), &[client(&w)], 2).await.unwrap();
    assert_eq!(o.cosigned.len(), 1, "{o:?}");
    assert_eq!(o.cosigned[0].old_size, Some(size1));
    assert_eq!(w.seen(), vec![(0, 200), (size1, 200)]);
    assert_eq!(w.latest(origin(&log)), Some(size2));
    // Pushed again: the stored cosignature stands, nothing is sent.
    let o = push(mem.as_ref(), &[client(&w)], 2).await.unwrap();
    assert_eq!(o.cosigned[0].old_size, None);
    assert_eq!(w.seen().len(), 2);
    assert!(verify_later(mem.as_ref()).await.is_clean());

    // verify's anchor: the key held, named with the witness's time.
    let keys_ = WitnessKeys {
        keys: vec![parse_witness_vkey(&w.vkey()).unwrap()],
        quorum: None,
    };
    let (outcome, found, problems) = keys_.judge(mem.as_ref()).await.unwrap();
    assert!(
        outcome.held && problems.is_empty(),
        "{outcome:?} {problems:?}"
    );
    assert_eq!(outcome.anchor, AnchorKind::WitnessKeys);
    assert!(
        outcome.statement.starts_with("seal 2's checkpoint cosigned by 1 of 1 witness keys (quorum 1): witness.example/w1 cosigned at "),
        "{}",
        outcome.statement
    );
    assert!(found[0].cosigned);
}

/// The last character of the last signature's base64 before its padding, changed.
fn flip_last_sig_char(note: &str) -> String {
    let mut lines: Vec<String> = note.lines().map(str::to_string).collect();
    let last = lines.last_mut().unwrap();
    let i = last.trim_end_matches('=').len() - 2;
    let c = last.as_bytes()[i];
    let swapped = if c == b'A' { 'B' } else { 'A' };
    last.replace_range(i..=i, &swapped.to_string());
    format!("{}\n", lines.join("\n"))
}

#[tokio::test]
async fn a_witness_that_was_down_gets_the_newest_checkpoint_with_a_proof_from_its_own_size() {
    let (mem, log, key) = signed_store(1).await;
    let w = Witness::start("witness.example/w1", 12);
    w.trust(&log);
    push(mem.as_ref(), &[client(&w)], 1).await.unwrap();
    // Seal 2 while the witness is unreachable (nothing listens at its address).
    seal_more(&mem, &key, 2).await;
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };
    let unreachable = TlogWitness::new(&down, &w.vkey(), TIMEOUT).unwrap();
    let o = push(mem.as_ref(), &[unreachable], 2).await.unwrap();
    let CosignError::Unreachable { why } = one_failure(&o) else {
        panic!("{o:?}");
    };
    assert!(why.contains("could not connect"), "{why}");
    assert!(o.failed[0]
        .witness
        .starts_with("witness.example/w1 (http://127.0.0.1:"));
    assert!(mem
        .get(&keys::cosignature_key(2, &w.vkey()))
        .await
        .unwrap()
        .is_none());
    // The seal stands: the store verifies clean.
    assert!(verify_later(mem.as_ref()).await.is_clean());

    // Seal 3 with the witness back: the store knows no size for it (seal 2 has no
    // cosignature), so it sends 0, hears 409 with the size of seal 1, and sends the proof
    // from there, once.
    seal_more(&mem, &key, 3).await;
    let size1 = note_of(&mem, 1).await.tree_size;
    let o = push(mem.as_ref(), &[client(&w)], 3).await.unwrap();
    assert!(o.failed.is_empty(), "{o:?}");
    assert_eq!(o.cosigned[0].old_size, Some(size1));
    assert_eq!(w.seen(), vec![(0, 200), (0, 409), (size1, 200)]);
    assert_eq!(
        w.latest(origin(&log)),
        Some(note_of(&mem, 3).await.tree_size)
    );
}

#[tokio::test]
async fn refusals_are_named_by_the_protocols_answer_and_store_nothing() {
    let (mem, log, key) = signed_store(2).await;
    let size1 = note_of(&mem, 1).await.tree_size;
    let size2 = note_of(&mem, 2).await.tree_size;
    let k2 = |w: &Witness| keys::cosignature_key(2, &w.vkey());

    // 404: the witness does not know the origin.
    let w = Witness::start("witness.example/a", 21);
    let o = push(mem.as_ref(), &[client(&w)], 2).await.unwrap();
    let e = one_failure(&o);
    assert!(
        matches!(e, CosignError::UnknownOrigin { origin: o } if o == origin(&log)),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("does not know the origin") && e.to_string().contains("(HTTP 404)"),
        "{e}"
    );

    // 403: it trusts another key for the origin.
    let w = Witness::start("witness.example/b", 22);
    let other = {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o");
        keygen(&p).unwrap();
        let k = read_signing_key(&p.with_extension("key")).unwrap();
        lineage_store::internal::checkpoint::vkey(origin(&log), &k.verifying_key().to_bytes())
    };
    w.trust(&other);
    let o = push(mem.as_ref(), &[client(&w)], 2).await.unwrap();
    let e = one_failure(&o);
    assert_eq!(e.name(), "forbidden");
    assert!(e.to_string().contains("(HTTP 403)"), "{e}");
    assert!(mem.get(&k2(&w)).await.unwrap().is_none());

    // 422: it holds seal 1's size with another root (a forked view): the proof from its
    // size is refused.
    let w = Witness::start("witness.example/c", 23);
    w.trust(&log);
    w.set_latest(origin(&log), size1, [7; 32]);
    let o = push(mem.as_ref(), &[client(&w)], 2).await.unwrap();
    let e = one_failure(&o);
    assert_eq!(
        *e,
        CosignError::ProofRefused {
            old: size1,
            tree_size: size2
        }
    );
    assert_eq!(w.seen(), vec![(0, 409), (size1, 422)]);
    assert!(
        e.to_string()
            .contains(&format!("from size {size1} to {size2} (HTTP 422)")),
        "{e}"
    );

    // 409 naming a larger tree than the store's: named, not resent.
    let w = Witness::start("witness.example/d", 24);
    w.trust(&log);
    w.set_latest(origin(&log), 10_000, [7; 32]);
    let o = push(mem.as_ref(), &[client(&w)], 2).await.unwrap();
    let e = one_failure(&o);
    assert_eq!(
        *e,
        CosignError::AheadOfLog {
            witness_size: 10_000,
            tree_size: size2
        }
    );
    assert_eq!(w.seen().len(), 1);
    assert!(
        e.to_string().contains("larger than this checkpoint's"),
        "{e}"
    );

    // A cosignature under another key than the one given: not accepted, not stored.
    let w = Witness::start("witness.example/e", 25);
    w.trust(&log);
    let impostor = Witness::start("witness.example/e", 26);
    let c = TlogWitness::new(&w.url, &impostor.vkey(), TIMEOUT).unwrap();
    let o = push(mem.as_ref(), &[c], 2).await.unwrap();
    let e = one_failure(&o);
    assert!(
        e.to_string()
            .contains("holds no cosignature by witness.example/e (key id"),
        "{e}"
    );
    assert!(mem
        .get(&keys::cosignature_key(2, &impostor.vkey()))
        .await
        .unwrap()
        .is_none());
    assert!(mem
        .list(keys::COSIGNATURES_PREFIX)
        .await
        .unwrap()
        .is_empty());
    let _ = key;
}

#[tokio::test]
async fn a_witness_that_never_answers_is_bounded_by_the_timeout_and_does_not_stop_the_rest() {
    let (mem, log, _) = signed_store(1).await;
    let silent = Silent::start();
    let w = Witness::start("witness.example/ok", 31);
    w.trust(&log);
    let mute = TlogWitness::new(
        &silent.url,
        &Witness::start("witness.example/mute", 32).vkey(),
        std::time::Duration::from_secs(1),
    )
    .unwrap();
    let o = push(mem.as_ref(), &[mute, client(&w)], 1).await.unwrap();
    assert_eq!(o.cosigned.len(), 1, "{o:?}");
    assert!(o.cosigned[0].witness.starts_with("witness.example/ok"));
    assert_eq!(o.failed.len(), 1, "{o:?}");
    let CosignError::Unreachable { why } = &o.failed[0].error else {
        panic!("{o:?}");
    };
    assert!(why.contains("no answer within the timeout"), "{why}");
    assert!(o.failed[0].witness.starts_with("witness.example/mute ("));
    assert!(silent.accepted() >= 1);
}

#[tokio::test]
async fn verify_requires_the_quorum_and_names_a_missing_or_forged_cosignature() {
    let (mem, log, _) = signed_store(1).await;
    let ws: Vec<Witness> = (0..3)
        .map(|i| Witness::start(&format!("witness.example/q{i}"), 40 + i))
        .collect();
    for w in &ws {
        w.trust(&log);
    }
    // Two of the three cosign.
    let o = push(mem.as_ref(), &[client(&ws[0]), client(&ws[1])], 1)
        .await
        .unwrap();
    assert_eq!(o.cosigned.len(), 2, "{o:?}");
    let all: Vec<_> = ws
        .iter()
        .map(|w| parse_witness_vkey(&w.vkey()).unwrap())
        .collect();
    let judge = |quorum| {
        let k = WitnessKeys {
            keys: all.clone(),
            quorum,
        };
        let mem = mem.clone();
        async move { k.judge(mem.as_ref()).await.unwrap() }
    };
    let (o, found, problems) = judge(Some(2)).await;
    assert!(o.held && problems.is_empty(), "{o:?} {problems:?}");
    assert!(
        o.statement
            .contains("cosigned by 2 of 3 witness keys (quorum 2)"),
        "{}",
        o.statement
    );
    assert!(
        o.statement
            .contains("witness.example/q2 did NOT: no cosignature stored"),
        "{}",
        o.statement
    );
    assert_eq!(found.iter().filter(|f| f.cosigned).count(), 2);
    // Every key required (the default): the missing one is the problem.
    let (o, _, problems) = judge(None).await;
    assert!(!o.held);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::BadCosignature);
    assert_eq!(problems[0].key, keys::cosignature_key(1, &ws[2].vkey()));
    assert!(
        problems[0]
            .detail
            .to_string()
            .contains("no cosignature by witness witness.example/q2 of seal 1, the newest"),
        "{:?}",
        problems[0]
    );

    // A forged cosignature (its signature changed) is named even when the quorum holds.
    let k0 = keys::cosignature_key(1, &ws[0].vkey());
    let good = get_text(&mem, &k0).await;
    mem.tamper_put(&k0, Bytes::from(flip_last_sig_char(&good)));
    let (o, _, problems) = judge(Some(1)).await;
    assert!(!o.held, "{o:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].key, k0);
    assert!(
        problems[0]
            .detail
            .to_string()
            .contains("does not verify over this checkpoint"),
        "{:?}",
        problems[0]
    );
    assert!(
        o.statement.contains("cosigned by 1 of 3"),
        "{}",
        o.statement
    );

    // verify's own check of the stored objects: a cosignature of another checkpoint, and
    // one planted for a seal that does not exist, are named.
    let checkpoint = get_text(&mem, &keys::checkpoint_key(1)).await;
    let body = cp::parse(&checkpoint).unwrap().body;
    let size = cp::parse(&checkpoint).unwrap().tree_size;
    let other_body = body.replacen(&format!("\n{size}\n"), &format!("\n{}\n", size + 1), 1);
    let forged = format!(
        "{}{}",
        checkpoint.replacen(&body, &other_body, 1),
        ws[0].cosign(&other_body, 1_800_000_000)
    );
    mem.tamper_put(&k0, Bytes::from(forged));
    let planted = keys::cosignature_key(9, &ws[0].vkey());
    mem.tamper_put(&planted, Bytes::from(good));
    let r = verify_later(mem.as_ref()).await;
    let mut bad = of_kind(&r, ProblemKind::BadCosignature);
    bad.sort();
    assert_eq!(bad.len(), 2, "{:#?}", r.problems);
    let by_key: std::collections::BTreeMap<_, _> = bad.into_iter().collect();
    assert!(
        by_key[&k0].contains("cosigns another checkpoint"),
        "{}",
        by_key[&k0]
    );
    assert!(
        by_key[&planted].contains("seal 9, which is not in the store"),
        "{}",
        by_key[&planted]
    );
}

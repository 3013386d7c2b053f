//! Trusted time for seals (issue 36 item 6): RFC 3161 tokens from a real TSA (OpenSSL's,
//! [`tsa`]), stored beside each seal by `seal --tsa` and checked by `verify --tsa-root`, and
//! by `openssl ts -verify` alone; a changed seal or token refused; a TSA that is down or
//! answers garbage does not stop sealing, and the next `seal --tsa` catches up.

mod cli;
mod tsa;

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::keys;
use lineage_store::timestamp::{stamp_seals, Tsa as TsaClient};
use lineage_store::{
    parse_tsa_roots, seal_with, verify_with, AtomicPublisher, FixedClock, MemoryPublisher,
    ProblemKind, Report, SealOptions, SystemClock, TsaRoots, VerifyOptions,
};

use crate::support::audit::{append, later, of_kind};
use tsa::{Answer, Key, Pki, Setup, Tsa};

fn roots(pki: &Pki) -> TsaRoots {
    parse_tsa_roots(&std::fs::read(pki.path("ca.pem")).unwrap()).unwrap()
}

fn client(url: &str) -> TsaClient {
    TsaClient::new(url, std::time::Duration::from_secs(20)).unwrap()
}

async fn verify_tsa(mem: &MemoryPublisher, pki: &Pki) -> Report {
    let opts = VerifyOptions {
        tsa_roots: Some(roots(pki)),
        ..later()
    };
    verify_with(mem, &opts).await.unwrap()
}

/// `n` seals, each stamped by `tsa` right after it is made.
async fn stamped_store(n: u64, tsa: &Tsa) -> Arc<MemoryPublisher> {
    let mem = Arc::new(MemoryPublisher::new());
    let c = client(&tsa.url);
    for seed in 1..=n {
        append(mem.clone(), 5, 2, seed).await;
        let s = seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
            .await
            .unwrap();
        let o = stamp_seals(mem.as_ref(), &c, s.seq).await.unwrap();
        assert!(o.failed.is_none(), "{:?}", o.failed);
        assert_eq!(
            o.stamped.iter().map(|s| s.seq).collect::<Vec<_>>(),
            vec![seed]
        );
    }
    mem
}

async fn get(mem: &MemoryPublisher, key: &str) -> Bytes {
    mem.get(key)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{key} missing"))
}

/// Every key, signature and ESS variant a TSA is likely to use checks, and the report lists
/// each seal's TSA time, checked.
#[tokio::test]
async fn tokens_of_rsa_and_ecdsa_tsas_check_against_the_root() {
    let setups = [
        Setup::default(),
        Setup {
            key: Key::P256,
            ess_sha1: true,
            ..Setup::default()
        },
        Setup {
            key: Key::P384,
            digest: "sha384",
            ..Setup::default()
        },
        Setup {
            key: Key::Rsa,
            digest: "sha512",
            embed_chain: true,
            ..Setup::default()
        },
    ];
    for setup in setups {
        let pki = Arc::new(Pki::new(setup));
        let tsa = Tsa::start(pki.clone());
        let mem = stamped_store(2, &tsa).await;
        let r = verify_tsa(&mem, &pki).await;
        assert!(r.is_clean(), "{setup:?}: {:#?}", r.problems);
        assert!(r.seal_times_checked);
        assert_eq!(r.seal_times.len(), 2, "{setup:?}");
        for (t, seq) in r.seal_times.iter().zip(1..) {
            assert_eq!(t.seq, seq);
            assert!(t.checked, "{setup:?}: {t:?}");
            assert_eq!(t.tsa.as_deref(), Some("CN=Test TSA"));
            assert!(t.tsa_utc.is_some());
        }
        // Without the root: listed, not checked.
        let r = verify_with(mem.as_ref(), &later()).await.unwrap();
        assert!(r.is_clean(), "{:#?}", r.problems);
        assert!(!r.seal_times_checked);
        assert!(r
            .seal_times
            .iter()
            .all(|t| !t.checked && t.tsa_utc.is_some()));
        assert_eq!(tsa.served(), 2);
    }
}

/// Another root than the TSA's: every token named.
#[tokio::test]
async fn a_token_of_another_root_is_refused() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let tsa = Tsa::start(pki.clone());
    let mem = stamped_store(1, &tsa).await;
    let other = Pki::named(Setup::default(), "Another Root CA");
    let r = verify_tsa(&mem, &other).await;
    let bad = of_kind(&r, ProblemKind::BadTimestamp);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert_eq!(bad[0].0, keys::timestamp_reply_key(1));
    assert!(
        bad[0]
            .1
            .contains("does not chain to the given root (CN=Another Root CA)"),
        "{}",
        bad[0].1
    );
    assert!(!r.seal_times[0].checked);
}

/// A changed seal no longer matches its token's imprint; a changed, swapped, planted or
/// removed token is named.
#[tokio::test]
async fn a_changed_seal_or_token_is_refused() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let tsa = Tsa::start(pki.clone());
    let mem = stamped_store(3, &tsa).await;
    assert!(verify_tsa(&mem, &pki).await.is_clean());

    // The token's signature changed (its last byte).
    let k1 = keys::timestamp_reply_key(1);
    let good1 = get(&mem, &k1).await;
    let mut bad = good1.to_vec();
    *bad.last_mut().unwrap() ^= 1;
    mem.tamper_put(&k1, Bytes::from(bad));
    // Seal 3's token in seal 2's place.
    let k2 = keys::timestamp_reply_key(2);
    let t3 = get(&mem, &keys::timestamp_reply_key(3)).await;
    mem.tamper_put(&k2, t3.clone());
    // A token planted for a seal that does not exist.
    mem.tamper_put(&keys::timestamp_reply_key(9), t3);
    let r = verify_tsa(&mem, &pki).await;
    let mut bad = of_kind(&r, ProblemKind::BadTimestamp);
    bad.sort();
    assert_eq!(bad.len(), 3, "{:#?}", r.problems);
    assert_eq!(bad[0].0, k1);
    assert!(bad[0].1.contains("signature"), "{}", bad[0].1);
    assert_eq!(bad[1].0, k2);
    assert!(bad[1].1.contains("not seal 2's digest"), "{}", bad[1].1);
    assert_eq!(bad[2].0, keys::timestamp_reply_key(9));
    assert!(
        bad[2].1.contains("seal 9, which is not in the store"),
        "{}",
        bad[2].1
    );

    // Restored, then seal 3's token removed: its time is requested but not backed.
    mem.tamper_put(&k1, good1);
    mem.tamper_remove(&keys::timestamp_reply_key(9));
    mem.tamper_remove(&k2);
    let r = verify_tsa(&mem, &pki).await;
    let unbacked = of_kind(&r, ProblemKind::SealTimeUnbacked);
    assert_eq!(unbacked.len(), 1, "{:#?}", r.problems);
    assert_eq!(unbacked[0].0, keys::seal_key(2));
    assert!(
        unbacked[0].1.contains("no TSA response is"),
        "{}",
        unbacked[0].1
    );

    // Asked again, seal 2's new token is later than seal 3's: named as out of order.
    let c = client(&tsa.url);
    let o = stamp_seals(mem.as_ref(), &c, 3).await.unwrap();
    assert_eq!(o.stamped.iter().map(|s| s.seq).collect::<Vec<_>>(), vec![2]);
    let r = verify_tsa(&mem, &pki).await;
    let unbacked = of_kind(&r, ProblemKind::SealTimeUnbacked);
    assert_eq!(unbacked.len(), 1, "{:#?}", r.problems);
    assert_eq!(unbacked[0].0, keys::seal_key(2));
    assert!(
        unbacked[0].1.contains("is after that of seal 3"),
        "{}",
        unbacked[0].1
    );
    assert!(of_kind(&r, ProblemKind::BadTimestamp).is_empty());

    // A changed seal: its digest is no longer what the request and token are over.
    let sk = keys::seal_key(3);
    let seal = String::from_utf8(get(&mem, &sk).await.to_vec()).unwrap();
    mem.tamper_put(&sk, Bytes::from(seal.replacen("\"seq\"", "\"seq\" ", 1)));
    let r = verify_tsa(&mem, &pki).await;
    let bad = of_kind(&r, ProblemKind::BadTimestamp);
    assert!(
        bad.iter()
            .any(|(k, d)| k == &keys::timestamp_query_key(3) && d.contains("not of seal 3")),
        "{:#?}",
        r.problems
    );
}

/// A seal dated after its TSA time (the sealer's clock ahead), and a seal whose TSA time is
/// after the next seal's, are named.
#[tokio::test]
async fn times_the_tsa_contradicts_are_named() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let tsa = Tsa::start(pki.clone());
    let c = client(&tsa.url);
    let mem = Arc::new(MemoryPublisher::new());
    // Seal 1 without a time; seal 2 stamped now.
    append(mem.clone(), 5, 2, 1).await;
    seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    append(mem.clone(), 5, 2, 2).await;
    seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    stamp_seals(mem.as_ref(), &c, 2).await.unwrap();
    // Seal 1's time asked for later (a request left by a sealer the TSA failed): its TSA
    // time is after seal 2's, which chains onto it.
    let digest = lineage_store::internal::digest::sha256_hex(&get(&mem, &keys::seal_key(1)).await);
    let mut d = [0u8; 32];
    d.copy_from_slice(&hex::decode(digest).unwrap());
    let q = lineage_store::internal::timestamp::build_query(&d, [7; 16]).unwrap();
    mem.tamper_put(&keys::timestamp_query_key(1), Bytes::from(q));
    let o = stamp_seals(mem.as_ref(), &c, 2).await.unwrap();
    assert_eq!(o.stamped.iter().map(|s| s.seq).collect::<Vec<_>>(), vec![1]);
    let r = verify_tsa(&mem, &pki).await;
    let named = of_kind(&r, ProblemKind::SealTimeUnbacked);
    assert_eq!(named.len(), 1, "{:#?}", r.problems);
    assert_eq!(named[0].0, keys::seal_key(1));
    assert!(
        named[0].1.contains("is after that of seal 2"),
        "{}",
        named[0].1
    );

    // A seal dated 2099 by its sealer's clock.
    append(mem.clone(), 5, 2, 3).await;
    let future = FixedClock(
        chrono::DateTime::parse_from_rfc3339("2099-01-01T00:00:00Z")
            .unwrap()
            .into(),
    );
    seal_with(mem.as_ref(), &future, None, &SealOptions::default())
        .await
        .unwrap();
    stamp_seals(mem.as_ref(), &c, 3).await.unwrap();
    let r = verify_tsa(&mem, &pki).await;
    let named = of_kind(&r, ProblemKind::SealTimeUnbacked);
    assert!(
        named.iter().any(|(k, d)| k == &keys::seal_key(3)
            && d.contains("sealed_utc 2099-01-01T00:00:00")
            && d.contains("later than the TSA's time")),
        "{:#?}",
        r.problems
    );
}

/// A TSA that is down, answers garbage, an error or too much: nothing stored but the
/// request, the failure said; once it answers, the missing times are added, oldest first.
#[tokio::test]
async fn a_failing_tsa_does_not_stop_sealing_and_is_caught_up() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let mem = Arc::new(MemoryPublisher::new());
    let down = client(&tsa::down_url());
    append(mem.clone(), 5, 2, 1).await;
    seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    let o = stamp_seals(mem.as_ref(), &down, 1).await.unwrap();
    let f = o.failed.unwrap();
    assert_eq!(f.seq, 1);
    assert!(f.why.contains("could not connect"), "{}", f.why);
    assert_eq!(o.pending, vec![1]);
    assert!(mem
        .get(&keys::timestamp_query_key(1))
        .await
        .unwrap()
        .is_some());
    assert!(mem
        .get(&keys::timestamp_reply_key(1))
        .await
        .unwrap()
        .is_none());
    let r = verify_tsa(&mem, &pki).await;
    let named = of_kind(&r, ProblemKind::SealTimeUnbacked);
    assert_eq!(named.len(), 1, "{:#?}", r.problems);

    let tsa = Tsa::start(pki.clone());
    let c = client(&tsa.url);
    for (answer, why) in [
        (Answer::Garbage, "not a TimeStampResp"),
        (Answer::Unavailable, "HTTP 503"),
        (Answer::Huge, "more than 262144 bytes"),
    ] {
        tsa.set(answer);
        append(mem.clone(), 5, 2, 2).await;
        seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
            .await
            .unwrap();
        let newest = mem.list(keys::SEALS_PREFIX).await.unwrap().len() as u64;
        let o = stamp_seals(mem.as_ref(), &c, newest).await.unwrap();
        let f = o.failed.unwrap();
        // The oldest seal without a time is asked first, and the run stops there.
        assert_eq!(f.seq, 1);
        assert!(f.why.contains(why), "{answer:?}: {}", f.why);
        assert_eq!(o.pending, (1..=newest).collect::<Vec<_>>());
        assert!(o.stamped.is_empty());
    }
    tsa.set(Answer::Token);
    let o = stamp_seals(mem.as_ref(), &c, 4).await.unwrap();
    assert!(o.failed.is_none());
    assert_eq!(
        o.stamped.iter().map(|s| s.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    let r = verify_tsa(&mem, &pki).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.seal_times.iter().filter(|t| t.checked).count(), 4);
    // Nothing left: a second run asks nothing.
    let before = tsa.served();
    let o = stamp_seals(mem.as_ref(), &c, 4).await.unwrap();
    assert!(o.stamped.is_empty() && o.pending.is_empty());
    assert_eq!(tsa.served(), before);
}

/// A seal made without `--tsa` after timestamped ones is named, and the next stamp adds it.
#[tokio::test]
async fn a_seal_without_a_time_after_timestamped_ones_is_named_and_added() {
    let pki = Arc::new(Pki::new(Setup::default()));
    let tsa = Tsa::start(pki.clone());
    let mem = stamped_store(1, &tsa).await;
    for seed in 2..=3 {
        append(mem.clone(), 5, 2, seed).await;
        seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
            .await
            .unwrap();
    }
    let r = verify_tsa(&mem, &pki).await;
    let named = of_kind(&r, ProblemKind::SealTimeUnbacked);
    assert_eq!(
        named.iter().map(|n| n.0.clone()).collect::<Vec<_>>(),
        vec![keys::seal_key(2), keys::seal_key(3)]
    );
    assert!(
        named[0].1.contains("though seal 1 before it has one"),
        "{}",
        named[0].1
    );
    let o = stamp_seals(mem.as_ref(), &client(&tsa.url), 3)
        .await
        .unwrap();
    assert_eq!(
        o.stamped.iter().map(|s| s.seq).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert!(verify_tsa(&mem, &pki).await.is_clean());
}

/// Hostile answers: every truncation of a real response, and a byte flipped anywhere in it,
/// is refused (or, where the flip is in a part no check reads, accepted) without a panic.
#[tokio::test]
async fn mangled_responses_are_refused_without_a_panic() {
    use lineage_store::internal::timestamp::{check_token, parse_reply};
    let pki = Arc::new(Pki::new(Setup {
        key: Key::P256,
        ..Setup::default()
    }));
    let tsa = Tsa::start(pki.clone());
    let mem = stamped_store(1, &tsa).await;
    let good = get(&mem, &keys::timestamp_reply_key(1)).await.to_vec();
    let roots = roots(&pki);
    assert!(check_token(&parse_reply(&good).unwrap(), &roots).is_ok());
    for n in 0..good.len() {
        assert!(
            parse_reply(&good[..n]).is_err(),
            "a prefix of {n} bytes parsed"
        );
    }
    let mut refused = 0;
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x80;
        if parse_reply(&bad)
            .and_then(|t| check_token(&t, &roots))
            .is_err()
        {
            refused += 1;
        }
    }
    // Nearly every byte is covered by a check (the TSA's own name and such are not).
    assert!(
        refused * 10 > good.len() * 9,
        "{refused} of {} flips refused",
        good.len()
    );
}

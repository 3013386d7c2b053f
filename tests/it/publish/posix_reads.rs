//! Large ranged reads of the local-disk store use recycled buffers (src/publish/recycle.rs):
//! a buffer must only go back to the free list when every `Bytes` over it is gone, so
//! bytes still held never change under their holder when the next read comes.

use bytes::Bytes;
use lineage_store::AtomicPublisher;
use lineage_store::PosixPublisher;

/// `n` bytes that differ per `seed` and per position.
fn pattern(seed: u8, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[tokio::test]
async fn held_reads_keep_their_bytes_while_buffers_are_recycled() {
    let dir = tempfile::tempdir().unwrap();
    let store = PosixPublisher::new(dir.path());
    let n = 1024 * 1024 + 7;
    let objects: Vec<(String, Vec<u8>)> = (0..6u8)
        .map(|s| (format!("blob/{s}.bin"), pattern(s, n)))
        .collect();
    for (k, v) in &objects {
        store.put_create(k, Bytes::from(v.clone())).await.unwrap();
    }
    // Read each twice: once held (whole and as a slice), once dropped at once so its
    // buffer is recycled into the next read.
    let mut held = Vec::new();
    for (k, _) in &objects {
        let whole = store.get_range(k, 0..n as u64).await.unwrap();
        let tail = whole.slice(n - 100..);
        drop(store.get_range(k, 0..n as u64).await.unwrap());
        held.push((whole, tail));
    }
    for ((whole, tail), (k, v)) in held.iter().zip(&objects) {
        assert_eq!(whole.as_ref(), v.as_slice(), "{k} changed while held");
        assert_eq!(
            tail.as_ref(),
            &v[n - 100..],
            "{k}'s tail changed while held"
        );
    }
    // A shorter range into a recycled (larger) buffer holds exactly that range.
    drop(held);
    let part = store
        .get_range(&objects[2].0, 300_000..600_000)
        .await
        .unwrap();
    assert_eq!(part.as_ref(), &objects[2].1[300_000..600_000]);
}

/// `digest_range` hashes exactly the range (across several 256 KiB pieces), with the
/// digests asked for, and says how many bytes it covered when the object is shorter than
/// asked.
#[tokio::test]
async fn digest_range_hashes_exactly_the_bytes_in_range() {
    use lineage_store::internal::digest::blake3_hex;
    use lineage_store::internal::digest::sha256_hex;
    use lineage_store::internal::digest::Digests;
    use lineage_store::internal::digest::Want;
    let dir = tempfile::tempdir().unwrap();
    let store = PosixPublisher::new(dir.path());
    let n = 3 * 256 * 1024 + 11;
    let v = pattern(9, n);
    store
        .put_create("blob/h.bin", Bytes::from(v.clone()))
        .await
        .unwrap();
    let both = |b: &[u8]| Digests {
        sha256: Some(sha256_hex(b)),
        blake3: Some(blake3_hex(b)),
    };
    let whole = store
        .digest_range("blob/h.bin", 0..n as u64, Want::BOTH)
        .await
        .unwrap();
    assert_eq!(whole, Some((both(&v), n as u64)));
    let mid = store
        .digest_range("blob/h.bin", 1000..600_000, Want::SHA256)
        .await
        .unwrap();
    let sha_only = Digests {
        sha256: Some(sha256_hex(&v[1000..600_000])),
        blake3: None,
    };
    assert_eq!(mid, Some((sha_only, 599_000)));
    let b3 = Want {
        sha256: false,
        blake3: true,
    };
    let past = store
        .digest_range("blob/h.bin", 5..n as u64 + 100, b3)
        .await
        .unwrap();
    let b3_only = Digests {
        sha256: None,
        blake3: Some(blake3_hex(&v[5..])),
    };
    assert_eq!(past, Some((b3_only, n as u64 - 5)));
    assert!(store
        .digest_range("blob/none.bin", 0..10, Want::BOTH)
        .await
        .is_err());
}

//! Large ranged reads of the local-disk store use recycled buffers (src/publish/recycle.rs):
//! a buffer must only go back to the free list when every `Bytes` over it is gone, so
//! bytes still held never change under their holder when the next read comes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use lineage_store::publish::posix::PosixPublisher;
use lineage_store::AtomicPublisher;

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

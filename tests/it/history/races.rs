//! A full `verify` walks the seal chain, then lists the store, then reads the newest head
//! marker: a sealer running beside it can land a seal, or finish one, in between. Driven
//! deterministically through a view of a real memory store whose full listing is the
//! moment things happen (named a fake view below; reads and writes are real). Neither is a
//! problem; history objects beyond even the seals that exist now still are.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::faulty::Fault;
use lineage_store::internal::faulty::FaultyPublisher;
use lineage_store::internal::keys;
use lineage_store::internal::keys::seal_key;
use lineage_store::seal;
use lineage_store::seal_with;
use lineage_store::verify_with;
use lineage_store::MemoryPublisher;
use lineage_store::ObjectInfo;
use lineage_store::ProblemKind as K;
use lineage_store::SealOptions;
use lineage_store::SystemClock;
use lineage_store::{AtomicPublisher, Outcome, Result};

use crate::support::audit::{append, later, of_kind};

/// FAKE view of a real memory store. `landing` keys are invisible (to reads and listings)
/// until the full listing `list("")` is taken: a seal that lands between the chain walk and
/// the listing. With `finish`, right after the full listing is taken a sealer runs on the
/// real store (finishing an unfinished seal): a seal finished between the listing and the
/// head-marker read.
#[derive(Debug)]
struct Moment {
    inner: Arc<MemoryPublisher>,
    landing: Vec<String>,
    landed: AtomicBool,
    finish: AtomicBool,
}

impl Moment {
    fn new(inner: Arc<MemoryPublisher>, landing: Vec<String>, finish: bool) -> Self {
        Self {
            inner,
            landing,
            landed: AtomicBool::new(false),
            finish: AtomicBool::new(finish),
        }
    }
    fn hidden(&self, key: &str) -> bool {
        !self.landed.load(Ordering::SeqCst) && self.landing.iter().any(|k| k == key)
    }
    fn visible(&self, mut l: Vec<ObjectInfo>) -> Vec<ObjectInfo> {
        l.retain(|o| !self.hidden(&o.key));
        l
    }
}

#[async_trait::async_trait]
impl AtomicPublisher for Moment {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.inner.put_create(key, bytes).await
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        if self.hidden(key) {
            return Ok(None);
        }
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        if !prefix.is_empty() {
            return Ok(self.visible(self.inner.list(prefix).await?));
        }
        self.landed.store(true, Ordering::SeqCst);
        let l = self.inner.list("").await?;
        if self.finish.swap(false, Ordering::SeqCst) {
            seal_with(
                self.inner.as_ref(),
                &SystemClock,
                None,
                &SealOptions::default(),
            )
            .await?;
        }
        Ok(l)
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        // Hidden keys are left out before the page is cut, as if they did not exist.
        let l = self.inner.list_after(prefix, after, usize::MAX).await?;
        let mut l = self.visible(l);
        l.truncate(limit);
        Ok(l)
    }
    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

#[tokio::test]
async fn a_seal_that_lands_between_the_walk_and_the_listing_is_left_to_the_next_verify() {
    let mem = Arc::new(MemoryPublisher::new());
    let first = append(mem.clone(), 60, 2, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    // Seal 2 (over 300 commits: locators, a full tile, partial tiles, its marker).
    let second = append(mem.clone(), 600, 2, 2).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let view = Moment::new(mem.clone(), vec![seal_key(2), keys::head_key(2)], false);

    let r = verify_with(&view, &later()).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.seals, 1, "the walk saw seal 1 only");
    assert_eq!(r.sealed_commits, first.len() as u64);
    assert_eq!(r.unsealed_commits, second.len() as u64);

    // A locator beyond even the seals there are now is still named.
    let p = &second[0];
    let stray = keys::leaf_key(&p.commit_id, 10_000, &p.run_id);
    mem.tamper_put(&stray, Bytes::new());
    let view = Moment::new(mem.clone(), vec![seal_key(2), keys::head_key(2)], false);
    let r = verify_with(&view, &later()).await.unwrap();
    let named: Vec<String> = of_kind(&r, K::BadLocator)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(named, vec![stray], "{:#?}", r.problems);
    assert_eq!(r.problems.len(), 1, "{:#?}", r.problems);
}

#[tokio::test]
async fn a_seal_finished_between_the_listing_and_the_marker_read_is_clean() {
    let mem = Arc::new(MemoryPublisher::new());
    append(mem.clone(), 60, 2, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    append(mem.clone(), 600, 2, 2).await;
    // Seal 2's sealer dies before its first locator: no locators, tiles or marker.
    let faulty = FaultyPublisher::new(mem.clone());
    faulty.fail(keys::LEAVES_PREFIX, Fault::Before, 1);
    assert!(seal(&faulty, &SystemClock, None).await.is_err());
    assert!(mem.get(&keys::head_key(2)).await.unwrap().is_none());

    // Listed unfinished; finished (locators, tiles, marker) before the marker is read.
    let view = Moment::new(mem.clone(), Vec::new(), true);
    let r = verify_with(&view, &later()).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.seals, r.unfinished_seal), (2, Some(2)));
    assert!(mem.get(&keys::head_key(2)).await.unwrap().is_some());

    // Finished for real (that sealer found nothing new, so published no seal 3): clean.
    let r = verify_with(mem.as_ref(), &later()).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.seals, r.unfinished_seal), (2, None));
}

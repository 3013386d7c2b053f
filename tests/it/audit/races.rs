//! The second looks `verify` and `repair` take, driven deterministically: a wrapper around a
//! real memory store whose full listing (`list("")`) leaves out chosen keys, as a listing
//! taken a moment earlier would (named a fake view in this file; reads and writes are real).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{Duration, Utc};
use lineage_store::internal::keys;
use lineage_store::repair;
use lineage_store::verify_with;
use lineage_store::MemoryPublisher;
use lineage_store::ObjectInfo;
use lineage_store::{AtomicPublisher, Outcome, Result};

use crate::support::audit::{append, later};

/// FAKE listing view: `list("")` omits `hidden`; everything else goes to the real store.
#[derive(Debug)]
struct EarlierListing {
    inner: Arc<MemoryPublisher>,
    hidden: Vec<String>,
}

#[async_trait::async_trait]
impl AtomicPublisher for EarlierListing {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.inner.put_create(key, bytes).await
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let mut l = self.inner.list(prefix).await?;
        if prefix.is_empty() {
            l.retain(|o| !self.hidden.contains(&o.key));
        }
        Ok(l)
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        // A full page stays full: the hidden keys are not counted.
        let mut l = self
            .inner
            .list_after(prefix, after, limit + self.hidden.len())
            .await?;
        if prefix.is_empty() {
            l.retain(|o| !self.hidden.contains(&o.key));
        }
        l.truncate(limit);
        Ok(l)
    }
    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

/// The index entry of a commit (written after its pointer).
fn index_key(p: &lineage_store::Pointer) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(&p.committed_utc)
        .unwrap()
        .with_timezone(&Utc);
    keys::index_key(t, &p.commit_id, &p.run_id)
}

#[tokio::test]
async fn a_pointer_that_lands_after_the_listing_is_not_an_orphan() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 90, 30, 1).await;
    let pkey = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    // Listed before the pointer (and so its index entry) landed.
    let view = EarlierListing {
        inner: mem.clone(),
        hidden: vec![pkey.clone(), index_key(&ptrs[0])],
    };
    let r = verify_with(&view, &later()).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.in_flight, 1);

    // repair sees an orphan, but the create-only pointer publish finds the writer's
    // genuine pointer and leaves it as it is.
    let before = mem.get(&pkey).await.unwrap().unwrap();
    let out = repair(
        &view,
        Utc::now() + Duration::days(1),
        Duration::minutes(1),
        &lineage_store::Adoption::parts([ptrs[0].part_path.clone()]),
        false,
    )
    .await
    .unwrap();
    assert!(out.adopted.is_empty() && out.refused.is_empty(), "{out:?}");
    assert_eq!(out.in_flight, 1);
    assert_eq!(mem.get(&pkey).await.unwrap().unwrap(), before);
}

#[tokio::test]
async fn a_part_missing_from_the_listing_is_looked_up_again() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 90, 30, 1).await;
    let view = EarlierListing {
        inner: mem.clone(),
        hidden: vec![ptrs[1].part_path.clone()],
    };
    let r = verify_with(&view, &later()).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.parts_hashed, ptrs.len() as u64);
}

#[tokio::test]
async fn repair_does_not_overwrite_a_different_pointer_that_took_the_key() {
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 90, 30, 1).await;
    let pkey = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    // The key holds a pointer for other bytes (say, a conflicting writer); the listing
    // did not show it yet.
    let mut other = ptrs[0].clone();
    other.sha256 = "0".repeat(64);
    mem.tamper_put(&pkey, Bytes::from(other.to_bytes().unwrap()));
    let view = EarlierListing {
        inner: mem.clone(),
        hidden: vec![pkey.clone(), index_key(&ptrs[0])],
    };
    let out = repair(
        &view,
        Utc::now() + Duration::days(1),
        Duration::minutes(1),
        &lineage_store::Adoption::parts([ptrs[0].part_path.clone()]),
        false,
    )
    .await
    .unwrap();
    assert_eq!(out.refused.len(), 1, "{out:?}");
    assert!(out.refused[0].1.contains("a different pointer"), "{out:?}");
    assert_eq!(
        mem.get(&pkey).await.unwrap().unwrap(),
        Bytes::from(other.to_bytes().unwrap())
    );
}

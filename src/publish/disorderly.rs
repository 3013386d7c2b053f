//! A listing-quirk-injecting [`AtomicPublisher`] wrapper for tests (a fake of listing
//! behaviour, named as one): it implements the same trait and lists the way some real
//! S3-compatible servers do instead of in S3's byte order, so that every caller that pages
//! or relies on order can be run against it.
//!
//! [`Quirks::directory_order`] returns keys sorted path component by path component (a
//! "directory" `a/` before its sibling `a-b`, as a filer-backed store such as SeaweedFS
//! lists an unversioned bucket), and [`Quirks::skip_subtrees`] makes `start-after` compare
//! the same way, so an offset equal to or just past a directory's name skips that whole
//! directory (SeaweedFS 4.48: `start-after=run_id=b` or `run_id=b.\u{10FFFF}` omits every
//! `run_id=b/…` key). [`Quirks::shuffle`] returns each page in a scrambled order.
//! Writes, reads and unpaged listings pass through (their order is already unspecified).

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use crate::base::error::Result;
use crate::publish::{AtomicPublisher, ObjectInfo, Outcome};

/// Which listing quirks to inject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Sort listings path component by component instead of by bytes.
    pub directory_order: bool,
    /// Compare `start-after` component by component: an offset equal to (or a prefix, then
    /// a byte below `/`, of) a directory's name skips the directory.
    pub skip_subtrees: bool,
    /// Scramble the order of every page (deterministically).
    pub shuffle: bool,
}

impl Quirks {
    /// Everything SeaweedFS 4.48 does (directory order, subtrees skipped), and pages out
    /// of order on top.
    pub fn all() -> Self {
        Self {
            directory_order: true,
            skip_subtrees: true,
            shuffle: true,
        }
    }
}

/// Wraps a publisher and lists as [`Quirks`] say.
#[derive(Debug)]
pub struct DisorderlyPublisher {
    inner: Arc<dyn AtomicPublisher>,
    quirks: Quirks,
}

impl DisorderlyPublisher {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn AtomicPublisher>, quirks: Quirks) -> Self {
        Self { inner, quirks }
    }
}

/// Path-component order: `a/x` before `a-b` (the directory `a` sorts as its name).
pub fn directory_cmp(a: &str, b: &str) -> Ordering {
    a.split('/').cmp(b.split('/'))
}

#[async_trait]
impl AtomicPublisher for DisorderlyPublisher {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn read_limits(&self) -> crate::base::limits::ReadLimits {
        self.inner.read_limits()
    }

    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        self.inner.put_create(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.inner.get(key).await
    }

    async fn get_at_most(&self, key: &str, max: u64) -> Result<Option<Bytes>> {
        self.inner.get_at_most(key, max).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }

    async fn digest_range(
        &self,
        key: &str,
        range: Range<u64>,
        want: crate::base::digest::Want,
    ) -> Result<Option<(crate::base::digest::Digests, u64)>> {
        self.inner.digest_range(key, range, want).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let mut v = self.inner.list(prefix).await?;
        if self.quirks.directory_order {
            v.sort_by(|a, b| directory_cmp(&a.key, &b.key));
        }
        if self.quirks.shuffle {
            v.reverse();
        }
        Ok(v)
    }

    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        let mut all = self.inner.list(prefix).await?;
        if self.quirks.directory_order {
            all.sort_by(|a, b| directory_cmp(&a.key, &b.key));
        } else {
            all.sort_by(|a, b| a.key.cmp(&b.key));
        }
        let skip = self.quirks.skip_subtrees;
        let mut page: Vec<ObjectInfo> = all
            .into_iter()
            .filter(|o| {
                if skip {
                    directory_cmp(&o.key, after) == Ordering::Greater && !is_under(&o.key, after)
                } else {
                    o.key.as_str() > after
                }
            })
            .take(limit)
            .collect();
        if self.quirks.shuffle && page.len() > 2 {
            // A fixed scramble: swap neighbours pairwise.
            for i in (0..page.len() - 1).step_by(2) {
                page.swap(i, i + 1);
            }
        }
        Ok(page)
    }

    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

/// Whether `key` lies inside the directory whose name is `after`'s last component, or
/// whose name `after` extends with a byte below `/` (what such a server then skips).
fn is_under(key: &str, after: &str) -> bool {
    let (dir, last) = after.rsplit_once('/').map_or(("", after), |(d, l)| (d, l));
    let rest = match dir {
        "" => key,
        d => match key.strip_prefix(d).and_then(|r| r.strip_prefix('/')) {
            Some(r) => r,
            None => return false,
        },
    };
    let Some((name, _)) = rest.split_once('/') else {
        return false;
    };
    !last.is_empty()
        && (name == last
            || last
                .strip_prefix(name)
                .and_then(|t| t.bytes().next())
                .is_some_and(|b| b < b'/'))
}

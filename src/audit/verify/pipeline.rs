//! The verify pipeline: list → classify → pointers → check → report, the same for every
//! strategy; a [`Strategy`] supplies the listing and its own checks between the steps.

use std::collections::BTreeMap;
use std::future::Future;

use crate::audit::findings::Report;
use crate::audit::verify::options::VerifyOptions;
use crate::audit::verify::parts;
use crate::audit::verify::pointers;
use crate::base::error::Result;
use crate::format::pointer::Pointer;
use crate::publish::AtomicPublisher;

/// What a strategy does around the pipeline's shared steps.
pub(crate) trait Strategy {
    /// List and classify: fill what the listing tells into `report`, and name the
    /// pointers to read.
    fn gather(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
    ) -> impl Future<Output = Result<Vec<pointers::Wanted>>>;

    /// With the pointers read: the strategy's own checks, and the pointers whose parts to
    /// check.
    fn after_pointers(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
        read: pointers::ReadBack,
    ) -> impl Future<Output = Result<Vec<(String, Pointer)>>>;

    /// A part's size as the strategy's listing saw it (`None`: not listed, or no listing).
    fn listed_size(&self, key: &str) -> Option<u64>;

    /// With the parts checked (`store_ids`: the store ids their footers name, with how
    /// many name each): what is left to judge.
    fn after_parts(
        &mut self,
        store: &dyn AtomicPublisher,
        opts: &VerifyOptions,
        report: &mut Report,
        store_ids: &BTreeMap<String, u64>,
    ) -> impl Future<Output = Result<()>>;
}

/// list → classify → pointers → check → report.
pub(crate) async fn run<S: Strategy + Sync>(
    store: &dyn AtomicPublisher,
    opts: &VerifyOptions,
    mut strategy: S,
) -> Result<Report> {
    let mut report = Report {
        store: store.describe(),
        ..Report::default()
    };
    let wanted = strategy.gather(store, opts, &mut report).await?;
    let read = pointers::read(store, wanted, opts.concurrency, &mut report).await;
    let to_check = strategy
        .after_pointers(store, opts, &mut report, read)
        .await?;
    let store_ids = parts::check_parts(store, opts, &mut report, to_check, &|k| {
        strategy.listed_size(k)
    })
    .await;
    strategy
        .after_parts(store, opts, &mut report, &store_ids)
        .await?;
    crate::audit::verify::adopted::judge(&mut report, opts.accept_adopted);
    report
        .problems
        .sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
    report.in_flight_objects.sort_by(|a, b| a.key.cmp(&b.key));
    report.settle();
    Ok(report)
}

//! What to report on, and against what.

use std::sync::Arc;

use crate::audit::verify::options::VerifyOptions;
use crate::publish::AtomicPublisher;

/// What to report on, and against what.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// The verification's options: its trust anchors (`expect_head`, `public_keys`,
    /// `signed_from`) and how it checks.
    pub verify: VerifyOptions,
    /// Where each of `verify.public_keys` came from (a file name), in the same order.
    pub key_sources: Vec<String>,
    /// A witness store to check the seal chain against, and its name for the report.
    pub witness: Option<(Arc<dyn AtomicPublisher>, String)>,
    /// Outside witnesses of which at least a quorum must have cosigned the newest seal's
    /// checkpoint (`--witness-key`, `--witness-quorum`).
    pub witness_keys: Option<crate::audit::cosigners::WitnessKeys>,
    /// Only these runs get sections (default: every run, up to [`MAX_RUNS`](super::MAX_RUNS)).
    pub run_ids: Vec<String>,
    /// Count the commits sealed by seals 1..=N (default: the newest seal, and the commits
    /// not sealed yet).
    pub as_of_seal: Option<u64>,
    /// The store URL as given (for the commands in "how to check independently").
    pub store_url: String,
}

//! Which contract version a streamed append or a [`Sink`](super::Sink) writes, and
//! batches widened to it, by the rules of `lineage append --schema-version`
//! ([`contract::for_append`]): the requested version when given; otherwise the version of
//! the first accepted batch when it is typed (Arrow, Parquet, a `RecordBatch`: its schema
//! says which version it is), or the newest for text input and single events (their
//! readers produce 1.2.0's columns; the columns later versions add are null).
//!
//! The version is fixed by the first batch accepted, so every part of one append or sink
//! is one version. A later batch of an older version is widened with null columns; one
//! with columns the fixed version lacks is refused (it would lose values), and nothing of
//! it is kept.

use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::base::error::{Error, Result};
use crate::schema::contract::{self, ContractVersion};

/// The version being written, fixed by the first accepted batch unless requested.
#[derive(Debug, Clone, Default)]
pub(crate) struct VersionPin {
    requested: Option<Arc<ContractVersion>>,
    fixed: Option<Arc<ContractVersion>>,
    /// The newest version among the accepted batches as they came (a text reader's batch
    /// is the oldest version that holds its values).
    input: Option<Arc<ContractVersion>>,
}

impl VersionPin {
    /// Writing `requested` (refused when not registered), or as the first batch says.
    pub(crate) fn new(requested: Option<&str>) -> Result<Self> {
        let requested = requested.map(contract::version).transpose()?;
        Ok(Self {
            fixed: requested.clone(),
            requested,
            input: None,
        })
    }

    /// The version written, once known.
    pub(crate) fn fixed(&self) -> Option<&Arc<ContractVersion>> {
        self.fixed.as_ref()
    }

    /// `batch` (in some registered version's schema) as the version this append writes,
    /// and that version; nothing is fixed until [`accept`](Self::accept).
    pub(crate) fn conform(
        &self,
        batch: RecordBatch,
        typed: bool,
    ) -> Result<(RecordBatch, Arc<ContractVersion>)> {
        self.conform_from(batch, typed).map(|(b, to, _)| (b, to))
    }

    /// [`conform`](Self::conform), also returning the version the batch came as.
    pub(crate) fn conform_from(
        &self,
        batch: RecordBatch,
        typed: bool,
    ) -> Result<(RecordBatch, Arc<ContractVersion>, Arc<ContractVersion>)> {
        let from = contract::version_of_schema(batch.schema().as_ref())?;
        let to = match &self.fixed {
            Some(v) => v.clone(),
            None => contract::append_target(self.requested.as_ref(), typed, &from),
        };
        let batch = contract::conform(vec![batch], &from, &to)?
            .pop()
            .ok_or_else(|| Error::internal("conform lost a batch"))?;
        Ok((batch, to, from))
    }

    /// Fix the version after the first batch was accepted.
    pub(crate) fn accept(&mut self, v: Arc<ContractVersion>) {
        self.fixed.get_or_insert(v);
    }

    /// Note the version an accepted batch came as ([`conform_from`](Self::conform_from)).
    pub(crate) fn saw_input(&mut self, from: Arc<ContractVersion>) {
        if self
            .input
            .as_ref()
            .is_none_or(|i| i.columns.len() < from.columns.len())
        {
            self.input = Some(from);
        }
    }

    /// The version the accepted batches came as, when it is older than the version written
    /// and nothing asked for that one: text input whose values all fit an older version
    /// (which binaries before the newer version wrote it as).
    pub(crate) fn older_input(&self) -> Option<&Arc<ContractVersion>> {
        let (input, fixed) = (self.input.as_ref()?, self.fixed.as_ref()?);
        (self.requested.is_none() && input.version != fixed.version).then_some(input)
    }
}

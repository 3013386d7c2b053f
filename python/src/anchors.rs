//! The anchors every read of sealed history takes in Python (`expect_head`, `public_key`,
//! `signed_from`, `witness`, `witness_endpoint_url`, `witness_keys`, `witness_quorum`),
//! as the CLI's `AnchorArgs`: one parser ([`AnchorIn`] into [`AnchorKw`]), turned into the
//! library's [`Anchors`] once the store is at hand.

use std::path::PathBuf;
use std::sync::Arc;

use lineage_store::{
    read_public_key, snapshot, Anchors, AtomicPublisher, Error, ReadOptions, Snapshot,
    StoreOptions, WitnessAnchor,
};
use pyo3::prelude::*;

use crate::errors::{IntoPyResult, LResult};

/// The anchors as given: checked and read, the witness not opened yet.
pub struct AnchorKw {
    /// The head, keys and first signed seal ([`Anchors::witness`] is `None`).
    pub base: Anchors,
    /// Where each public key came from.
    pub key_paths: Vec<PathBuf>,
    /// The witness store's URL and endpoint.
    pub witness: Option<(String, Option<String>)>,
}

/// The anchor keywords as a method received them, passed on whole.
pub struct AnchorIn<'py> {
    /// `expect_head=`: a head digest.
    pub expect_head: Option<String>,
    /// `public_key=`: a path or a list of paths.
    pub public_key: Option<Bound<'py, PyAny>>,
    /// `signed_from=`.
    pub signed_from: Option<u64>,
    /// `witness=`: a witness store's URL.
    pub witness: Option<String>,
    /// `witness_endpoint_url=`.
    pub witness_endpoint_url: Option<String>,
    /// `witness_keys=[…]`: outside witnesses' verifier keys.
    pub witness_keys: Option<Vec<String>>,
    /// `witness_quorum=K`.
    pub witness_quorum: Option<usize>,
}

/// A path, or a list (or tuple) of paths.
pub fn paths(arg: Option<Bound<'_, PyAny>>) -> PyResult<Vec<PathBuf>> {
    Ok(match arg {
        None => Vec::new(),
        Some(k) => match k.extract::<PathBuf>() {
            Ok(p) => vec![p],
            Err(_) => k.extract::<Vec<PathBuf>>()?,
        },
    })
}

impl AnchorKw {
    /// The keyword arguments: the head digest and the witness keys checked, the key files
    /// read.
    pub fn new(py: Python<'_>, a: AnchorIn<'_>) -> PyResult<Self> {
        let AnchorIn {
            expect_head,
            public_key,
            signed_from,
            witness,
            witness_endpoint_url,
            witness_keys: keys,
            witness_quorum,
        } = a;
        if let Some(h) = &expect_head {
            if Anchors::check_head_digest(h).is_err() {
                let e = Error::usage(format!("expect_head={h:?} is not a sha256 (64 hex digits)"));
                return Err(crate::errors::to_py(py, e));
            }
        }
        let witness_keys = witness_keys(keys, witness_quorum).py_err(py)?;
        let key_paths = paths(public_key)?;
        let public_keys = key_paths
            .iter()
            .map(|p| read_public_key(p))
            .collect::<LResult<Vec<_>>>()
            .py_err(py)?;
        Ok(Self {
            base: Anchors {
                expect_head,
                public_keys,
                signed_from,
                witness: None,
                witness_keys,
            },
            key_paths,
            witness: witness.map(|w| (w, witness_endpoint_url)),
        })
    }

    /// The witness store, opened (refused when it is the store itself), and its URL.
    pub async fn open_witness(
        &self,
        store: &Arc<dyn AtomicPublisher>,
    ) -> LResult<Option<(Arc<dyn AtomicPublisher>, String)>> {
        let Some((url, endpoint)) = &self.witness else {
            return Ok(None);
        };
        let opts = StoreOptions::new()
            .endpoint_url(endpoint.clone())
            .limits(store.read_limits());
        let opened: Arc<dyn AtomicPublisher> = lineage_store::open(url, &opts).await?;
        if opened.describe() == store.describe() {
            return Err(Error::usage(format!(
                "witness={url:?} is the store itself: a witness must be another store, which the store's writers cannot change"
            )));
        }
        Ok(Some((opened, url.clone())))
    }

    /// The library's anchors, the witness opened.
    pub async fn anchors(&self, store: &Arc<dyn AtomicPublisher>) -> LResult<Anchors> {
        let witness = self.open_witness(store).await?.map(|(w, _)| {
            Arc::new(lineage_store::witness::Witness::new(w)) as Arc<dyn WitnessAnchor>
        });
        Ok(Anchors {
            witness,
            ..self.base.clone()
        })
    }
}

impl AnchorKw {
    /// The snapshot `opts` asks for, every anchor checked: against the whole chain before
    /// the read, or, reading since a seal (`since_seal`), against the seals that read
    /// read, never the whole chain (a witness's records of earlier seals counted, not
    /// checked), and the witness keys against the newest seal.
    pub async fn read(
        &self,
        store: &Arc<dyn AtomicPublisher>,
        opts: &ReadOptions,
    ) -> LResult<Snapshot> {
        let anchors = self.anchors(store).await?;
        if opts.since_seal.is_none() {
            anchors.require(store.as_ref()).await?;
            return snapshot(store.as_ref(), opts).await;
        }
        let snap = snapshot(store.as_ref(), opts).await?;
        if let Some(range) = &snap.since {
            anchors.require_since(store.as_ref(), range).await?;
        }
        Ok(snap)
    }
}

/// `witness_keys=[…]`, `witness_quorum=K` (as `--witness-key … --witness-quorum K`): the keys parsed and the quorum checked.
pub fn witness_keys(
    keys: Option<Vec<String>>,
    quorum: Option<usize>,
) -> lineage_store::Result<Option<lineage_store::WitnessKeys>> {
    let keys = keys.unwrap_or_default();
    if keys.is_empty() {
        if quorum.is_some() {
            return Err(Error::usage("witness_quorum needs witness_keys"));
        }
        return Ok(None);
    }
    let keys = keys
        .iter()
        .map(|k| {
            lineage_store::parse_witness_vkey(k)
                .map_err(|why| Error::usage(format!("witness_keys: {:?} {why}", k.trim())))
        })
        .collect::<lineage_store::Result<Vec<_>>>()?;
    let w = lineage_store::WitnessKeys { keys, quorum };
    w.check()?;
    Ok(Some(w))
}

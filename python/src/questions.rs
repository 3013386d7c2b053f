//! The auditor's questions from Python (`Store.seals`, `Store.show`, `Store.diff`), as
//! `lineage seals`, `show` and `diff` answer them: each returns what the command's
//! `--json` prints, as Python objects, with the same trust anchors.

use std::path::PathBuf;
use std::sync::Arc;

use lineage_store::{
    diff_seals, list_seals, read_public_key, show, AtomicPublisher, Error, StoreOptions, Trust,
};
use pyo3::prelude::*;

use crate::anchors::AnchorKw;
use crate::errors::{self, IntoPyResult, LResult};
use crate::runtime::block_on_local;

/// The signature rules of `public_key` (a path or a list of paths) and `signed_from`.
pub(crate) fn trust(
    public_key: Option<Bound<'_, PyAny>>,
    signed_from: Option<u64>,
) -> PyResult<LResult<Option<Trust>>> {
    let paths: Vec<PathBuf> = match public_key {
        None => Vec::new(),
        Some(k) => match k.extract::<PathBuf>() {
            Ok(p) => vec![p],
            Err(_) => k.extract::<Vec<PathBuf>>()?,
        },
    };
    let keys = match paths
        .iter()
        .map(|p| read_public_key(p))
        .collect::<LResult<Vec<_>>>()
    {
        Ok(k) => k,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(
        (!keys.is_empty() || signed_from.is_some()).then_some(Trust { keys, signed_from })
    ))
}

fn to_py<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| errors::to_py(py, Error::internal_from(e)))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// `Store.seals`: {"seals": [...], "problems": [...], "expect_head_seq": n,
/// "witness_problems": [...], "witness_keys": [...], "witness_keys_problems": [...]}.
#[allow(clippy::too_many_arguments)]
pub(crate) fn seals<'py>(
    py: Python<'py>,
    store: Arc<dyn AtomicPublisher>,
    public_key: Option<Bound<'py, PyAny>>,
    signed_from: Option<u64>,
    expect_head: Option<String>,
    witness: Option<String>,
    witness_endpoint_url: Option<String>,
    (witness_keys, witness_quorum): (Option<Vec<String>>, Option<usize>),
) -> PyResult<Bound<'py, PyAny>> {
    let trust = trust(public_key, signed_from)?.py_err(py)?;
    let cosigners = lineage_store::Anchors {
        witness_keys: crate::anchors::witness_keys(witness_keys, witness_quorum).py_err(py)?,
        ..Default::default()
    };
    let out = block_on_local(py, move || async move {
        let (witness_report, witnessed) = match witness {
            Some(w) => {
                let opts = StoreOptions::new()
                    .endpoint_url(witness_endpoint_url)
                    .limits(store.read_limits());
                let opened: Arc<dyn AtomicPublisher> = lineage_store::open(&w, &opts).await?;
                let (r, seqs) =
                    lineage_store::witness::check_store(store.as_ref(), opened.as_ref()).await?;
                (Some(r), Some(seqs))
            }
            None => (None, None),
        };
        let list = list_seals(
            store.as_ref(),
            trust.as_ref(),
            expect_head.as_deref(),
            witnessed.as_ref(),
        )
        .await?;
        // The witness keys, judged on the newest seal (as `lineage seals --witness-key`).
        let cosigned = cosigners.check(store.as_ref()).await?;
        let cosign_problems: Vec<serde_json::Value> = cosigned
            .problems
            .iter()
            .map(|p| {
                let p = crate::types::Problem::from(p);
                serde_json::json!({"kind": p.kind, "key": p.key, "message": p.message})
            })
            .collect();
        Ok(serde_json::json!({
            "seals": list.seals,
            "problems": list.problems,
            "expect_head_seq": list.expect_head_seq,
            "witness_problems": witness_report.map(|r| r.problems).unwrap_or_default(),
            "witness_keys": cosigned.outcomes,
            "witness_keys_problems": cosign_problems,
        }))
    })?
    .py_err(py)?;
    to_py(py, &out)
}

/// The signature rules of the anchors given (`None`: no key and no `signed_from`).
fn trust_of(kw: &AnchorKw) -> Option<Trust> {
    (!kw.base.public_keys.is_empty() || kw.base.signed_from.is_some()).then(|| Trust {
        keys: kw.base.public_keys.clone(),
        signed_from: kw.base.signed_from,
    })
}

/// `Store.show`: the commit or seal `what`, as `lineage show --json` prints it, once every
/// anchor given holds (as `lineage show` with them).
pub(crate) fn show_one<'py>(
    py: Python<'py>,
    store: Arc<dyn AtomicPublisher>,
    what: String,
    kw: AnchorKw,
) -> PyResult<Bound<'py, PyAny>> {
    let shown = block_on_local(py, move || async move {
        kw.anchors(&store).await?.require(store.as_ref()).await?;
        show(store.as_ref(), &what, trust_of(&kw).as_ref(), None).await
    })?
    .py_err(py)?;
    to_py(py, &shown)
}

/// `Store.diff`: what changed from seal `a` to seal `b`, as `lineage diff --json` prints it,
/// once every anchor given holds.
pub(crate) fn diff<'py>(
    py: Python<'py>,
    store: Arc<dyn AtomicPublisher>,
    a: u64,
    b: u64,
    kw: AnchorKw,
) -> PyResult<Bound<'py, PyAny>> {
    let d = block_on_local(py, move || async move {
        kw.anchors(&store).await?.require(store.as_ref()).await?;
        diff_seals(store.as_ref(), a, b, trust_of(&kw).as_ref()).await
    })?
    .py_err(py)?;
    to_py(py, &d)
}

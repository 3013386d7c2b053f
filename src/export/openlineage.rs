//! OpenLineage `RunEvent`s (spec 2-0-2, the version openlineage-python 1.54 emits).
//!
//! **Two events per run** by default: `START` at the run's first event time and
//! `COMPLETE` at its last (`eventTime` is the job's own time, from the events'
//! `event_time_utc`, not when they were stored): OpenLineage's unit is the run, and a
//! consumer (Marquez, DataHub, OpenMetadata) shows one run, with its duration, and one
//! output dataset per target CRS partition carried by `COMPLETE`, each with the commits
//! that wrote it. **One event per commit** ([`Granularity::Commit`], `eventType` `OTHER`,
//! `eventTime` the commit's last event time) suits an incremental feed (`--since-seal`),
//! where each commit should arrive exactly once.
//!
//! - `run.runId`: [`run_uuid`], a UUIDv5 of the store's identity and its `run_id`, so
//!   re-exports of a run (and its per-commit events) share one OpenLineage run, and two
//!   stores' runs of one name do not.
//! - datasets: the partitions `run_id=<r>/target_crs=<c>` named by [`crate::export::dataset_id`];
//!   `inputs` is empty (the store records features, not the data sets they came from:
//!   source CRSs are counted in the outcome facet).
//! - standard facets: `jobType`, and per output `schema`, `dataSource`, `version` (the
//!   Delta version, which is the seal number, that first holds every commit of the
//!   output; absent while one is not sealed) and `outputStatistics`.
//! - custom facets, prefixed `lineageStore_`, each with its own `_schemaURL` under
//!   [`FACET_SCHEMA_BASE`] (the JSON Schemas are in `docs/openlineage/facets/`):
//!   `lineageStore_run` (run: store, run id, covering seal, adopted commits), `lineageStore_commits`
//!   (output: commit ids, part sha256, row counts, the seal that sealed each) and
//!   `lineageStore_outcomes` (output: outcome counts, rejection reasons, source CRSs, per
//!   stage).
//!
//! Nothing is null: an absent value is left out (openlineage-python drops nulls too).

use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::base::error::{Error, Result};
use crate::export::{dataset_id, merge_stats, ExportedCommit, RunExport, Snapshot};
use crate::parts::scan::StageStats;
use crate::read::snapshot::types::SealRef;
use crate::schema::contract;

/// The RunEvent schema the events follow.
pub const RUN_EVENT_SCHEMA_URL: &str =
    "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent";
/// Where the project is published: the producer URI and the facet schemas live under it.
/// A placeholder (`.invalid` is reserved, RFC 2606) until the project has a public home;
/// changing it changes every exported event.
pub const PROJECT_URL: &str = "https://lineage-store.invalid";
/// Base of the custom facets' `_schemaURL`s (files in `docs/openlineage/facets/1-0-0/`).
pub const FACET_SCHEMA_BASE: &str = "https://lineage-store.invalid/openlineage/facets/1-0-0/";
/// Prefix of the custom facets' keys.
pub const FACET_PREFIX: &str = "lineageStore_";
/// Namespace of [`run_uuid`], fixed forever: `afe9588c-dd93-5510-aaba-ba3f23c06673`, the
/// UUIDv5 of the URL `urn:lineage-store:run_id` in RFC 9562's URL namespace.
pub const RUN_ID_NAMESPACE: Uuid = Uuid::from_u128(0xafe9_588c_dd93_5510_aaba_ba3f_23c0_6673);

/// The producer URI of every event and facet.
pub fn producer() -> String {
    format!("{PROJECT_URL}/releases/v{}", env!("CARGO_PKG_VERSION"))
}

/// The OpenLineage run id of a store `run_id` in the store whose identity is `store_id`:
/// UUIDv5 (RFC 9562) of `<store_id>/<run_id>` in a fixed namespace, so any UUID library
/// recomputes it, re-exports are stable, and the same `run_id` in two stores gives two
/// ids (a replica shares its store's identity, so it exports the same ids). A store
/// without an identity (written before them, not appended to since) keeps the id of
/// `run_id` alone.
pub fn run_uuid(store_id: Option<&str>, run_id: &str) -> Uuid {
    match store_id {
        Some(s) => Uuid::new_v5(&RUN_ID_NAMESPACE, format!("{s}/{run_id}").as_bytes()),
        None => Uuid::new_v5(&RUN_ID_NAMESPACE, run_id.as_bytes()),
    }
}

/// Events per run, or one per commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Granularity {
    /// A `START` and a `COMPLETE` event per run.
    Run,
    /// One `OTHER` event per commit.
    Commit,
}

/// How the job is named.
#[derive(Debug, Clone, Default)]
pub struct JobNaming {
    /// Job namespace (default `lineage-store`).
    pub namespace: Option<String>,
    /// Job name (default: the tool names of the run's `tool_version`s).
    pub name: Option<String>,
}

/// The events of a snapshot, in run order (and commit order within a run).
pub fn events(snap: &Snapshot, per: Granularity, job: &JobNaming) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for run in &snap.runs {
        let job_name = match &job.name {
            Some(n) => n.clone(),
            None => default_job_name(run),
        };
        let job_ns = job.namespace.as_deref().unwrap_or("lineage-store");
        match per {
            Granularity::Run => {
                let all: Vec<&ExportedCommit> = run.commits.iter().collect();
                let first = all
                    .iter()
                    .map(|c| c.pointer.min_event_time_utc.as_str())
                    .min();
                let last = all
                    .iter()
                    .map(|c| c.pointer.max_event_time_utc.as_str())
                    .max();
                let (Some(first), Some(last)) = (first, last) else {
                    continue;
                };
                let seal = run.covering_seal();
                let mut start =
                    event(snap, run, &all, ("START", first), seal, (job_ns, &job_name))?;
                start["outputs"] = json!([]);
                out.push(start);
                out.push(event(
                    snap,
                    run,
                    &all,
                    ("COMPLETE", last),
                    seal,
                    (job_ns, &job_name),
                )?);
            }
            Granularity::Commit => {
                for c in &run.commits {
                    out.push(event(
                        snap,
                        run,
                        &[c],
                        ("OTHER", &c.pointer.max_event_time_utc),
                        c.sealed_by.as_ref(),
                        (job_ns, &job_name),
                    )?);
                }
            }
        }
    }
    Ok(out)
}

/// NDJSON: one compact event per line.
pub fn to_ndjson(events: &[Value]) -> Result<String> {
    let mut s = String::new();
    for e in events {
        s.push_str(&serde_json::to_string(e).map_err(Error::internal_from)?);
        s.push('\n');
    }
    Ok(s)
}

/// The tool names (without `/version`) of a run's events, sorted, joined by `+`.
fn default_job_name(run: &RunExport) -> String {
    let mut names: Vec<&str> = Vec::new();
    for c in &run.commits {
        for s in c.stats.stages.values() {
            for t in s.tools.keys() {
                let name = t.rsplit_once('/').map_or(t.as_str(), |(n, _)| n);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names.sort_unstable();
    if names.is_empty() {
        "lineage-store-run".to_string()
    } else {
        names.join("+")
    }
}

fn facet(name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("_producer".into(), json!(producer()));
    m.insert(
        "_schemaURL".into(),
        json!(format!("{FACET_SCHEMA_BASE}{name}.json#/$defs/{name}")),
    );
    m
}

fn std_facet(url: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("_producer".into(), json!(producer()));
    m.insert("_schemaURL".into(), json!(url));
    m
}

fn with(mut m: Map<String, Value>, fields: Value) -> Value {
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Value::Object(m)
}

fn seal_json(s: &SealRef) -> Value {
    json!({"seq": s.seq, "sha256": s.sha256})
}

fn event(
    snap: &Snapshot,
    run: &RunExport,
    commits: &[&ExportedCommit],
    (event_type, event_time): (&str, &str),
    seal: Option<&SealRef>,
    (job_ns, job_name): (&str, &str),
) -> Result<Value> {
    let run_facet = run_facet(snap, run, commits, seal);
    let outputs = outputs(snap, run, commits);
    Ok(json!({
        "eventType": event_type,
        "eventTime": event_time,
        "producer": producer(),
        "schemaURL": RUN_EVENT_SCHEMA_URL,
        "run": {
            "runId": run_uuid(snap.store_id.as_deref(), &run.run_id).to_string(),
            "facets": {
                format!("{FACET_PREFIX}run"): with(facet("LineageStoreRunFacet"), run_facet),
            },
        },
        "job": {
            "namespace": job_ns,
            "name": job_name,
            "facets": {
                "jobType": with(
                    std_facet("https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet"),
                    json!({"processingType": "BATCH", "integration": "LINEAGE_STORE", "jobType": "JOB"}),
                ),
            },
        },
        "inputs": [],
        "outputs": outputs,
    }))
}

/// The run facet of an event: the store, the run, its commits and rows (and how many are
/// unsealed), their event time range, the seal cited, and the commits `repair` adopted.
fn run_facet(
    snap: &Snapshot,
    run: &RunExport,
    commits: &[&ExportedCommit],
    seal: Option<&SealRef>,
) -> Value {
    let rows: u64 = commits.iter().map(|c| c.pointer.row_count).sum();
    let mut run_facet = json!({
        "store": snap.store_url,
        "runId": run.run_id,
        "commitCount": commits.len(),
        "rowCount": rows,
        "unsealedCommits": commits.iter().filter(|c| c.sealed_by.is_none()).count(),
    });
    if let Some(id) = &snap.store_id {
        run_facet["storeId"] = json!(id);
    }
    if let (Some(lo), Some(hi)) = (
        commits.iter().map(|c| &c.pointer.min_event_time_utc).min(),
        commits.iter().map(|c| &c.pointer.max_event_time_utc).max(),
    ) {
        run_facet["minEventTimeUtc"] = json!(lo);
        run_facet["maxEventTimeUtc"] = json!(hi);
    }
    if let Some(s) = seal {
        run_facet["seal"] = seal_json(s);
    }
    let adopted: Vec<&str> = commits
        .iter()
        .filter(|c| c.pointer.adopted)
        .map(|c| c.pointer.commit_id.as_str())
        .collect();
    if !adopted.is_empty() {
        run_facet["adoptedCommits"] = json!(adopted);
    }
    run_facet
}

/// One output dataset per target CRS of the commits.
fn outputs(snap: &Snapshot, run: &RunExport, commits: &[&ExportedCommit]) -> Vec<Value> {
    let mut targets: Vec<&str> = commits
        .iter()
        .map(|c| c.pointer.target_crs.as_str())
        .collect();
    targets.sort_unstable();
    targets.dedup();
    targets
        .into_iter()
        .map(|t| {
            let of: Vec<&ExportedCommit> = commits
                .iter()
                .copied()
                .filter(|c| c.pointer.target_crs == t)
                .collect();
            output(snap, &run.run_id, t, &of)
        })
        .collect()
}

fn output(snap: &Snapshot, run_id: &str, target: &str, commits: &[&ExportedCommit]) -> Value {
    let (namespace, name) = dataset_id(&snap.store_url, run_id, target);
    let stats = merge_stats(commits.iter().copied());
    let total = stats.total();
    let rows: u64 = commits.iter().map(|c| c.pointer.row_count).sum();
    let bytes: u64 = commits.iter().map(|c| c.pointer.size_bytes).sum();
    let commit_list: Vec<Value> = commits.iter().map(|c| commit_json(c)).collect();
    // The Delta version (= the seal number) that first holds every commit: the newest
    // seal among theirs, when all are sealed.
    let version = commits
        .iter()
        .map(|c| c.sealed_by.as_ref().map(|s| s.seq))
        .collect::<Option<Vec<u64>>>()
        .and_then(|v| v.into_iter().max());
    let stages: Map<String, Value> = stats
        .stages
        .iter()
        .map(|(stage, s)| (stage.clone(), stage_json(s)))
        .collect();
    let mut outcomes = stage_json(&total);
    outcomes["targetCrs"] = json!(target);
    outcomes["stages"] = Value::Object(stages);
    let mut v = json!({
        "namespace": namespace,
        "name": name,
        "facets": {
            "schema": with(
                std_facet("https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"),
                json!({"fields": schema_fields(commits)}),
            ),
            "dataSource": with(
                std_facet("https://openlineage.io/spec/facets/1-0-1/DatasourceDatasetFacet.json#/$defs/DatasourceDatasetFacet"),
                json!({"name": snap.store_url, "uri": snap.store_url}),
            ),
        },
        "outputFacets": {
            "outputStatistics": with(
                std_facet("https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"),
                json!({"rowCount": rows, "size": bytes, "fileCount": commits.len()}),
            ),
            format!("{FACET_PREFIX}commits"): with(
                facet("LineageStoreCommitsOutputDatasetFacet"),
                json!({"commits": commit_list}),
            ),
            format!("{FACET_PREFIX}outcomes"): with(
                facet("LineageStoreOutcomesOutputDatasetFacet"),
                outcomes,
            ),
        },
    });
    if let Some(version) = version {
        v["facets"]["version"] = with(
            std_facet("https://openlineage.io/spec/facets/1-0-1/DatasetVersionDatasetFacet.json#/$defs/DatasetVersionDatasetFacet"),
            json!({"datasetVersion": version.to_string()}),
        );
    }
    v
}

fn commit_json(c: &ExportedCommit) -> Value {
    let p = &c.pointer;
    let mut v = json!({
        "commitId": p.commit_id,
        "partPath": p.part_path,
        "sha256": p.sha256,
        "sizeBytes": p.size_bytes,
        "rowCount": p.row_count,
        "schemaVersion": p.schema_version,
        "committedUtc": p.committed_utc,
        "firstSequence": p.first_sequence,
        "lastSequence": p.last_sequence,
        "minEventTimeUtc": p.min_event_time_utc,
        "maxEventTimeUtc": p.max_event_time_utc,
        "pointerSha256": c.pointer_sha256,
    });
    if let Some(s) = &c.sealed_by {
        v["sealedBy"] = seal_json(s);
    }
    if let Some(k) = &p.commit_key {
        v["commitKey"] = json!(k);
    }
    if p.adopted {
        v["adopted"] = json!(true);
    }
    v
}

fn stage_json(s: &StageStats) -> Value {
    json!({
        "rowCount": s.rows,
        "transformed": s.outcome("transformed"),
        "rejected": s.outcome("rejected"),
        "outcomes": s.outcomes,
        "rejectionReasons": s.rejection_reasons,
        "sourceCrs": s.source_crs,
        "eventTypes": s.event_types,
    })
}

/// The columns of the newest contract version among the commits (a reader of the
/// partition sees their union: later versions only add columns).
fn schema_fields(commits: &[&ExportedCommit]) -> Vec<Value> {
    let columns = commits
        .iter()
        .filter_map(|c| contract::version(&c.pointer.schema_version).ok())
        .max_by_key(|v| v.columns.len())
        .map_or_else(|| contract::COLUMNS.to_vec(), |v| v.columns.clone());
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "name": c.name,
                "type": contract::arrow_type(c.kind).to_string(),
                "description": c.doc,
                "ordinal_position": i + 1,
            })
        })
        .collect()
}

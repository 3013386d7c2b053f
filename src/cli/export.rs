//! `lineage export`: lineage out to other tools (`openlineage`, `iso19115`). The content
//! is built in [`crate::export`]; this file parses flags and writes or posts it.

use std::path::PathBuf;
use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::cli::common::{out, write_out_file, Status, StoreArg};
use crate::export::catalogue::{Bbox, IsoOptions};
use crate::export::iso19115;
use crate::export::iso19115::IsoFormat;
use crate::export::openlineage::{self, Granularity, JobNaming};
use crate::export::post::{self, PostConfig, Secret};
use crate::export::{self, Selection};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// OpenLineage RunEvents as NDJSON (one per run, or per commit), optionally POSTed
    /// to an OpenLineage HTTP endpoint.
    Openlineage(OlArgs),
    /// The ISO 19115-3 (or ISO 19139) lineage record of one run.
    Iso19115(IsoArgs),
}

#[derive(Debug, clap::Args)]
struct OlArgs {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    /// Only this run.
    #[arg(long)]
    run_id: Option<String>,
    /// Only commits sealed by seals newer than SEQ (an incremental feed).
    #[arg(long, value_name = "SEQ")]
    since_seal: Option<u64>,
    /// As of the newest seal sealed at or before T (RFC 3339, or a date: the end of that
    /// day, UTC): only the commits it and the seals before it sealed.
    #[arg(long, value_name = "T")]
    as_of_time: Option<String>,
    /// Per run a START and a COMPLETE event (at the run's first and last event time), or
    /// one OTHER event per commit (at its last event time).
    #[arg(long, value_enum, default_value_t = Granularity::Run)]
    per: Granularity,
    /// Write the events here (`-`: standard output; the default unless --post is given);
    /// an existing file is refused.
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out: replace an existing file.
    #[arg(long, requires = "out")]
    force: bool,
    /// Job namespace.
    #[arg(long, default_value = "lineage-store")]
    job_namespace: String,
    /// Job name (default: the tool names in the run's tool_version values).
    #[arg(long)]
    job_name: Option<String>,
    /// POST each event to this OpenLineage endpoint (base URL, like OPENLINEAGE_URL);
    /// the bearer token comes from OPENLINEAGE_API_KEY.
    #[arg(long, value_name = "URL")]
    post: Option<String>,
    /// Path joined to --post, like OPENLINEAGE_ENDPOINT ("" posts to the URL itself).
    #[arg(long, env = "OPENLINEAGE_ENDPOINT", default_value = post::DEFAULT_ENDPOINT)]
    endpoint: String,
    /// Seconds one POST may take.
    #[arg(long, default_value_t = 10.0)]
    post_timeout: f64,
    /// Retries of an event after the first attempt.
    #[arg(long, default_value_t = 5)]
    post_retries: u32,
    /// Milliseconds before the first retry, doubled for each further one (at most 30 s).
    #[arg(long, default_value_t = 300)]
    post_backoff_ms: u64,
}

#[derive(Debug, clap::Args)]
struct IsoArgs {
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    anchors: crate::cli::anchors::AnchorArgs,
    /// The run to describe.
    #[arg(long)]
    run_id: String,
    /// As of the newest seal sealed at or before T (RFC 3339, or a date: the end of that
    /// day, UTC).
    #[arg(long, value_name = "T")]
    as_of_time: Option<String>,
    /// ISO 19115-3 (mdb/mrl) or ISO 19139 (gmd).
    #[arg(long, value_enum, default_value_t = IsoFormat::Iso19115_3)]
    format: IsoFormat,
    /// Write the record here (`-`: standard output, the default); an existing file is
    /// refused.
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out: replace an existing file.
    #[arg(long, requires = "out")]
    force: bool,
    /// Title of the described data set.
    #[arg(long)]
    title: Option<String>,
    /// Organisation named as the metadata's and the data set's point of contact.
    #[arg(long)]
    contact: Option<String>,
    /// The contact's e-mail address (with --contact).
    #[arg(long, value_name = "ADDRESS")]
    contact_email: Option<String>,
    /// The data set's geographic bounding box, decimal degrees (WGS 84): west, south,
    /// east, north (a CRS's area of use: pyproj's `CRS(code).area_of_use.bounds`).
    #[arg(long, value_name = "W,S,E,N", allow_hyphen_values = true)]
    bbox: Option<String>,
    /// A keyword of the data set (repeatable).
    #[arg(long, value_name = "WORD")]
    keyword: Vec<String>,
    /// An ISO 19115 topic category of the data set, e.g. transportation (repeatable).
    #[arg(long, value_name = "CATEGORY")]
    topic_category: Vec<String>,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    match a.what {
        What::Openlineage(a) => openlineage(a).await,
        What::Iso19115(a) => iso(a).await,
    }
}

async fn openlineage(a: OlArgs) -> Result<Status> {
    // Check the posting flags before reading the store.
    let post_cfg = match &a.post {
        Some(base) => Some(PostConfig {
            url: post::endpoint_url(base, &a.endpoint)?,
            api_key: std::env::var("OPENLINEAGE_API_KEY")
                .ok()
                .filter(|k| !k.is_empty())
                .map(Secret),
            timeout: Duration::try_from_secs_f64(a.post_timeout)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| Error::usage("--post-timeout must be a positive number"))?,
            retries: a.post_retries,
            backoff: Duration::from_millis(a.post_backoff_ms),
        }),
        None => None,
    };
    let store = a.store.open(Opening::ExistingStore).await?;
    let sel = Selection {
        run_id: a.run_id.clone(),
        since_seal: a.since_seal,
        as_of_seal: as_of(store.as_ref(), a.as_of_time.as_deref()).await?,
    };
    // The anchors judged on what is read: the whole chain, or seals K..N since K.
    let (read, _) = a
        .anchors
        .read(store.as_ref(), &export::read_options(&sel))
        .await?;
    let snap = export::collect_read(store.as_ref(), &a.store.store, &sel, read).await?;
    let job = JobNaming {
        namespace: Some(a.job_namespace.clone()),
        name: a.job_name.clone(),
    };
    let events = openlineage::events(&snap, a.per, &job)?;
    let ndjson = openlineage::to_ndjson(&events)?;
    match (&a.out, &post_cfg) {
        (Some(p), _) => write_out_file(p, ndjson.as_bytes(), a.force)?,
        (None, None) => write_out_file("-".as_ref(), ndjson.as_bytes(), false)?,
        (None, Some(_)) => {}
    }
    if let Some(cfg) = post_cfg {
        let labelled: Vec<(String, String)> = ndjson
            .lines()
            .zip(&events)
            .map(|(line, e)| (label(e), line.to_string()))
            .collect();
        let d = post::post_all(&cfg, &labelled)
            .await?
            .into_result(&cfg.shown())?;
        let line = format!(
            "posted {} events to {} ({} attempts)",
            d.delivered,
            cfg.shown(),
            d.attempts
        );
        if a.out
            .as_deref()
            .is_some_and(|p| p == std::path::Path::new("-"))
        {
            tracing::info!("{line}");
        } else {
            out(&line)?;
        }
    }
    Ok(0)
}

/// What an event is about, for messages: its store run, its type and commits, and per
/// commit, the commit.
fn label(e: &serde_json::Value) -> String {
    let facet = &e["run"]["facets"]["lineageStore_run"];
    let run = facet["runId"].as_str().unwrap_or("?");
    let kind = e["eventType"].as_str().unwrap_or("?");
    let commits: Vec<&str> = e["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|o| {
            o["outputFacets"]["lineageStore_commits"]["commits"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .filter_map(|c| c["commitId"].as_str())
        .collect();
    match (kind, commits.as_slice()) {
        ("OTHER", [one]) => format!("run_id={run} commit {one}"),
        _ => format!(
            "run_id={run} {kind}, {} commits",
            facet["commitCount"].as_u64().unwrap_or(0)
        ),
    }
}

async fn iso(a: IsoArgs) -> Result<Status> {
    // Check what the record is told before reading the store.
    let opts = IsoOptions {
        title: a.title,
        contact: a.contact,
        contact_email: a.contact_email,
        bbox: a.bbox.as_deref().map(Bbox::parse).transpose()?,
        keywords: a.keyword,
        topic_categories: a.topic_category,
    };
    opts.check(a.format == IsoFormat::Iso19139)?;
    let store = a.store.open(Opening::ExistingStore).await?;
    a.anchors.require(store.as_ref()).await?;
    let sel = Selection {
        run_id: Some(a.run_id.clone()),
        since_seal: None,
        as_of_seal: as_of(store.as_ref(), a.as_of_time.as_deref()).await?,
    };
    let snap = export::collect(store.as_ref(), &a.store.store, &sel).await?;
    let doc = iso19115::document(&snap, a.format, &opts)?;
    write_out_file(
        a.out.as_deref().unwrap_or("-".as_ref()),
        doc.as_bytes(),
        a.force,
    )?;
    Ok(0)
}

/// `--as-of-time` as a seal number.
async fn as_of(
    store: &dyn crate::publish::AtomicPublisher,
    t: Option<&str>,
) -> Result<Option<u64>> {
    match t {
        Some(t) => Ok(Some(crate::read::as_of::seal_as_of_time(store, t).await?)),
        None => Ok(None),
    }
}

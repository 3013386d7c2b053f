//! ISO 19115 lineage of one run: ISO 19115-3 XML (`mdb`/`mrl` 2.0 namespaces), or ISO
//! 19139 (`gmd`) for catalogues that still expect it ([`super::iso19139`]).
//!
//! The record describes the run as a data set whose lineage (`LI_Lineage`) has:
//! - a statement: the store, the run, the counts, the time range, and the seal and head
//!   digest that prove the records (or how many commits are not sealed yet);
//! - one process step per (stage, target CRS), in stage then CRS order: a description
//!   with the counts of transformed and rejected features and the rejection reasons
//!   summarised, the date-time range of its events, the processor (`tool_version`), the
//!   source reference systems (one `LI_Source` each, with its event count), and in
//!   19115-3 the target reference system (`LE_ProcessStep.output`), the counts as a
//!   `LE_ProcessStepReport`, the tool as `LE_Processing`, and a reference to the seal and
//!   its head digest plus the commit ids (each provable with `lineage prove`).
//!
//! The output is a function of the store's content only (no clock): the metadata date is
//! the run's last commit time.

use std::collections::BTreeMap;

use super::xml::Xml;
use super::{merge_stats, openlineage::run_uuid, RunExport, SealRef, Snapshot, StageStats};
use crate::error::{Error, Result};
use crate::pointer::rfc3339_us;

/// Which ISO encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IsoFormat {
    /// ISO 19115-3 (`mdb` 2.0, `mrl` 2.0).
    #[value(name = "iso19115-3")]
    Iso19115_3,
    /// ISO 19139 (`gmd`, 2007-04-17 schemas).
    #[value(name = "iso19139")]
    Iso19139,
}

/// What the store cannot say about the record.
#[derive(Debug, Clone, Default)]
pub struct IsoOptions {
    /// Title of the data set (default: `Lineage of run <run_id>`).
    pub title: Option<String>,
    /// Organisation to name as the metadata contact (default: none, `nilReason="missing"`).
    pub contact: Option<String>,
}

/// One process step: a stage of the run into one target CRS.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub stage: String,
    pub target: String,
    pub stats: StageStats,
    pub begin: String,
    pub end: String,
    pub commit_ids: Vec<String>,
}

impl Step {
    pub(crate) fn transformed(&self) -> u64 {
        self.stats.outcome("transformed")
    }
    pub(crate) fn rejected(&self) -> u64 {
        self.stats.outcome("rejected")
    }

    /// "crs_transform" or "a, b" for several event types.
    fn event_types(&self) -> String {
        self.stats
            .event_types
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The outcome counts, with reasons, in one sentence.
    pub(crate) fn outcome_summary(&self) -> String {
        let mut parts = vec![
            format!("{} transformed", self.transformed()),
            format!("{} rejected", self.rejected()),
        ];
        for (o, n) in &self.stats.outcomes {
            if o != "transformed" && o != "rejected" {
                parts.push(format!("{n} {o}"));
            }
        }
        let mut s = parts.join(", ");
        if !self.stats.rejection_reasons.is_empty() {
            s.push_str(&format!(
                "; rejection reasons: {}",
                summarise(&self.stats.rejection_reasons)
            ));
        }
        s
    }

    pub(crate) fn description(&self) -> String {
        let sources = if self.stats.source_crs.is_empty() {
            "no source CRS recorded".to_string()
        } else {
            format!("from {}", summarise(&self.stats.source_crs))
        };
        format!(
            "Stage `{}` ({}) into {} of {} features {sources}: {}.",
            self.stage,
            self.event_types(),
            self.target,
            self.stats.rows,
            self.outcome_summary()
        )
    }

    /// Events without a source CRS.
    pub(crate) fn without_source(&self) -> u64 {
        self.stats.rows - self.stats.source_crs.values().sum::<u64>()
    }
}

/// `a (12), b (3)`: most frequent first, then by name.
pub(crate) fn summarise(counts: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = counts.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The format-neutral content of a record.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub run_id: String,
    pub identifier: String,
    pub store: String,
    pub title: String,
    pub contact: Option<String>,
    pub date: String,
    pub begin: String,
    pub end: String,
    pub targets: Vec<String>,
    pub steps: Vec<Step>,
    pub seal: Option<SealRef>,
    pub unsealed: usize,
    pub commits: usize,
    pub rows: u64,
}

impl Record {
    fn new(snap: &Snapshot, run: &RunExport, opts: &IsoOptions) -> Result<Self> {
        let mut steps = Vec::new();
        for (target, commits) in run.by_target() {
            let stats = merge_stats(commits.iter().copied());
            for (stage, s) in stats.stages {
                let (lo, hi) = s.event_time_us.unwrap_or((0, 0));
                steps.push(Step {
                    stage,
                    target: target.to_string(),
                    begin: rfc3339_us(lo),
                    end: rfc3339_us(hi),
                    stats: s,
                    commit_ids: commits
                        .iter()
                        .map(|c| c.pointer.commit_id.clone())
                        .collect(),
                });
            }
        }
        steps.sort_by(|a, b| a.stage.cmp(&b.stage).then(a.target.cmp(&b.target)));
        let p = |f: fn(&crate::pointer::Pointer) -> &String| {
            run.commits.iter().map(move |c| f(&c.pointer).clone())
        };
        Ok(Record {
            run_id: run.run_id.clone(),
            identifier: run_uuid(&run.run_id).to_string(),
            store: snap.store_url.clone(),
            title: opts
                .title
                .clone()
                .unwrap_or_else(|| format!("Lineage of run {}", run.run_id)),
            contact: opts.contact.clone(),
            date: run.last_committed().to_string(),
            begin: p(|p| &p.min_event_time_utc).min().unwrap_or_default(),
            end: p(|p| &p.max_event_time_utc).max().unwrap_or_default(),
            targets: run.by_target().keys().map(|t| t.to_string()).collect(),
            steps,
            seal: run.covering_seal().cloned(),
            unsealed: run.unsealed(),
            commits: run.commits.len(),
            rows: run.commits.iter().map(|c| c.pointer.row_count).sum(),
        })
    }

    /// What proves the records, in words.
    pub(crate) fn proof_sentence(&self) -> String {
        match (&self.seal, self.unsealed) {
            (Some(s), _) => format!(
                "All {} commits are sealed: seal {} of the store, head digest sha256 {}, covers them; \
                 `lineage verify --expect-head {}` checks the store and `lineage prove <commit> --head {}` proves any commit.",
                self.commits, s.seq, s.sha256, s.sha256, s.sha256
            ),
            (None, n) => format!(
                "{n} of {} commits are not sealed yet: seal the store and export again for a head digest that proves the records.",
                self.commits
            ),
        }
    }

    pub(crate) fn statement(&self) -> String {
        format!(
            "Lineage of run {} recorded in lineage-store {}: {} events in {} commits, {} process steps \
             (stage and target CRS), target reference systems {}, events from {} to {}. {}",
            self.run_id,
            self.store,
            self.rows,
            self.commits,
            self.steps.len(),
            self.targets.join(", "),
            self.begin,
            self.end,
            self.proof_sentence()
        )
    }

    pub(crate) fn abstract_text(&self) -> String {
        let rejected: u64 = self.steps.iter().map(Step::rejected).sum();
        let transformed: u64 = self.steps.iter().map(Step::transformed).sum();
        format!(
            "Features standardised by run {} ({} events: {transformed} transformed, {rejected} rejected), \
             with per-feature lineage kept in a tamper-evident lineage-store.",
            self.run_id, self.rows
        )
    }
}

/// The ISO record of the snapshot's one run.
pub fn document(snap: &Snapshot, format: IsoFormat, opts: &IsoOptions) -> Result<String> {
    let run = match snap.runs.as_slice() {
        [run] => run,
        [] => return Err(Error::NotFound("no commits to describe".into())),
        _ => {
            return Err(Error::Usage(
                "an ISO 19115 record describes one run: pass --run-id".into(),
            ))
        }
    };
    let rec = Record::new(snap, run, opts)?;
    Ok(match format {
        IsoFormat::Iso19115_3 => iso19115_3(&rec),
        IsoFormat::Iso19139 => super::iso19139::document(&rec),
    })
}

const CL: &str = "http://standards.iso.org/iso/19115/resources/Codelists/cat/codelists.xml#";

fn time_period(x: &mut Xml, id: &str, begin: &str, end: &str) {
    x.open("gml:TimePeriod", &[("gml:id", id)]);
    x.text("gml:beginPosition", &[], begin);
    x.text("gml:endPosition", &[], end);
    x.close();
}

fn identifier(x: &mut Xml, code_text: &str, space: &str) {
    x.open("mcc:MD_Identifier", &[]);
    x.string("mcc:code", code_text);
    x.string("mcc:codeSpace", space);
    x.close();
}

fn reference_system(x: &mut Xml, tag: &str, crs: &str) {
    x.open(tag, &[]).open("mrs:MD_ReferenceSystem", &[]);
    x.open("mrs:referenceSystemIdentifier", &[]);
    identifier(x, crs, "EPSG");
    x.close().close().close();
}

fn seal_citation(x: &mut Xml, tag: &str, rec: &Record, commits: &[String]) {
    x.open(tag, &[]).open("cit:CI_Citation", &[]);
    match &rec.seal {
        Some(s) => {
            x.string(
                "cit:title",
                &format!("lineage-store seal {} of {}", s.seq, rec.store),
            );
            x.open("cit:identifier", &[]);
            identifier(x, &s.sha256, "lineage-store:head-digest:sha256");
            x.close();
        }
        None => {
            x.string(
                "cit:title",
                &format!("lineage-store {} (not sealed yet)", rec.store),
            );
        }
    }
    for c in commits {
        x.open("cit:identifier", &[]);
        identifier(x, c, "lineage-store:commit-id");
        x.close();
    }
    x.string("cit:otherCitationDetails", &rec.proof_sentence());
    x.close().close();
}

fn iso19115_3(rec: &Record) -> String {
    let mut x = Xml::new();
    x.open(
        "mdb:MD_Metadata",
        &[
            ("xmlns:mdb", "http://standards.iso.org/iso/19115/-3/mdb/2.0"),
            ("xmlns:cit", "http://standards.iso.org/iso/19115/-3/cit/2.0"),
            ("xmlns:gco", "http://standards.iso.org/iso/19115/-3/gco/1.0"),
            ("xmlns:gex", "http://standards.iso.org/iso/19115/-3/gex/1.0"),
            ("xmlns:lan", "http://standards.iso.org/iso/19115/-3/lan/1.0"),
            ("xmlns:mcc", "http://standards.iso.org/iso/19115/-3/mcc/1.0"),
            ("xmlns:mri", "http://standards.iso.org/iso/19115/-3/mri/1.0"),
            ("xmlns:mrl", "http://standards.iso.org/iso/19115/-3/mrl/2.0"),
            ("xmlns:mrs", "http://standards.iso.org/iso/19115/-3/mrs/1.0"),
            ("xmlns:gml", "http://www.opengis.net/gml/3.2"),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://standards.iso.org/iso/19115/-3/mdb/2.0 https://schemas.isotc211.org/19115/-3/mdb/2.0/mdb.xsd",
            ),
        ],
    );
    x.open("mdb:metadataIdentifier", &[]);
    identifier(&mut x, &rec.identifier, "urn:uuid");
    x.close();
    x.open("mdb:defaultLocale", &[]).open("lan:PT_Locale", &[]);
    x.open("lan:language", &[]);
    x.code(CL, "lan:LanguageCode", "LanguageCode", "eng");
    x.close().open("lan:characterEncoding", &[]);
    x.code(CL, "lan:MD_CharacterSetCode", "MD_CharacterSetCode", "utf8");
    x.close().close().close();
    x.open("mdb:metadataScope", &[])
        .open("mdb:MD_MetadataScope", &[])
        .open("mdb:resourceScope", &[]);
    x.code(CL, "mcc:MD_ScopeCode", "MD_ScopeCode", "dataset");
    x.close().close().close();
    match &rec.contact {
        Some(org) => {
            x.open("mdb:contact", &[])
                .open("cit:CI_Responsibility", &[]);
            x.open("cit:role", &[]);
            x.code(CL, "cit:CI_RoleCode", "CI_RoleCode", "pointOfContact");
            x.close()
                .open("cit:party", &[])
                .open("cit:CI_Organisation", &[]);
            x.string("cit:name", org);
            x.close().close().close().close();
        }
        None => {
            x.empty("mdb:contact", &[("gco:nilReason", "missing")]);
        }
    }
    x.open("mdb:dateInfo", &[]).open("cit:CI_Date", &[]);
    x.prop("cit:date", "gco:DateTime", &rec.date);
    x.open("cit:dateType", &[]);
    x.code(CL, "cit:CI_DateTypeCode", "CI_DateTypeCode", "creation");
    x.close().close().close();
    x.open("mdb:metadataStandard", &[])
        .open("cit:CI_Citation", &[]);
    x.string("cit:title", "ISO 19115-3");
    x.close().close();
    for t in &rec.targets {
        reference_system(&mut x, "mdb:referenceSystemInfo", t);
    }
    x.open("mdb:identificationInfo", &[])
        .open("mri:MD_DataIdentification", &[]);
    x.open("mri:citation", &[]).open("cit:CI_Citation", &[]);
    x.string("cit:title", &rec.title);
    x.open("cit:identifier", &[]);
    identifier(&mut x, &rec.run_id, "lineage-store:run_id");
    x.close().close().close();
    x.string("mri:abstract", &rec.abstract_text());
    x.open("mri:extent", &[])
        .open("gex:EX_Extent", &[])
        .open("gex:temporalElement", &[])
        .open("gex:EX_TemporalExtent", &[])
        .open("gex:extent", &[]);
    time_period(&mut x, "extent", &rec.begin, &rec.end);
    x.close().close().close().close().close();
    x.close().close();
    x.open("mdb:resourceLineage", &[])
        .open("mrl:LI_Lineage", &[]);
    x.string("mrl:statement", &rec.statement());
    x.open("mrl:scope", &[])
        .open("mcc:MD_Scope", &[])
        .open("mcc:level", &[]);
    x.code(CL, "mcc:MD_ScopeCode", "MD_ScopeCode", "dataset");
    x.close().close().close();
    seal_citation(&mut x, "mrl:additionalDocumentation", rec, &[]);
    for (i, s) in rec.steps.iter().enumerate() {
        process_step(&mut x, rec, s, i + 1);
    }
    x.finish()
}

fn process_step(x: &mut Xml, rec: &Record, s: &Step, n: usize) {
    x.open("mrl:processStep", &[])
        .open("mrl:LE_ProcessStep", &[]);
    x.string("mrl:description", &s.description());
    x.string(
        "mrl:rationale",
        &format!(
            "Recorded per feature in lineage-store {} as run {}.",
            rec.store, rec.run_id
        ),
    );
    x.open("mrl:stepDateTime", &[]);
    time_period(x, &format!("step-{n}"), &s.begin, &s.end);
    x.close();
    for tool in s.stats.tools.keys() {
        x.open("mrl:processor", &[])
            .open("cit:CI_Responsibility", &[]);
        x.open("cit:role", &[]);
        x.code(CL, "cit:CI_RoleCode", "CI_RoleCode", "processor");
        x.close()
            .open("cit:party", &[])
            .open("cit:CI_Organisation", &[]);
        x.string("cit:name", tool);
        x.close().close().close().close();
    }
    seal_citation(x, "mrl:reference", rec, &s.commit_ids);
    for (crs, count) in &s.stats.source_crs {
        x.open("mrl:source", &[]).open("mrl:LI_Source", &[]);
        x.string("mrl:description", &format!("{count} features in {crs}"));
        reference_system(x, "mrl:sourceReferenceSystem", crs);
        x.close().close();
    }
    if s.without_source() > 0 {
        x.open("mrl:source", &[]).open("mrl:LI_Source", &[]);
        x.string(
            "mrl:description",
            &format!(
                "{} features without a recorded source CRS",
                s.without_source()
            ),
        );
        x.close().close();
    }
    x.open("mrl:processingInformation", &[])
        .open("mrl:LE_Processing", &[]);
    x.open("mrl:identifier", &[]);
    identifier(
        x,
        &s.stats.tools.keys().cloned().collect::<Vec<_>>().join(", "),
        "tool_version",
    );
    x.close();
    x.string(
        "mrl:procedureDescription",
        &format!("stage {}, event types {}", s.stage, s.event_types()),
    );
    x.close().close();
    x.open("mrl:report", &[])
        .open("mrl:LE_ProcessStepReport", &[]);
    x.string("mrl:name", "outcome counts");
    x.string("mrl:description", &s.outcome_summary());
    x.close().close();
    x.open("mrl:output", &[]).open("mrl:LE_Source", &[]);
    x.string(
        "mrl:description",
        &format!("{} features transformed into {}", s.transformed(), s.target),
    );
    reference_system(x, "mrl:sourceReferenceSystem", &s.target);
    x.close().close();
    x.close().close();
}

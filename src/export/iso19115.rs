//! ISO 19115 lineage of one run: ISO 19115-3 XML (`mdb`/`mrl` 2.0 namespaces), or ISO
//! 19139 (`gmd`) for catalogues that still expect it ([`crate::export::iso19139`]).
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

use crate::base::param::{text, Param};
use crate::export::record::{Record, Step};
use crate::export::xml::Xml;
use crate::export::Snapshot;

use crate::base::error::{Error, Result};
pub use crate::export::record::IsoOptions;

/// Which ISO encoding.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum IsoFormat {
    /// ISO 19115-3 (`mdb` 2.0, `mrl` 2.0).
    #[cfg_attr(feature = "cli", value(name = "iso19115-3"))]
    Iso19115_3,
    /// ISO 19139 (`gmd`, 2007-04-17 schemas).
    #[cfg_attr(feature = "cli", value(name = "iso19139"))]
    Iso19139,
}

/// The ISO record of the snapshot's one run.
pub fn document(snap: &Snapshot, format: IsoFormat, opts: &IsoOptions) -> Result<String> {
    let run = match snap.runs.as_slice() {
        [run] => run,
        [] => return Err(Error::NotFound("no commits to describe".into())),
        _ => {
            return Err(Error::usage(text![
                "an ISO 19115 record describes one run: pass ",
                Param::RunId
            ]))
        }
    };
    let rec = Record::new(snap, run, opts)?;
    Ok(match format {
        IsoFormat::Iso19115_3 => iso19115_3(&rec),
        IsoFormat::Iso19139 => crate::export::iso19139::document(&rec),
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
    metadata_about(&mut x, rec);
    for t in &rec.targets {
        reference_system(&mut x, "mdb:referenceSystemInfo", t);
    }
    identification(&mut x, rec);
    resource_lineage(&mut x, rec);
    x.finish()
}

/// The metadata record's own identifier, locale, scope, contact, date and standard.
fn metadata_about(x: &mut Xml, rec: &Record) {
    x.open("mdb:metadataIdentifier", &[]);
    identifier(x, &rec.identifier, "urn:uuid");
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
}

/// The dataset's citation, abstract and temporal extent.
fn identification(x: &mut Xml, rec: &Record) {
    x.open("mdb:identificationInfo", &[])
        .open("mri:MD_DataIdentification", &[]);
    x.open("mri:citation", &[]).open("cit:CI_Citation", &[]);
    x.string("cit:title", &rec.title);
    x.open("cit:identifier", &[]);
    identifier(x, &rec.run_id, "lineage-store:run_id");
    x.close().close().close();
    x.string("mri:abstract", &rec.abstract_text());
    x.open("mri:extent", &[])
        .open("gex:EX_Extent", &[])
        .open("gex:temporalElement", &[])
        .open("gex:EX_TemporalExtent", &[])
        .open("gex:extent", &[]);
    time_period(x, "extent", &rec.begin, &rec.end);
    x.close().close().close().close().close();
    x.close().close();
}

/// The lineage: statement, scope, the seal cited, and the process steps.
fn resource_lineage(x: &mut Xml, rec: &Record) {
    x.open("mdb:resourceLineage", &[])
        .open("mrl:LI_Lineage", &[]);
    x.string("mrl:statement", &rec.statement());
    x.open("mrl:scope", &[])
        .open("mcc:MD_Scope", &[])
        .open("mcc:level", &[]);
    x.code(CL, "mcc:MD_ScopeCode", "MD_ScopeCode", "dataset");
    x.close().close().close();
    seal_citation(x, "mrl:additionalDocumentation", rec, &[]);
    for (i, s) in rec.steps.iter().enumerate() {
        process_step(x, rec, s, i + 1);
    }
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
    step_sources(x, s);
    step_processing(x, s);
    x.close().close();
}

/// A step's sources: the features per source CRS, and those without one.
fn step_sources(x: &mut Xml, s: &Step) {
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
}

/// A step's processing (tools, stage, event types), outcome report and output.
fn step_processing(x: &mut Xml, s: &Step) {
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
}

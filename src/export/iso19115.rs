//! ISO 19115 lineage of one run: ISO 19115-3 XML (`mdb`/`mrl` 2.0 namespaces), or ISO
//! 19139 (`gmd`) for catalogues that still expect it ([`crate::export::iso19139`]).
//!
//! The record describes the run as a data set: its identification (title, abstract,
//! point of contact with e-mail, topic categories, keywords, the bounding box given and
//! the events' time range), its positional accuracy (`DQ_AbsoluteExternalPositionalAccuracy`:
//! max and mean `accuracy_m` over every operation and per operation), and its lineage
//! (`LI_Lineage`) with:
//! - a statement generated from the counts (INSPIRE's lineage): sources, targets,
//!   outcomes and rejection reasons, tools, operations with accuracy and grids, the time
//!   range, the store (by identity and public URL) and the seal and head digest that
//!   prove the records (or how many commits are not sealed yet);
//! - one process step per (stage, target CRS), in stage then CRS order: a description
//!   with the counts of transformed and rejected features and the rejection reasons
//!   summarised, the date-time range of its events, the processor (`tool_version`), the
//!   source reference systems (one `LI_Source` each, with its event count), and in
//!   19115-3 the target reference system (`LE_ProcessStep.output`), the counts as a
//!   `LE_ProcessStepReport`, `LE_Processing` (the operations as `LE_Algorithm`s with their
//!   accuracy and grids, the tool as software reference, the source and target CRSs and
//!   grids as run-time parameters), and a reference to the seal and its head digest plus
//!   the commit ids (each provable with `lineage prove`).
//!
//! Text is plain (no markup); the store is named by its identity and, when others can
//! reach it, its URL, never a local path.
//!
//! The output is a function of the store's content only (no clock): the metadata date is
//! the run's last commit time.

use crate::base::param::{text, Param};
use crate::export::iso19115_parts::{identifier, reference_system, time_period, CL};
use crate::export::record::{AccuracyReport, Record, ACCURACY_METHOD, METRE_URI};
use crate::export::xml::Xml;
use crate::export::Snapshot;

use crate::base::error::{Error, Result};
pub use crate::export::catalogue::{Bbox, IsoOptions};

/// Which ISO encoding.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum IsoFormat {
    /// ISO 19115-3 (`mdb` 2.0, `mrl` 2.0).
    #[cfg_attr(feature = "cli", value(name = "iso19115-3"))]
    Iso19115_3,
    /// ISO 19139 (`gmd`, 2007-04-17 schemas; `gmi` of ISO 19115-2 for the processing).
    #[cfg_attr(feature = "cli", value(name = "iso19139"))]
    Iso19139,
}

/// The ISO record of the snapshot's one run.
pub fn document(snap: &Snapshot, format: IsoFormat, opts: &IsoOptions) -> Result<String> {
    opts.check(format == IsoFormat::Iso19139)?;
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
            ("xmlns:mdq", "http://standards.iso.org/iso/19157/-2/mdq/1.0"),
            ("xmlns:mri", "http://standards.iso.org/iso/19115/-3/mri/1.0"),
            ("xmlns:mrl", "http://standards.iso.org/iso/19115/-3/mrl/2.0"),
            ("xmlns:mrs", "http://standards.iso.org/iso/19115/-3/mrs/1.0"),
            ("xmlns:gml", "http://www.opengis.net/gml/3.2"),
            ("xmlns:xlink", "http://www.w3.org/1999/xlink"),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://standards.iso.org/iso/19115/-3/mdb/2.0 https://schemas.isotc211.org/19115/-3/mdb/2.0/mdb.xsd \
                 http://standards.iso.org/iso/19157/-2/mdq/1.0 https://schemas.isotc211.org/19157/-2/mdq/1.0/mdq.xsd",
            ),
        ],
    );
    metadata_about(&mut x, rec);
    for t in &rec.targets {
        reference_system(&mut x, "mdb:referenceSystemInfo", t);
    }
    identification(&mut x, rec);
    data_quality(&mut x, rec);
    crate::export::iso19115_lineage::resource_lineage(&mut x, rec);
    x.finish()
}

/// A `CI_Responsibility` of the contact organisation, with its e-mail when given.
fn contact(x: &mut Xml, tag: &str, rec: &Record, org: &str) {
    x.open(tag, &[]).open("cit:CI_Responsibility", &[]);
    x.open("cit:role", &[]);
    x.code(CL, "cit:CI_RoleCode", "CI_RoleCode", "pointOfContact");
    x.close()
        .open("cit:party", &[])
        .open("cit:CI_Organisation", &[]);
    x.string("cit:name", org);
    if let Some(e) = &rec.opts.contact_email {
        x.open("cit:contactInfo", &[])
            .open("cit:CI_Contact", &[])
            .open("cit:address", &[])
            .open("cit:CI_Address", &[]);
        x.string("cit:electronicMailAddress", e);
        x.close().close().close().close();
    }
    x.close().close().close().close();
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
    match &rec.opts.contact {
        Some(org) => contact(x, "mdb:contact", rec, org),
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

/// The dataset's citation, abstract, point of contact, topic categories, extent (the
/// bounding box given, the events' time range) and keywords.
fn identification(x: &mut Xml, rec: &Record) {
    x.open("mdb:identificationInfo", &[])
        .open("mri:MD_DataIdentification", &[]);
    x.open("mri:citation", &[]).open("cit:CI_Citation", &[]);
    x.string("cit:title", &rec.title);
    x.open("cit:identifier", &[]);
    identifier(x, &rec.run_id, "lineage-store:run_id");
    x.close().close().close();
    x.string("mri:abstract", &rec.abstract_text());
    if let Some(org) = &rec.opts.contact {
        contact(x, "mri:pointOfContact", rec, org);
    }
    for t in &rec.opts.topic_categories {
        x.prop("mri:topicCategory", "mri:MD_TopicCategoryCode", t);
    }
    x.open("mri:extent", &[]).open("gex:EX_Extent", &[]);
    if let Some(b) = &rec.opts.bbox {
        x.open("gex:geographicElement", &[])
            .open("gex:EX_GeographicBoundingBox", &[]);
        for (tag, v) in [
            ("gex:westBoundLongitude", b.west),
            ("gex:eastBoundLongitude", b.east),
            ("gex:southBoundLatitude", b.south),
            ("gex:northBoundLatitude", b.north),
        ] {
            x.prop(tag, "gco:Decimal", &v.to_string());
        }
        x.close().close();
    }
    x.open("gex:temporalElement", &[])
        .open("gex:EX_TemporalExtent", &[])
        .open("gex:extent", &[]);
    time_period(x, "extent", &rec.begin, &rec.end);
    x.close().close().close();
    x.close().close();
    if !rec.opts.keywords.is_empty() {
        x.open("mri:descriptiveKeywords", &[])
            .open("mri:MD_Keywords", &[]);
        for k in &rec.opts.keywords {
            x.string("mri:keyword", k);
        }
        x.close().close();
    }
    x.close().close();
}

/// Positional accuracy: one `DQ_AbsoluteExternalPositionalAccuracy` per statistic and
/// scope ([`Record::accuracy_reports`]); nothing when no event recorded an accuracy
/// (ISO 19157 wants at least one report in a `DQ_DataQuality`).
fn data_quality(x: &mut Xml, rec: &Record) {
    let reports = rec.accuracy_reports();
    if reports.is_empty() {
        return;
    }
    x.open("mdb:dataQualityInfo", &[])
        .open("mdq:DQ_DataQuality", &[]);
    x.open("mdq:scope", &[])
        .open("mcc:MD_Scope", &[])
        .open("mcc:level", &[]);
    x.code(CL, "mcc:MD_ScopeCode", "MD_ScopeCode", "dataset");
    x.close().close().close();
    for r in &reports {
        accuracy_report(x, r);
    }
    x.close().close();
}

fn accuracy_report(x: &mut Xml, r: &AccuracyReport) {
    x.open("mdq:report", &[])
        .open("mdq:DQ_AbsoluteExternalPositionalAccuracy", &[]);
    x.open("mdq:measure", &[])
        .open("mdq:DQ_MeasureReference", &[]);
    x.string("mdq:nameOfMeasure", &r.measure);
    x.string("mdq:measureDescription", &r.description);
    x.close().close();
    x.open("mdq:evaluationMethod", &[])
        .open("mdq:DQ_EvaluationMethod", &[]);
    x.string("mdq:evaluationMethodDescription", ACCURACY_METHOD);
    x.open("mdq:evaluationMethodType", &[]);
    x.code(
        CL,
        "mdq:DQ_EvaluationMethodTypeCode",
        "DQ_EvaluationMethodTypeCode",
        "indirect",
    );
    x.close().close().close();
    x.open("mdq:result", &[])
        .open("mdq:DQ_QuantitativeResult", &[]);
    x.prop("mdq:value", "gco:Record", &r.value);
    x.empty("mdq:valueUnit", &[("xlink:href", METRE_URI)]);
    x.close().close();
    x.close().close();
}

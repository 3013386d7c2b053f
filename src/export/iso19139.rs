//! The ISO 19139 (`gmd`) encoding of a run's lineage record, for catalogues that still
//! expect it (the content is [`crate::export::iso19115`]'s).
//!
//! ISO 19139 encodes ISO 19115:2003, whose `LI_ProcessStep` has a single `dateTime` (the
//! end of the step's events here; the range is in the description), no output, report or
//! processing information, and whose `LI_Lineage` has no citation: so the target CRS, the
//! counts and the seal reference are in the step's description and rationale and in the
//! lineage statement, and every target CRS is a `referenceSystemInfo` of the record.

use crate::export::record::{Record, Step};
use crate::export::xml::Xml;

const CL: &str = "http://standards.iso.org/iso/19139/resources/gmxCodelists.xml#";

fn reference_system(x: &mut Xml, tag: &str, crs: &str) {
    x.open(tag, &[]).open("gmd:MD_ReferenceSystem", &[]);
    x.open("gmd:referenceSystemIdentifier", &[])
        .open("gmd:RS_Identifier", &[]);
    x.string("gmd:code", crs);
    x.string("gmd:codeSpace", "EPSG");
    x.close().close().close().close();
}

fn scope(x: &mut Xml, tag: &str) {
    x.open(tag, &[]);
    x.code(CL, "gmd:MD_ScopeCode", "MD_ScopeCode", "dataset");
    x.close();
}

/// The ISO 19139 document of a record.
pub(crate) fn document(rec: &Record) -> String {
    let mut x = Xml::new();
    x.open(
        "gmd:MD_Metadata",
        &[
            ("xmlns:gmd", "http://www.isotc211.org/2005/gmd"),
            ("xmlns:gco", "http://www.isotc211.org/2005/gco"),
            ("xmlns:gml", "http://www.opengis.net/gml/3.2"),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://www.isotc211.org/2005/gmd https://schemas.opengis.net/iso/19139/20070417/gmd/gmd.xsd",
            ),
        ],
    );
    metadata_about(&mut x, rec);
    for t in &rec.targets {
        reference_system(&mut x, "gmd:referenceSystemInfo", t);
    }
    identification(&mut x, rec);
    data_quality(&mut x, rec);
    x.finish()
}

/// The metadata record's own identifier, language, scope, contact, date and standard.
fn metadata_about(x: &mut Xml, rec: &Record) {
    x.string("gmd:fileIdentifier", &rec.identifier);
    x.open("gmd:language", &[]);
    x.code(CL, "gmd:LanguageCode", "LanguageCode", "eng");
    x.close().open("gmd:characterSet", &[]);
    x.code(CL, "gmd:MD_CharacterSetCode", "MD_CharacterSetCode", "utf8");
    x.close();
    scope(x, "gmd:hierarchyLevel");
    match &rec.contact {
        Some(org) => {
            x.open("gmd:contact", &[])
                .open("gmd:CI_ResponsibleParty", &[]);
            x.string("gmd:organisationName", org);
            x.open("gmd:role", &[]);
            x.code(CL, "gmd:CI_RoleCode", "CI_RoleCode", "pointOfContact");
            x.close().close().close();
        }
        None => {
            x.empty("gmd:contact", &[("gco:nilReason", "missing")]);
        }
    }
    x.prop("gmd:dateStamp", "gco:DateTime", &rec.date);
    x.string("gmd:metadataStandardName", "ISO 19115:2003/19139");
    x.string("gmd:metadataStandardVersion", "1.0");
}

/// The dataset's citation, abstract, language and temporal extent.
fn identification(x: &mut Xml, rec: &Record) {
    x.open("gmd:identificationInfo", &[])
        .open("gmd:MD_DataIdentification", &[]);
    x.open("gmd:citation", &[]).open("gmd:CI_Citation", &[]);
    x.string("gmd:title", &rec.title);
    x.open("gmd:date", &[]).open("gmd:CI_Date", &[]);
    x.prop("gmd:date", "gco:DateTime", &rec.date);
    x.open("gmd:dateType", &[]);
    x.code(CL, "gmd:CI_DateTypeCode", "CI_DateTypeCode", "creation");
    x.close().close().close();
    x.open("gmd:identifier", &[]).open("gmd:MD_Identifier", &[]);
    x.string("gmd:code", &rec.run_id);
    x.close().close();
    x.close().close();
    x.string("gmd:abstract", &rec.abstract_text());
    x.open("gmd:language", &[]);
    x.code(CL, "gmd:LanguageCode", "LanguageCode", "eng");
    x.close();
    x.open("gmd:extent", &[])
        .open("gmd:EX_Extent", &[])
        .open("gmd:temporalElement", &[])
        .open("gmd:EX_TemporalExtent", &[])
        .open("gmd:extent", &[]);
    x.open("gml:TimePeriod", &[("gml:id", "extent")]);
    x.text("gml:beginPosition", &[], &rec.begin);
    x.text("gml:endPosition", &[], &rec.end);
    x.close();
    x.close().close().close().close().close();
    x.close().close();
}

/// The data quality: scope, lineage statement, and the process steps.
fn data_quality(x: &mut Xml, rec: &Record) {
    x.open("gmd:dataQualityInfo", &[])
        .open("gmd:DQ_DataQuality", &[]);
    x.open("gmd:scope", &[]).open("gmd:DQ_Scope", &[]);
    scope(x, "gmd:level");
    x.close().close();
    x.open("gmd:lineage", &[]).open("gmd:LI_Lineage", &[]);
    x.string("gmd:statement", &rec.statement());
    for s in &rec.steps {
        process_step(x, rec, s);
    }
}

fn process_step(x: &mut Xml, rec: &Record, s: &Step) {
    x.open("gmd:processStep", &[])
        .open("gmd:LI_ProcessStep", &[]);
    x.string(
        "gmd:description",
        &format!(
            "{} Events from {} to {}; {} features transformed into {}.",
            s.description(),
            s.begin,
            s.end,
            s.transformed(),
            s.target
        ),
    );
    x.string(
        "gmd:rationale",
        &format!(
            "Recorded per feature in lineage-store {} as run {} (commits {}). {}",
            rec.store,
            rec.run_id,
            s.commit_ids.join(", "),
            rec.proof_sentence()
        ),
    );
    x.prop("gmd:dateTime", "gco:DateTime", &s.end);
    for tool in s.stats.tools.keys() {
        x.open("gmd:processor", &[])
            .open("gmd:CI_ResponsibleParty", &[]);
        x.string("gmd:organisationName", tool);
        x.open("gmd:role", &[]);
        x.code(CL, "gmd:CI_RoleCode", "CI_RoleCode", "processor");
        x.close().close().close();
    }
    for (crs, count) in &s.stats.source_crs {
        x.open("gmd:source", &[]).open("gmd:LI_Source", &[]);
        x.string("gmd:description", &format!("{count} features in {crs}"));
        reference_system(x, "gmd:sourceReferenceSystem", crs);
        x.close().close();
    }
    if s.without_source() > 0 {
        x.open("gmd:source", &[]).open("gmd:LI_Source", &[]);
        x.string(
            "gmd:description",
            &format!(
                "{} features without a recorded source CRS",
                s.without_source()
            ),
        );
        x.close().close();
    }
    x.close().close();
}

//! The ISO 19139 (`gmd`) encoding of a run's lineage record, for catalogues that still
//! expect it (the content is [`crate::export::iso19115`]'s).
//!
//! ISO 19139 encodes ISO 19115:2003, whose `LI_ProcessStep` has a single `dateTime` (the
//! end of the step's events here; the range is in the description), and whose
//! `LI_Lineage` has no citation: so the target CRS, the counts and the seal reference are
//! in the step's description and rationale and in the lineage statement, and every target
//! CRS is a `referenceSystemInfo` of the record. The processing (operations, tool,
//! run-time parameters) is ISO 19115-2's, in its XML encoding (ISO/TS 19139-2, namespace
//! `gmi` 1.0): each step is a `gmi:LE_ProcessStep` (which a reader of plain `gmd` takes as
//! the `LI_ProcessStep` it extends) with a `gmi:LE_Processing`. Positional accuracy is a
//! `gmd:DQ_AbsoluteExternalPositionalAccuracy` per statistic and scope.

use crate::export::record::{
    operation_facts, operation_label, AccuracyReport, Record, Step, ACCURACY_METHOD, METRE_URI,
};
use crate::export::xml::Xml;

const CL: &str = "http://standards.iso.org/iso/19139/resources/gmxCodelists.xml#";
const GMI: &str = "http://standards.iso.org/iso/19115/-2/gmi/1.0";

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
            ("xmlns:gmi", GMI),
            ("xmlns:gml", "http://www.opengis.net/gml/3.2"),
            ("xmlns:xlink", "http://www.w3.org/1999/xlink"),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://www.isotc211.org/2005/gmd https://schemas.opengis.net/iso/19139/20070417/gmd/gmd.xsd \
                 http://standards.iso.org/iso/19115/-2/gmi/1.0 https://standards.iso.org/iso/19115/-2/gmi/1.0/gmi.xsd",
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

/// A `CI_ResponsibleParty` of the contact organisation, with its e-mail when given.
fn contact(x: &mut Xml, tag: &str, rec: &Record, org: &str) {
    x.open(tag, &[]).open("gmd:CI_ResponsibleParty", &[]);
    x.string("gmd:organisationName", org);
    if let Some(e) = &rec.opts.contact_email {
        x.open("gmd:contactInfo", &[])
            .open("gmd:CI_Contact", &[])
            .open("gmd:address", &[])
            .open("gmd:CI_Address", &[]);
        x.string("gmd:electronicMailAddress", e);
        x.close().close().close().close();
    }
    x.open("gmd:role", &[]);
    x.code(CL, "gmd:CI_RoleCode", "CI_RoleCode", "pointOfContact");
    x.close().close().close();
}

/// A citation with a title and no date (ISO 19139 requires the property).
fn citation(x: &mut Xml, tag: &str, title: &str, code: Option<&str>) {
    x.open(tag, &[]).open("gmd:CI_Citation", &[]);
    x.string("gmd:title", title);
    x.empty("gmd:date", &[("gco:nilReason", "inapplicable")]);
    if let Some(c) = code {
        x.open("gmd:identifier", &[]).open("gmd:MD_Identifier", &[]);
        x.string("gmd:code", c);
        x.close().close();
    }
    x.close().close();
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
    match &rec.opts.contact {
        Some(org) => contact(x, "gmd:contact", rec, org),
        None => {
            x.empty("gmd:contact", &[("gco:nilReason", "missing")]);
        }
    }
    x.prop("gmd:dateStamp", "gco:DateTime", &rec.date);
    x.string("gmd:metadataStandardName", "ISO 19115:2003/19139");
    x.string("gmd:metadataStandardVersion", "1.0");
}

/// The dataset's citation, abstract, point of contact, keywords, language, topic
/// categories and extent (the bounding box given, the events' time range).
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
    if let Some(org) = &rec.opts.contact {
        contact(x, "gmd:pointOfContact", rec, org);
    }
    if !rec.opts.keywords.is_empty() {
        x.open("gmd:descriptiveKeywords", &[])
            .open("gmd:MD_Keywords", &[]);
        for k in &rec.opts.keywords {
            x.string("gmd:keyword", k);
        }
        x.close().close();
    }
    x.open("gmd:language", &[]);
    x.code(CL, "gmd:LanguageCode", "LanguageCode", "eng");
    x.close();
    for t in &rec.opts.topic_categories {
        x.prop("gmd:topicCategory", "gmd:MD_TopicCategoryCode", t);
    }
    x.open("gmd:extent", &[]).open("gmd:EX_Extent", &[]);
    if let Some(b) = &rec.opts.bbox {
        x.open("gmd:geographicElement", &[])
            .open("gmd:EX_GeographicBoundingBox", &[]);
        for (tag, v) in [
            ("gmd:westBoundLongitude", b.west),
            ("gmd:eastBoundLongitude", b.east),
            ("gmd:southBoundLatitude", b.south),
            ("gmd:northBoundLatitude", b.north),
        ] {
            x.prop(tag, "gco:Decimal", &v.to_string());
        }
        x.close().close();
    }
    x.open("gmd:temporalElement", &[])
        .open("gmd:EX_TemporalExtent", &[])
        .open("gmd:extent", &[]);
    x.open("gml:TimePeriod", &[("gml:id", "extent")]);
    x.text("gml:beginPosition", &[], &rec.begin);
    x.text("gml:endPosition", &[], &rec.end);
    x.close();
    x.close().close().close().close().close();
    x.close().close();
}

/// The data quality: scope, positional accuracy, lineage statement, and the process steps.
fn data_quality(x: &mut Xml, rec: &Record) {
    x.open("gmd:dataQualityInfo", &[])
        .open("gmd:DQ_DataQuality", &[]);
    x.open("gmd:scope", &[]).open("gmd:DQ_Scope", &[]);
    scope(x, "gmd:level");
    x.close().close();
    for r in rec.accuracy_reports() {
        accuracy_report(x, &r);
    }
    x.open("gmd:lineage", &[]).open("gmd:LI_Lineage", &[]);
    x.string("gmd:statement", &rec.statement());
    for s in &rec.steps {
        process_step(x, rec, s);
    }
}

fn accuracy_report(x: &mut Xml, r: &AccuracyReport) {
    x.open("gmd:report", &[])
        .open("gmd:DQ_AbsoluteExternalPositionalAccuracy", &[]);
    x.string("gmd:nameOfMeasure", &r.measure);
    x.string("gmd:measureDescription", &r.description);
    x.open("gmd:evaluationMethodType", &[]);
    x.code(
        CL,
        "gmd:DQ_EvaluationMethodTypeCode",
        "DQ_EvaluationMethodTypeCode",
        "indirect",
    );
    x.close();
    x.string("gmd:evaluationMethodDescription", ACCURACY_METHOD);
    x.open("gmd:result", &[])
        .open("gmd:DQ_QuantitativeResult", &[]);
    x.empty("gmd:valueUnit", &[("xlink:href", METRE_URI)]);
    x.prop("gmd:value", "gco:Record", &r.value);
    x.close().close();
    x.close().close();
}

fn process_step(x: &mut Xml, rec: &Record, s: &Step) {
    x.open("gmd:processStep", &[])
        .open("gmi:LE_ProcessStep", &[]);
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
            "Recorded per feature in {} as run {} (commits {}). {}",
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
    processing(x, s);
    x.close().close();
}

/// A step's `gmi:LE_Processing`: the stage and target, the tool, the run-time
/// parameters, and each operation as a `gmi:LE_Algorithm`.
fn processing(x: &mut Xml, s: &Step) {
    x.open("gmi:processingInformation", &[])
        .open("gmi:LE_Processing", &[]);
    x.open("gmi:identifier", &[]).open("gmd:MD_Identifier", &[]);
    x.string("gmd:code", &format!("{}@{}", s.stage, s.target));
    x.close().close();
    citation(x, "gmi:softwareReference", &s.tools(), None);
    x.string(
        "gmi:procedureDescription",
        &format!("stage {}, event types {}", s.stage, s.event_types()),
    );
    x.string("gmi:runTimeParameters", &s.runtime_parameters());
    for (code, op) in &s.stats.operations {
        x.open("gmi:algorithm", &[]).open("gmi:LE_Algorithm", &[]);
        citation(
            x,
            "gmi:citation",
            &operation_label(code, op),
            (!code.is_empty()).then_some(code.as_str()),
        );
        x.string("gmi:description", &operation_facts(op));
        x.close().close();
    }
    x.close().close();
}

//! The lineage section (`mdb:resourceLineage`) of the ISO 19115-3 record
//! ([`crate::export::iso19115`]): the statement, the seal cited, and one process step per
//! stage and target CRS with its sources, processing (operations, tool, run-time
//! parameters), outcome report and output.

use crate::export::iso19115_parts::{identifier, reference_system, time_period, CL};
use crate::export::record::{operation_facts, operation_label, Record, Step};
use crate::export::xml::Xml;

/// The seal (or that there is none yet) and the store, by identity and public URL, and
/// the commits cited.
fn seal_citation(x: &mut Xml, tag: &str, rec: &Record, commits: &[String]) {
    x.open(tag, &[]).open("cit:CI_Citation", &[]);
    match &rec.seal {
        Some(s) => {
            x.string("cit:title", &format!("Seal {} of {}", s.seq, rec.store));
            x.open("cit:identifier", &[]);
            identifier(x, &s.sha256, "lineage-store:head-digest:sha256");
            x.close();
        }
        None => {
            x.string("cit:title", &format!("{} (not sealed yet)", rec.store));
        }
    }
    if let Some(id) = &rec.store_id {
        x.open("cit:identifier", &[]);
        identifier(x, id, "lineage-store:store-id");
        x.close();
    }
    for c in commits {
        x.open("cit:identifier", &[]);
        identifier(x, c, "lineage-store:commit-id");
        x.close();
    }
    x.string("cit:otherCitationDetails", &rec.proof_sentence());
    if let Some(url) = &rec.store_url {
        x.open("cit:onlineResource", &[])
            .open("cit:CI_OnlineResource", &[]);
        x.string("cit:linkage", url);
        x.string("cit:name", "lineage-store");
        x.close().close();
    }
    x.close().close();
}

/// The lineage: statement, scope, the seal cited, and the process steps.
pub(crate) fn resource_lineage(x: &mut Xml, rec: &Record) {
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
    x.close().close();
}

fn process_step(x: &mut Xml, rec: &Record, s: &Step, n: usize) {
    x.open("mrl:processStep", &[])
        .open("mrl:LE_ProcessStep", &[]);
    x.string("mrl:description", &s.description());
    x.string(
        "mrl:rationale",
        &format!(
            "Recorded per feature in {} as run {}.",
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

/// A step's processing (operations as algorithms, tool as software, stage and event
/// types, CRSs and grids as run-time parameters), outcome report and output.
fn step_processing(x: &mut Xml, s: &Step) {
    x.open("mrl:processingInformation", &[])
        .open("mrl:LE_Processing", &[]);
    for (code, op) in &s.stats.operations {
        x.open("mrl:algorithm", &[]).open("mrl:LE_Algorithm", &[]);
        x.open("mrl:citation", &[]).open("cit:CI_Citation", &[]);
        x.string("cit:title", &operation_label(code, op));
        if let Some((space, _)) = code.split_once(':') {
            x.open("cit:identifier", &[]);
            identifier(x, code, space);
            x.close();
        }
        x.close().close();
        x.string("mrl:description", &operation_facts(op));
        x.close().close();
    }
    x.open("mrl:identifier", &[]);
    identifier(
        x,
        &format!("{}@{}", s.stage, s.target),
        "lineage-store:stage@target_crs",
    );
    x.close();
    x.open("mrl:softwareReference", &[])
        .open("cit:CI_Citation", &[]);
    x.string("cit:title", &s.tools());
    x.close().close();
    x.string(
        "mrl:procedureDescription",
        &format!("stage {}, event types {}", s.stage, s.event_types()),
    );
    x.string("mrl:runTimeParameters", &s.runtime_parameters());
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

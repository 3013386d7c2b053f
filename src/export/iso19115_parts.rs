//! The ISO 19115-3 building blocks both parts of the record use ([`crate::export::iso19115`]
//! and [`crate::export::iso19115_lineage`]): code lists, identifiers, reference systems,
//! time periods.

use crate::export::xml::Xml;

pub(crate) const CL: &str =
    "http://standards.iso.org/iso/19115/resources/Codelists/cat/codelists.xml#";

pub(crate) fn time_period(x: &mut Xml, id: &str, begin: &str, end: &str) {
    x.open("gml:TimePeriod", &[("gml:id", id)]);
    x.text("gml:beginPosition", &[], begin);
    x.text("gml:endPosition", &[], end);
    x.close();
}

pub(crate) fn identifier(x: &mut Xml, code_text: &str, space: &str) {
    x.open("mcc:MD_Identifier", &[]);
    x.string("mcc:code", code_text);
    x.string("mcc:codeSpace", space);
    x.close();
}

pub(crate) fn reference_system(x: &mut Xml, tag: &str, crs: &str) {
    x.open(tag, &[]).open("mrs:MD_ReferenceSystem", &[]);
    x.open("mrs:referenceSystemIdentifier", &[]);
    identifier(x, crs, "EPSG");
    x.close().close().close();
}

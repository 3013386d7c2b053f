//! `lineage compact` (issue 20): sealed small parts merged into compacted parts, a record
//! per part, a seal naming the records whose Delta version removes the sources
//! (`dataChange` false) and adds the compacted parts; `verify` proving each compaction;
//! the trusted reads preferring compacted parts; races, crashes and replicas.

mod cli;
mod core;
mod provenance;
mod races;
mod tamper;

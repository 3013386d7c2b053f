//! The write path: the writer, streaming appends, the `Sink`, commit keys, part encoding
//! and contract versions.

mod commit_keys;
mod contract_1_3;
mod contract_versions;
mod part_encoding;
mod path;
mod resume;
mod retry_output;
mod sink;
mod streaming;

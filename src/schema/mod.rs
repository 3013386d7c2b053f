//! The contract: the schema, its rows and the rules every value follows.

pub mod contract;
pub mod crs;
pub mod events;
pub(crate) mod rules;

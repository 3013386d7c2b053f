//! Parts: encoding a flush as Parquet, and reading parts back in pieces.

pub(crate) mod decoded;
pub mod encode;
pub mod multiset;
pub mod pages;
pub mod read;
pub(crate) mod scan;
pub(crate) mod stats;
pub(crate) mod tail;
pub mod writer_sig;

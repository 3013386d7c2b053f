//! The write path.

pub(crate) mod check;
pub(crate) mod commit_key;
pub mod conform;
pub(crate) mod demo;
pub(crate) mod flush;
pub mod input;
pub mod lossless;
pub(crate) mod resume;
pub(crate) mod stream;
pub mod validate;
pub(crate) mod writer;

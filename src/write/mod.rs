//! The write path.

pub mod commit_key;
pub mod conform;
pub mod demo;
pub mod flush;
pub mod input;
pub mod stream;
pub mod validate;
pub mod writer;

//! The base layer: what every other layer uses and that uses nothing of ours.

pub(crate) mod clock;
pub(crate) mod cosign;
pub mod digest;
pub(crate) mod env;
pub(crate) mod error;
pub(crate) mod limits;
pub(crate) mod param;
pub(crate) mod pool;
pub(crate) mod rejection;
pub(crate) mod rng;
pub(crate) mod text;
pub mod time;
pub(crate) mod transport;

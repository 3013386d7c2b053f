//! The base layer: what every other layer uses and that uses nothing of ours.

pub mod clock;
pub mod digest;
pub mod error;
pub mod pool;
pub mod rng;
pub mod time;

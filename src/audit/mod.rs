//! The audit path: reading pointers back (`log`) and proving the store (`verify`).

pub mod log;
pub mod verify;
pub mod merkle;
pub mod part;
pub mod seal;

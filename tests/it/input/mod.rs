//! Input: every format read into the contract, bad input refused (every error at once),
//! `lineage check`, values kept bit for bit.

mod bad_cli;
mod bad_lib;
mod batches;
mod check;
mod distinct;
mod float_exact;
mod one_round;

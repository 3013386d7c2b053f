//! Input: every format read into the contract, bad input refused, values kept bit for bit.

mod bad_cli;
mod bad_lib;
mod batches;
mod float_exact;

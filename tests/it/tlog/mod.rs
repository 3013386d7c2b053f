//! Proof in open standards (issue 36): C2SP checkpoints, tiles and proofs, checked by independent verifiers.

mod checkpoint;
mod proof;
mod scale;
mod tiles;
mod trusted_head;
mod witness;
mod witness_cli;
mod witness_double;
mod witness_keys_read;

//! Proof in open standards (issue 36): C2SP checkpoints and tiles, checked by independent verifiers.

mod checkpoint;
mod tiles;

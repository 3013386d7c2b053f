//! Proof in open standards (issue 36): C2SP checkpoints, checked by independent verifiers.

mod checkpoint;

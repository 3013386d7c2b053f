//! A small seeded random number generator: sample data, and samples a seed can repeat
//! (`verify --sample N --sample-seed S` picks the same parts on every machine and version).
//! And the one door to the operating system's randomness ([`os_random`], [`random_uuid`]):
//! clippy.toml refuses `getrandom` and random UUIDs anywhere else.

use crate::base::error::{Error, Result};

/// Fill `buf` from the operating system's randomness (a signing key's seed, a sample's
/// seed when none is given).
#[allow(clippy::disallowed_methods)]
pub(crate) fn os_random(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|e| Error::internal(format!("no randomness: {e}")))
}

/// A random (version 4) UUID: a store's id, a unique temporary file name.
#[allow(clippy::disallowed_methods)]
pub(crate) fn random_uuid() -> uuid::Uuid {
    uuid::Uuid::new_v4()
}

/// SplitMix64: tiny, deterministic, the same sequence for a seed everywhere.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// Next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Index drawn by weights.
    pub(crate) fn pick(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.unit() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

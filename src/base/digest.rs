//! The digests a pointer records of its part, and computing any of them in one pass.
//!
//! Every pointer records the part's **sha256** (the digest auditors' tools know:
//! `sha256sum`, FIPS 180-4). Pointers written by current versions also record its **BLAKE3**
//! (256-bit, 128-bit collision security like sha256): on the CPUs this runs on, sha256
//! with SHA-NI hashes ~0.9-1.3 GB/s per core and BLAKE3 ~3 GB/s, so `verify` of a large
//! archive is bounded by sha256 long before it is bounded by reading. `verify` checks a
//! part against the fastest digest its pointer records ([`Check::Fastest`], the default)
//! or against every one ([`Check::All`], `--digest all`). Both digests are computed at
//! write time from the same in-memory bytes, so they cannot disagree about a part that was
//! never changed; once a seal covers the pointer, its bytes (both digests) are pinned.

use sha2::{Digest as _, Sha256};

/// Lower-case hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Lower-case hex BLAKE3-256.
pub fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Which digests of a part `verify` recomputes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Check {
    /// The fastest one the pointer records: BLAKE3 where recorded, else sha256.
    #[default]
    Fastest,
    /// Every digest the pointer records (sha256 always).
    All,
}

impl std::str::FromStr for Check {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "fastest" => Ok(Check::Fastest),
            "all" => Ok(Check::All),
            _ => Err(format!("{s:?}: expected `fastest` or `all`")),
        }
    }
}

/// Which digests to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// sha256.
    pub sha256: bool,
    /// BLAKE3.
    pub blake3: bool,
}

impl Want {
    /// sha256 only.
    pub const SHA256: Want = Want {
        sha256: true,
        blake3: false,
    };
    /// Both.
    pub const BOTH: Want = Want {
        sha256: true,
        blake3: true,
    };

    /// What `check` asks of a part whose pointer records a BLAKE3 or not.
    pub fn for_check(check: Check, blake3_recorded: bool) -> Want {
        match (check, blake3_recorded) {
            (_, false) => Want::SHA256,
            (Check::Fastest, true) => Want {
                sha256: false,
                blake3: true,
            },
            (Check::All, true) => Want::BOTH,
        }
    }
}

/// Digests computed over some bytes (lower-case hex; `None` where not asked for).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digests {
    /// sha256.
    pub sha256: Option<String>,
    /// BLAKE3.
    pub blake3: Option<String>,
}

impl Digests {
    /// Each computed digest that differs from what is recorded, as `"<name> <got>,
    /// <whose> records <want>"` (a digest not recorded is not compared).
    pub fn mismatches(&self, sha256: &str, blake3: Option<&str>, whose: &str) -> Vec<String> {
        let pairs = [
            ("sha256", self.sha256.as_deref(), Some(sha256)),
            ("blake3", self.blake3.as_deref(), blake3),
        ];
        pairs
            .into_iter()
            .filter_map(|(name, got, want)| match (got, want) {
                (Some(g), Some(w)) if g != w => Some(format!("{name} {g}, {whose} records {w}")),
                _ => None,
            })
            .collect()
    }
}

/// Incremental hashing of the digests asked for, in one pass over the bytes.
#[derive(Clone, Debug)]
pub struct Hasher {
    sha256: Option<Sha256>,
    blake3: Option<Box<blake3::Hasher>>,
}

impl Hasher {
    /// Hash what `want` asks for.
    pub fn new(want: Want) -> Self {
        Self {
            sha256: want.sha256.then(Sha256::new),
            blake3: want.blake3.then(|| Box::new(blake3::Hasher::new())),
        }
    }

    /// Feed the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        if let Some(h) = &mut self.sha256 {
            h.update(bytes);
        }
        if let Some(h) = &mut self.blake3 {
            h.update(bytes);
        }
    }

    /// The digests of everything fed.
    pub fn finish(self) -> Digests {
        Digests {
            sha256: self.sha256.map(|h| hex::encode(h.finalize())),
            blake3: self.blake3.map(|h| h.finalize().to_hex().to_string()),
        }
    }

    /// The digests `want` asks for of `bytes`.
    pub fn of(want: Want, bytes: &[u8]) -> Digests {
        let mut h = Self::new(want);
        h.update(bytes);
        h.finish()
    }
}

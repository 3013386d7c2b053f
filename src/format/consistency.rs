//! Consistency proofs between two checkpoints: pure data. No C2SP format exists for a
//! detached consistency proof, so ours is JSON holding the two C2SP checkpoints verbatim
//! and the RFC 9162 §2.1.4 proof (base64 hashes), which any tlog library checks
//! (e.g. Go's `tlog.CheckTree`).

use serde::{Deserialize, Serialize};

/// Format tag of consistency proofs.
pub const CONSISTENCY_FORMAT: &str = "lineage-consistency-proof/1";

/// That the newer checkpoint's tree extends the older one's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsistencyProof {
    /// Always [`CONSISTENCY_FORMAT`].
    pub format: String,
    /// The older seal's checkpoint, verbatim.
    pub old_checkpoint: String,
    /// The newer seal's checkpoint, verbatim.
    pub new_checkpoint: String,
    /// The RFC 9162 §2.1.4 consistency proof, base64 hashes.
    pub proof: Vec<String>,
}

/// Whether `text` is a consistency proof of ours (by its format tag).
pub fn is_consistency_proof(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v["format"] == CONSISTENCY_FORMAT)
}

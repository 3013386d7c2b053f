//! Why a C2SP tlog witness (`c2sp.org/tlog-witness`) did not cosign a checkpoint: one
//! kind per answer of the protocol, so that callers tell a witness that is down from one
//! that refuses the log. [`crate::base::error::Error::Cosign`] carries it, and
//! [`crate::base::error::Error::kind`] classifies it with every other error.

use serde::Serialize;

/// One reason a witness gave no cosignature, named after the protocol's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CosignError {
    /// No answer: the connection was refused or reset, or the timeout passed.
    #[error("no answer: {why}")]
    Unreachable {
        /// What the transport said.
        why: String,
    },
    /// HTTP 404: the witness does not know the checkpoint's origin (the log is not
    /// configured there).
    #[error("the witness does not know the origin {origin} (HTTP 404): its operator must add the log's verifier key for it")]
    UnknownOrigin {
        /// The origin sent.
        origin: String,
    },
    /// HTTP 403: no signature by a key the witness trusts for the origin, or one that does
    /// not verify.
    #[error("the witness found no valid signature by a key it trusts for the origin {origin} (HTTP 403)")]
    Forbidden {
        /// The origin sent.
        origin: String,
    },
    /// HTTP 409, after the one resend with a proof from the size the witness named: the
    /// witness's latest cosigned size moved again, or the body did not state one.
    #[error("the witness's latest cosigned size for the log is {}, not the old size {old} sent (HTTP 409)", witness_size.map_or("not stated".to_string(), |n| n.to_string()))]
    SizeConflict {
        /// The old size of the last request.
        old: u64,
        /// The size the witness stated, when it did.
        witness_size: Option<u64>,
    },
    /// HTTP 409 naming a tree larger than the checkpoint: the witness has cosigned a
    /// larger tree under this origin than the store has (another log under the same
    /// origin, or the store was rolled back).
    #[error("the witness has cosigned a tree of {witness_size} leaves for this origin, larger than this checkpoint's {tree_size}: another log under the same origin, or this store was rolled back")]
    AheadOfLog {
        /// The size the witness stated.
        witness_size: u64,
        /// The checkpoint's size.
        tree_size: u64,
    },
    /// HTTP 422: the consistency proof from `old`, or the checkpoint's root, was refused.
    #[error("the witness refused the consistency proof from size {old} to {tree_size} (HTTP 422): the tree it holds is not a prefix of this one")]
    ProofRefused {
        /// The old size sent.
        old: u64,
        /// The checkpoint's size.
        tree_size: u64,
    },
    /// HTTP 400: the witness found the request malformed.
    #[error("the witness refused the request as malformed (HTTP 400): {body}")]
    BadRequest {
        /// The start of the answer's body (printable).
        body: String,
    },
    /// Any other HTTP status.
    #[error("the witness answered HTTP {status}")]
    Status {
        /// The status code.
        status: u16,
    },
    /// A 200 answer that is not what the protocol says: too large, not signature lines,
    /// no cosignature by the witness's key, or one that does not verify.
    #[error("{why}")]
    BadAnswer {
        /// What is wrong with it.
        why: String,
    },
}

impl CosignError {
    /// The snake_case name outputs use (`unreachable`, `proof_refused`, …).
    pub fn name(&self) -> &'static str {
        match self {
            CosignError::Unreachable { .. } => "unreachable",
            CosignError::UnknownOrigin { .. } => "unknown_origin",
            CosignError::Forbidden { .. } => "forbidden",
            CosignError::SizeConflict { .. } => "size_conflict",
            CosignError::AheadOfLog { .. } => "ahead_of_log",
            CosignError::ProofRefused { .. } => "proof_refused",
            CosignError::BadRequest { .. } => "bad_request",
            CosignError::Status { .. } => "status",
            CosignError::BadAnswer { .. } => "bad_answer",
        }
    }
}

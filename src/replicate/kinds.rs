//! What `replicate` does with each kind of object, decided from its key by
//! [`crate::format::keys::classify`] in this one place.
//!
//! Objects are published in [`Stage`] order: everything of a stage lands before anything of
//! a later one, so an object that names other objects (a pointer names its part, a claim
//! names commits, a seal names pointers and the seal before it) always lands after them,
//! and a replica interrupted at any point is a valid store.
//!
//! Adding a create-only kind (e.g. checkpoints or tiles under `_lineage/`): its name in
//! [`crate::format::keys::classify`] (until then it is `Unknown`: reported, not copied), a [`Kind`]
//! variant and its arm in [`kind_of`]; its [`Stage`] (a new variant placed after the
//! stages of every object it names, and in [`Stage::ALL`]; [`Stage::sequential`] when its
//! objects name each other in key order, as a chain does); and, when its content can be
//! checked before copying, a check in `pass.rs` beside the claims' (`Ctx::small`). It is
//! then copied verbatim, byte for byte, compared when the destination has it.

use crate::format::keys;
use crate::format::keys::kind::KeyKind;

/// Publication order. Every object of a stage is published after every object of the
/// stages before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// The store's identity, first: everything after it belongs to the store it names.
    Identity,
    /// Data parts and their pointers, commit by commit: the part, then its pointer.
    Commits,
    /// Index entries (each names a pointer).
    Index,
    /// Commit-key claims (they name commits).
    Claims,
    /// Compacted parts, then compaction records (each names its compacted part and its
    /// source pointers), one at a time in key order (`…/parts/` sorts before
    /// `…/records/`): before the seals, since the seal that puts a compaction into effect
    /// names its record, and its Delta version reads the compacted part's footer.
    Compacted,
    /// Seals, strictly one after another in sequence order (each names pointers and the
    /// seal before it).
    Seals,
    /// Hash tiles and leaf locators (derived from the seals).
    SealAux,
    /// Delta versions, one after another in version order (version N is seal N and names
    /// the parts it seals; Delta readers need the versions dense).
    Delta,
    /// Head markers: a marker says its seal's tiles and locators are all there.
    Heads,
    /// Witness records (a witness store's), last, in key order: each names the one before.
    Witness,
}

impl Stage {
    /// Every stage, in publication order.
    pub const ALL: [Stage; 10] = [
        Stage::Identity,
        Stage::Commits,
        Stage::Index,
        Stage::Claims,
        Stage::Compacted,
        Stage::Seals,
        Stage::SealAux,
        Stage::Delta,
        Stage::Heads,
        Stage::Witness,
    ];

    /// Whether the objects of a verbatim stage must land one at a time in key order
    /// (objects that name the one before them). Commits and seals have their own order.
    pub fn sequential(self) -> bool {
        match self {
            Stage::Identity
            | Stage::Commits
            | Stage::Index
            | Stage::Claims
            | Stage::Seals
            | Stage::SealAux
            | Stage::Heads => false,
            // Delta versions in key order; each witness record names the one before it;
            // compacted parts before the records that name them.
            Stage::Delta | Stage::Witness | Stage::Compacted => true,
        }
    }
}

/// The kind of one object, as far as replication is concerned.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The store's identity (`_lineage/store.json`).
    Identity,
    /// A data part: copied with its commit, before the pointer, checked against it.
    Part,
    /// A commit pointer.
    Pointer {
        /// From its key.
        run_id: String,
        /// From its key.
        commit_id: String,
    },
    /// A commit-key claim (`_lineage/commit-keys/`).
    Claim,
    /// A compacted part or a compaction record (`_lineage/compacted/`).
    Compacted,
    /// A seal with its sequence number.
    Seal(u64),
    /// An index entry (`_lineage/index/`).
    Index,
    /// A hash tile or a leaf locator (`_lineage/tiles/`, `_lineage/leaves/`).
    SealAux,
    /// A head marker (`_lineage/heads/`).
    Head,
    /// A Delta version (`_delta_log/<20 digits>.json`).
    Delta(u64),
    /// A Delta checkpoint of ours (`_delta_log/<20 digits>.checkpoint.parquet`).
    DeltaCheckpoint(u64),
    /// A witness record (`_lineage/witness/`).
    Witness,
    /// Some other `_lineage/` object: not a kind lineage-store writes, never copied
    /// (`verify` names it `unknown_lineage_object`).
    Unknown,
    /// A temp of a publish in flight: never copied (the finished object will be).
    Temp,
    /// Not written by lineage-store: never copied.
    Foreign,
    /// Iceberg metadata (`_iceberg/`): its paths are absolute, so it belongs to its
    /// location and is never copied: after the seals, the pass writes the replica's own
    /// ([`crate::replicate::IcebergWritten`]).
    Iceberg,
}

impl Kind {
    /// The stage an object of this kind is published in; `None` when it is not copied.
    pub fn stage(&self) -> Option<Stage> {
        match self {
            Kind::Identity => Some(Stage::Identity),
            Kind::Part | Kind::Pointer { .. } => Some(Stage::Commits),
            Kind::Claim => Some(Stage::Claims),
            Kind::Compacted => Some(Stage::Compacted),
            Kind::Seal(_) => Some(Stage::Seals),
            Kind::Index => Some(Stage::Index),
            Kind::SealAux => Some(Stage::SealAux),
            Kind::Head => Some(Stage::Heads),
            Kind::Delta(_) | Kind::DeltaCheckpoint(_) => Some(Stage::Delta),
            Kind::Witness => Some(Stage::Witness),
            Kind::Temp | Kind::Foreign | Kind::Unknown | Kind::Iceberg => None,
        }
    }

    /// A short name for summaries.
    pub fn label(&self) -> &'static str {
        match self {
            Kind::Identity => "store identity",
            Kind::Part => "part",
            Kind::Pointer { .. } => "pointer",
            Kind::Claim => "claim",
            Kind::Compacted => "compacted part or record",
            Kind::Seal(_) => "seal",
            Kind::Index => "index entry",
            Kind::SealAux => "tile or locator",
            Kind::Head => "head marker",
            Kind::Delta(_) => "Delta version",
            Kind::DeltaCheckpoint(_) => "Delta checkpoint",
            Kind::Witness => "witness record",
            Kind::Unknown => "unknown",
            Kind::Temp => "temp",
            Kind::Foreign => "foreign",
            Kind::Iceberg => "Iceberg metadata",
        }
    }
}

/// The kind of a store key.
pub fn kind_of(key: &str) -> Kind {
    match keys::classify(key) {
        KeyKind::Identity => Kind::Identity,
        KeyKind::Part { .. } => Kind::Part,
        KeyKind::Pointer { run_id, commit_id } => Kind::Pointer { run_id, commit_id },
        KeyKind::Seal(n) => Kind::Seal(n),
        KeyKind::History(h) => match h {
            keys::HistoryKey::Index { .. } => Kind::Index,
            keys::HistoryKey::Tile { .. }
            | keys::HistoryKey::Leaf { .. }
            | keys::HistoryKey::Checkpoint(_)
            | keys::HistoryKey::Cosignature { .. }
            | keys::HistoryKey::TlogTile { .. }
            | keys::HistoryKey::EntryBundle { .. }
            | keys::HistoryKey::TimestampQuery(_)
            | keys::HistoryKey::TimestampReply(_) => Kind::SealAux,
            keys::HistoryKey::Head(_) => Kind::Head,
        },
        KeyKind::Claim => Kind::Claim,
        KeyKind::CompactionRecord { .. } | KeyKind::CompactedPart { .. } => Kind::Compacted,
        KeyKind::Witness => Kind::Witness,
        KeyKind::Unknown => Kind::Unknown,
        KeyKind::DeltaVersion(v) => Kind::Delta(v),
        KeyKind::DeltaCheckpoint(v) => Kind::DeltaCheckpoint(v),
        KeyKind::Temp => Kind::Temp,
        // Not ours (`_last_checkpoint`, another checkpoint's name, a planted file): never copied.
        KeyKind::Foreign | KeyKind::DeltaOther => Kind::Foreign,
        KeyKind::Iceberg(_) => Kind::Iceberg,
    }
}

//! The parameters a caller gives (a flag on the command line, a keyword argument in
//! Python, a field of an options struct in Rust), and messages that name them. The library
//! marks each parameter a message names as a [`Param`], and each front end renders it in
//! its own words ([`Text::render`]): Python as `grace`, the CLI (and the library's own
//! `Display`, the reference wording the docs use) as `--grace`.

use std::fmt;

/// A parameter of a call. Each front end spells it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Param {
    /// The store URL.
    Store,
    /// An S3-compatible endpoint.
    EndpointUrl,
    /// The input's format.
    Format,
    /// Most rows per commit.
    BatchRows,
    /// The key retried jobs derive commit ids from.
    CommitKey,
    /// Keep the flushes a commit key already committed and write the rest.
    Resume,
    /// The longest line, record or value accepted.
    MaxLineBytes,
    /// The largest seal read.
    MaxSealBytes,
    /// The largest page decoded.
    MaxPageBytes,
    /// The most one Parquet object decodes to.
    MaxDecodedBytes,
    /// Only what came after this seal.
    SinceSeal,
    /// The store as of this seal.
    AsOfSeal,
    /// One run.
    RunId,
    /// One target CRS.
    TargetCrs,
    /// Only these columns.
    Columns,
    /// How recent an unfinished write may be.
    Grace,
    /// How late an index entry may land.
    Lookback,
    /// One shard of a verification.
    Shard,
    /// How many shards.
    Shards,
    /// The seal shards are cut from.
    PlanSeal,
    /// Where shard reports are published.
    ReportDir,
    /// A head digest kept elsewhere.
    ExpectHead,
    /// A trusted public key.
    PublicKey,
    /// The first seal that must be signed.
    SignedFrom,
    /// The key seals are signed with.
    SigningKey,
    /// Publishing an unsigned seal after signed ones.
    Unsigned,
    /// The origin (log name) of a store's C2SP checkpoints.
    Origin,
    /// The older head of a consistency proof.
    FromHead,
    /// The newer head of a consistency proof.
    ToHead,
    /// Replacing an existing file.
    Force,
    /// Rows a compacted part aims at.
    TargetRows,
    /// The store repaired or replicated from.
    From,
    /// Where OpenLineage events are posted.
    Post,
    /// A proof's head digest.
    Head,
    /// A proof's seal.
    Seal,
    /// Reading every seal and pointer when sealing.
    Rescan,
    /// A store that keeps heads elsewhere.
    Witness,
    /// A time-stamping authority's URL (RFC 3161).
    Tsa,
    /// The root certificate TSA tokens must chain to.
    TsaRoot,
    /// A C2SP tlog witness's submission URL.
    WitnessUrl,
    /// A C2SP tlog witness's verifier key (cosignature/v1).
    WitnessKey,
    /// How many witness keys must have cosigned the newest checkpoint.
    WitnessQuorum,
    /// Trusting what the expected head covers (a consistency proof instead of reading it).
    TrustExpectedHead,
    /// Adopting orphan parts that name no store.
    AdoptUnidentified,
    /// An orphan part to adopt.
    Adopt,
    /// Accepting adopted commits as history.
    AcceptAdopted,
    /// Where output is written.
    Out,
    /// Output as JSON.
    Json,
    /// Errors listed of refused input.
    MaxErrors,
    /// Accepting a signing key file others can read.
    AllowReadableKey,
    /// The wait between passes.
    Interval,
    /// How old a temporary must be to be swept.
    OlderThan,
    /// One event, by its id.
    EventId,
    /// Reading the original parts, not the compacted ones.
    Originals,
    /// Also the commits no seal covers yet.
    IncludeUnsealed,
    /// The store as of the newest seal sealed by this time.
    AsOfTime,
    /// An ISO record's geographic bounding box.
    Bbox,
    /// An ISO record's contact organisation.
    Contact,
    /// An ISO record's contact e-mail address.
    ContactEmail,
    /// An ISO record's keyword.
    Keyword,
    /// An ISO record's topic category.
    TopicCategory,
}

impl Param {
    /// Its name in snake case (`max_seal_bytes`): the Python keyword and the Rust field;
    /// the CLI's flag is it in kebab case with `--`.
    pub fn name(self) -> &'static str {
        use Param::*;
        match self {
            Store => "store",
            EndpointUrl => "endpoint_url",
            Format => "format",
            BatchRows => "batch_rows",
            CommitKey => "commit_key",
            Resume => "resume",
            MaxLineBytes => "max_line_bytes",
            MaxSealBytes => "max_seal_bytes",
            MaxPageBytes => "max_page_bytes",
            MaxDecodedBytes => "max_decoded_bytes",
            SinceSeal => "since_seal",
            AsOfSeal => "as_of_seal",
            RunId => "run_id",
            TargetCrs => "target_crs",
            Columns => "columns",
            Grace => "grace",
            Lookback => "lookback",
            Shard => "shard",
            Shards => "shards",
            PlanSeal => "plan_seal",
            ReportDir => "report_dir",
            ExpectHead => "expect_head",
            PublicKey => "public_key",
            SignedFrom => "signed_from",
            SigningKey => "signing_key",
            Unsigned => "unsigned",
            Origin => "origin",
            FromHead => "from_head",
            ToHead => "to_head",
            Force => "force",
            TargetRows => "target_rows",
            From => "from",
            Post => "post",
            Head => "head",
            Seal => "seal",
            Rescan => "rescan",
            Witness => "witness",
            Tsa => "tsa",
            TsaRoot => "tsa_root",
            WitnessUrl => "witness_url",
            WitnessKey => "witness_key",
            WitnessQuorum => "witness_quorum",
            TrustExpectedHead => "trust_expected_head",
            AdoptUnidentified => "adopt_unidentified",
            Adopt => "adopt",
            AcceptAdopted => "accept_adopted",
            Out => "out",
            Json => "json",
            MaxErrors => "max_errors",
            AllowReadableKey => "allow_readable_key",
            Interval => "interval",
            OlderThan => "older_than",
            EventId => "event_id",
            Originals => "originals",
            IncludeUnsealed => "include_unsealed",
            AsOfTime => "as_of_time",
            Bbox => "bbox",
            Contact => "contact",
            ContactEmail => "contact_email",
            Keyword => "keyword",
            TopicCategory => "topic_category",
        }
    }
}

impl fmt::Display for Param {
    /// The reference spelling, the command line's flag (`--max-seal-bytes`): what the
    /// docs use, and what the library's own messages say. Other front ends render a
    /// [`Text`] with their own names ([`Text::render`], [`crate::Error::render`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}", self.name().replace('_', "-"))
    }
}

/// One piece of a [`Text`]: words, or a parameter each front end names its own way.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Piece {
    /// Words, as they are.
    Words(String),
    /// A parameter.
    Param(Param),
}

impl From<Param> for Piece {
    fn from(p: Param) -> Self {
        Piece::Param(p)
    }
}

impl From<String> for Piece {
    fn from(s: String) -> Self {
        Piece::Words(s)
    }
}

impl From<&str> for Piece {
    fn from(s: &str) -> Self {
        Piece::Words(s.to_string())
    }
}

/// A message that may name parameters: each front end renders it with its own names for
/// them ([`Text::render`]). It reads (`Deref` to `str`, `Display`, JSON) as the reference
/// wording, the CLI's, kept beside the pieces.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Text {
    pieces: Vec<Piece>,
    shown: String,
}

impl Text {
    /// The pieces, in order.
    pub fn from_pieces(pieces: Vec<Piece>) -> Self {
        let shown = render(&pieces, &|p| p.to_string());
        Text { pieces, shown }
    }

    /// The message with every parameter named by `name`.
    pub fn render(&self, name: &dyn Fn(Param) -> String) -> String {
        render(&self.pieces, name)
    }

    /// The reference wording.
    pub fn as_str(&self) -> &str {
        &self.shown
    }

    /// `words`, then this text.
    pub fn prefixed(mut self, words: impl Into<String>) -> Self {
        let words = words.into();
        self.shown.insert_str(0, &words);
        self.pieces.insert(0, Piece::Words(words));
        self
    }
}

fn render(pieces: &[Piece], name: &dyn Fn(Param) -> String) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Words(w) => w.clone(),
            Piece::Param(p) => name(*p),
        })
        .collect()
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.shown
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text {
            shown: s.clone(),
            pieces: vec![Piece::Words(s)],
        }
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::from(s.to_string())
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl serde::Serialize for Text {
    /// As the reference wording (a report's JSON reads the same from every front end).
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.shown)
    }
}

impl<'de> serde::Deserialize<'de> for Text {
    /// Words only: a report read back (`verify merge`) has no pieces left to name.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d).map(Text::from)
    }
}

/// A [`Text`] of words and [`Param`]s: `text!["more than ", Param::MaxSealBytes, format!(" {max}")]`.
macro_rules! text {
    ($($piece:expr),* $(,)?) => {
        $crate::base::param::Text::from_pieces(vec![$($crate::base::param::Piece::from($piece)),*])
    };
}
pub(crate) use text;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_front_end_names_the_parameters_its_own_way() {
        let t = text!["pass a larger ", Param::MaxSealBytes, " here"];
        assert_eq!(t.to_string(), "pass a larger --max-seal-bytes here");
        let python = |p: Param| format!("{}=", p.name());
        assert_eq!(t.render(&python), "pass a larger max_seal_bytes= here");
    }
}

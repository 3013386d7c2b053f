//! The keys of the Iceberg metadata ([`crate::format::iceberg`]), all under
//! [`ICEBERG_METADATA_PREFIX`]: for seal N, `v<N>.metadata.json` (the table as of seal N),
//! `snap-<N>.avro` (snapshot N's manifest list) and, when seal N adds or removes files,
//! `manifest-<N>.avro` (its manifest). N in decimal without leading zeros, as Iceberg
//! names metadata files.

/// Prefix of everything Iceberg.
pub const ICEBERG_PREFIX: &str = "_iceberg/";
/// Prefix of the Iceberg metadata.
pub const ICEBERG_METADATA_PREFIX: &str = "_iceberg/metadata/";

/// What a key under [`ICEBERG_PREFIX`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcebergKey {
    /// `v<N>.metadata.json`.
    Metadata(u64),
    /// `snap-<N>.avro`.
    ManifestList(u64),
    /// `manifest-<N>.avro`.
    Manifest(u64),
    /// Anything else: not ours (`version-hint.text`, a planted file).
    Other,
}

/// The metadata file of seal `n`.
pub fn iceberg_metadata_key(n: u64) -> String {
    format!("{ICEBERG_METADATA_PREFIX}v{n}.metadata.json")
}

/// The manifest list of snapshot (seal) `n`.
pub fn iceberg_manifest_list_key(n: u64) -> String {
    format!("{ICEBERG_METADATA_PREFIX}snap-{n}.avro")
}

/// The manifest written by seal `n`.
pub fn iceberg_manifest_key(n: u64) -> String {
    format!("{ICEBERG_METADATA_PREFIX}manifest-{n}.avro")
}

/// A decimal seal number without leading zeros, at least 1.
fn number(s: &str) -> Option<u64> {
    let ok = !s.is_empty() && s.len() <= 20 && !s.starts_with('0');
    ok.then(|| s.parse().ok()).flatten()
}

/// Classify a key under [`ICEBERG_PREFIX`] (`None`: not under it).
pub fn classify_iceberg(key: &str) -> Option<IcebergKey> {
    let rest = key.strip_prefix(ICEBERG_PREFIX)?;
    let Some(name) = rest.strip_prefix("metadata/") else {
        return Some(IcebergKey::Other);
    };
    let kind = if let Some(n) = name
        .strip_prefix('v')
        .and_then(|r| r.strip_suffix(".metadata.json"))
    {
        number(n).map(IcebergKey::Metadata)
    } else if let Some(n) = name
        .strip_prefix("snap-")
        .and_then(|r| r.strip_suffix(".avro"))
    {
        number(n).map(IcebergKey::ManifestList)
    } else if let Some(n) = name
        .strip_prefix("manifest-")
        .and_then(|r| r.strip_suffix(".avro"))
    {
        number(n).map(IcebergKey::Manifest)
    } else {
        None
    };
    Some(kind.unwrap_or(IcebergKey::Other))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for n in [1, 9, 10, 12345] {
            assert_eq!(
                classify_iceberg(&iceberg_metadata_key(n)),
                Some(IcebergKey::Metadata(n))
            );
            assert_eq!(
                classify_iceberg(&iceberg_manifest_list_key(n)),
                Some(IcebergKey::ManifestList(n))
            );
            assert_eq!(
                classify_iceberg(&iceberg_manifest_key(n)),
                Some(IcebergKey::Manifest(n))
            );
        }
        for k in [
            "_iceberg/metadata/version-hint.text",
            "_iceberg/metadata/v01.metadata.json",
            "_iceberg/metadata/v0.metadata.json",
            "_iceberg/metadata/snap-1.avro.bak",
            "_iceberg/data/x.parquet",
        ] {
            assert_eq!(classify_iceberg(k), Some(IcebergKey::Other), "{k}");
        }
        assert_eq!(classify_iceberg("_delta_log/x"), None);
    }
}

//! Where a part is, as a reader outside lineage-store takes it: an absolute path on local
//! disk, the object URL on an object store.

use crate::publish::AtomicPublisher;

/// The location of `part_path` in `store`: for a local store (`file://<root>`) the
/// absolute path `<root>/<part_path>`; for an object store its URL
/// (`s3://bucket/prefix/<part_path>`, `az://...`, `gs://...`), which DuckDB's
/// `read_parquet`, Polars and pyarrow open with their own credentials.
pub fn part_location(store: &dyn AtomicPublisher, part_path: &str) -> String {
    join(&store.describe(), part_path)
}

/// `base` (a store's [`AtomicPublisher::describe`]) joined with a key.
pub(crate) fn join(base: &str, key: &str) -> String {
    if let Some(root) = base.strip_prefix("file://") {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.into());
        return root.join(key).to_string_lossy().into_owned();
    }
    format!("{}/{key}", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn joins() {
        assert_eq!(
            join(
                "file:///data/s",
                "run_id=a/target_crs=EPSG:4326/part-1.parquet"
            ),
            "/data/s/run_id=a/target_crs=EPSG:4326/part-1.parquet"
        );
        assert_eq!(
            join("s3://b/p/", "run_id=a/x.parquet"),
            "s3://b/p/run_id=a/x.parquet"
        );
    }
}

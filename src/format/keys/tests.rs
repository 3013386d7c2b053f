//! Tests of the key layout.

use super::*;
use chrono::{DateTime, Utc};

#[test]
fn run_id_must_be_a_safe_path_segment() {
    assert!(run_id_problem("run-2026-07-13-abc123").is_none());
    assert!(run_id_problem(&"r".repeat(128)).is_none());
    for bad in [
        "", "a/b", "a\\b", "a=b", "..", "a..b", ".hidden", "_meta", "a\nb", "a\u{7f}b", "x%2F",
    ] {
        assert!(run_id_problem(bad).is_some(), "{bad:?} must be refused");
    }
    assert!(run_id_problem(&"r".repeat(129))
        .unwrap()
        .contains("128 bytes"));
}

#[test]
fn layout_keys_round_trip_through_classify() {
    let id = "0190b2f3-0000-7000-8000-000000000001";
    let part = part_key("run-a", "EPSG:4326", id);
    assert_eq!(
        part,
        format!("run_id=run-a/target_crs=EPSG:4326/part-{id}.parquet")
    );
    assert!(matches!(classify(&part), KeyKind::Part { commit_id, .. } if commit_id == id));
    let ptr = pointer_key("run-a", id);
    assert_eq!(ptr, format!("_lineage/commits/run_id=run-a/{id}.json"));
    assert!(matches!(classify(&ptr), KeyKind::Pointer { run_id, .. } if run_id == "run-a"));
    assert_eq!(
        classify("run_id=run-a/target_crs=EPSG:4326/.part-x.parquet.abc.tmp"),
        KeyKind::Temp
    );
    assert_eq!(
        classify("run_id=run-a/target_crs=EPSG:4326/other.parquet"),
        KeyKind::Foreign
    );
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[test]
fn history_keys_of_both_layouts_classify_alike() {
    let id = "0190b2f3-0000-7000-8000-00000000ab12";
    let t = at("2026-07-13T14:30:12.123456Z");
    let v2 = index_key(t, id, "run-a");
    assert_eq!(
        v2,
        format!("_lineage/index/2026-07-13/14/30/12/T143012.123456Z.{id}.run_id=run-a")
    );
    let v1 = index_key_in(Layout::V1, t, id, "run-a");
    assert_eq!(
        v1,
        format!("_lineage/index/2026-07-13/T143012.123456Z.{id}.run_id=run-a")
    );
    let want = KeyKind::History(HistoryKey::Index {
        committed: t,
        commit_id: id.into(),
        run_id: "run-a".into(),
    });
    assert_eq!(classify(&v2), want);
    assert_eq!(classify(&v1), want);
    assert_eq!(canonical_index_key(&v1).as_deref(), Some(v2.as_str()));
    // A V2 file name in the wrong second's directory is not ours.
    let moved = v2.replace("/12/T", "/13/T");
    assert_eq!(classify(&moved), KeyKind::Foreign);

    assert_eq!(
        head_key(7),
        format!(
            "_lineage/heads/{:017}/{:020}-{:020}",
            (u64::MAX - 7) / 1000,
            u64::MAX - 7,
            7
        )
    );
    for l in [Layout::V1, Layout::V2] {
        assert_eq!(
            classify(&head_key_in(l, 7)),
            KeyKind::History(HistoryKey::Head(7))
        );
        let k = leaf_key_in(l, id, 42, "run-a");
        assert_eq!(
            classify(&k),
            KeyKind::History(HistoryKey::Leaf {
                commit_id: id.into(),
                leaf_index: 42,
                run_id: "run-a".into()
            }),
            "{k}"
        );
        assert!(k.starts_with(&leaf_prefix_in(l, id)));
    }
    assert_eq!(leaf_prefix(id), format!("_lineage/leaves/12/ab/{id}."));
    assert_eq!(
        leaf_prefix_in(Layout::V1, id),
        format!("_lineage/leaves/12/{id}.")
    );
}

#[test]
fn a_listing_from_an_index_bound_finds_both_layouts_from_then_on() {
    let id = "0190b2f3-0000-7000-8000-000000000001";
    let bound = index_bound(at("2026-07-13T14:30:12.5Z"));
    let key = |l, s: &str| index_key_in(l, at(s), id, "r");
    for (l, t, after) in [
        (Layout::V2, "2026-07-13T14:30:12.5Z", true),
        (Layout::V2, "2026-07-13T14:30:12.6Z", true),
        (Layout::V2, "2026-07-13T14:31:00Z", true),
        (Layout::V2, "2026-07-14T00:00:00Z", true),
        (Layout::V2, "2026-07-13T14:30:12.4Z", false),
        (Layout::V2, "2026-07-13T09:00:00Z", false),
        (Layout::V1, "2026-07-13T14:30:12.6Z", true),
        (Layout::V1, "2026-07-14T00:00:00Z", true),
        (Layout::V1, "2026-07-12T23:59:59Z", false),
        // The bound's day in the older layout: listed, and dropped by time.
        (Layout::V1, "2026-07-13T09:00:00Z", true),
    ] {
        assert_eq!(key(l, t) > bound, after, "{l:?} {t}");
    }
    // Newest marker first, across layouts and directories.
    let mut heads: Vec<String> = [1u64, 999, 1000, 1001, 5000]
        .iter()
        .map(|&n| head_key(n))
        .chain([head_key_in(Layout::V1, 3)])
        .collect();
    heads.sort();
    assert_eq!(heads[0], head_key(5000));
}

#[test]
fn only_our_names_under_lineage_are_ours() {
    let claim = commit_key_claim_key("job-1");
    assert_eq!(classify(&claim), KeyKind::Claim);
    assert_eq!(
        classify(&format!(
            "_lineage/witness/{}/{:020}.json",
            "ab".repeat(32),
            3
        )),
        KeyKind::Witness
    );
    assert_eq!(classify(IDENTITY_KEY), KeyKind::Identity);
    for planted in [
        "_lineage/stash.parquet",
        "_lineage/notes.txt",
        "_lineage/commits/run_id=X/x.parquet",
        "_lineage/commit-keys/short.json",
        "_lineage/seals/1.json",
        "_lineage/witness/notes.txt",
        "_lineage/keys/seal.pub",
    ] {
        assert_eq!(classify(planted), KeyKind::Unknown, "{planted}");
    }
}

#[test]
fn a_part_name_under_a_crs_directory_not_ours_is_foreign() {
    let id = "0190b2f3-0000-7000-8000-000000000001";
    for crs in [
        "EPSG%3A25832",
        "garbage",
        "EPSG:25832.bak",
        "",
        "EPSG:025832",
        "epsg:25832",
    ] {
        let key = format!("run_id=r/target_crs={crs}/part-{id}.parquet");
        assert_eq!(classify(&key), KeyKind::Foreign, "{key}");
        assert_eq!(
            part_name(&key),
            Some(("r".into(), crs.into(), id.into())),
            "{key}"
        );
    }
    let ours = part_key("r", "EPSG:25832", id);
    assert!(
        matches!(classify(&ours), KeyKind::Part { target_crs, .. } if target_crs == "EPSG:25832")
    );
}

#[test]
fn timestamp_keys_are_classified_and_near_misses_are_not_ours() {
    use super::{timestamp_query_key, timestamp_reply_key};
    assert_eq!(
        timestamp_query_key(7),
        "_lineage/timestamps/00000000000000000007.tsq"
    );
    assert_eq!(
        classify(&timestamp_query_key(7)),
        KeyKind::History(HistoryKey::TimestampQuery(7))
    );
    assert_eq!(
        classify(&timestamp_reply_key(7)),
        KeyKind::History(HistoryKey::TimestampReply(7))
    );
    for planted in [
        "_lineage/timestamps/7.tsr",
        "_lineage/timestamps/00000000000000000007.tsr.bak",
        "_lineage/timestamps/00000000000000000007.der",
        "_lineage/timestamps/notes.txt",
    ] {
        assert!(
            !matches!(classify(planted), KeyKind::History(_)),
            "{planted}"
        );
    }
}

#[test]
fn cosignature_keys_are_classified_and_near_misses_are_not_ours() {
    use super::cosignature_key;
    let k = cosignature_key(7, "w.example/w1+01020304+BAAA");
    let h = crate::base::digest::sha256_hex(b"w.example/w1+01020304+BAAA");
    assert_eq!(
        k,
        format!("_lineage/tlog/cosignatures/00000000000000000007/{h}")
    );
    assert_eq!(
        classify(&k),
        KeyKind::History(HistoryKey::Cosignature {
            seq: 7,
            witness: h.clone()
        })
    );
    for planted in [
        format!("_lineage/tlog/cosignatures/7/{h}"),
        format!(
            "_lineage/tlog/cosignatures/00000000000000000007/{}",
            h.to_uppercase()
        ),
        format!("_lineage/tlog/cosignatures/00000000000000000007/{h}.bak"),
        "_lineage/tlog/cosignatures/00000000000000000007/notes.txt".to_string(),
        format!("_lineage/tlog/cosignatures/00000000000000000007/x/{h}"),
    ] {
        assert!(
            !matches!(classify(&planted), KeyKind::History(_)),
            "{planted}"
        );
    }
}

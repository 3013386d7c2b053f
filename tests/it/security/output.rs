//! What the tool prints about a hostile store: control characters escaped in every
//! human-readable line, values quoted short, secrets never echoed.

use crate::security::symlinks::local_store;
use crate::support::{lineage, text};

#[tokio::test]
async fn a_file_name_cannot_forge_a_line_of_the_verify_report() {
    let (_tmp, root, _) = local_store().await;
    let forged = "x\nclean: no problems\n\u{1b}[2K\u{1b}[1Aok";
    std::fs::write(root.join(forged), b"planted").unwrap();
    let o = lineage(
        &["verify", "--store", root.to_str().unwrap(), "--grace", "0s"],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(!out.lines().any(|l| l == "clean: no problems"), "{out}");
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(
        out.contains(r"PROBLEM foreign_object: x\nclean: no problems\n\u{1b}[2K\u{1b}[1Aok"),
        "{out}"
    );
    // --json keeps the name exactly (JSON escapes it).
    let o = lineage(
        &[
            "verify",
            "--store",
            root.to_str().unwrap(),
            "--grace",
            "0s",
            "--json",
        ],
        None,
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r["problems"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["key"] == forged));
}

#[tokio::test]
async fn refused_urls_are_named_without_their_secrets() {
    let (_tmp, root, _) = local_store().await;
    let store = root.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "verify",
            "--store",
            "s3://bucket/p",
            "--endpoint-url",
            "http://user:SECRETPW@127.0.0.1:1",
        ],
        vec![
            "verify",
            "--store",
            "s3://bucket/p",
            "--endpoint-url",
            "http://127.0.0.1:1/?X-Amz-Signature=SECRETSIG",
        ],
        vec![
            "verify",
            "--store",
            "s3://bucket/p",
            "--endpoint-url",
            "ftp://user:SECRETPW@h",
        ],
        vec!["verify", "--store", "file://u:SECRETPW@/data/lake"],
        vec!["verify", "--store", "s3://user:SECRETPW@bucket/p"],
        vec![
            "verify",
            "--store",
            "s3://bucket/p?X-Amz-Signature=SECRETSIG",
        ],
        vec![
            "export",
            "openlineage",
            "--store",
            store,
            "--post",
            "http://user:SECRETPW@127.0.0.1:1/",
        ],
        vec![
            "export",
            "openlineage",
            "--store",
            store,
            "--post",
            "ftp://h/?sig=SECRETSIG",
        ],
    ];
    for args in cases {
        let o = crate::support::lineage_env(&args, &[("AWS_REGION", "us-east-1")], None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(
            !err.contains("SECRET") && !out.contains("SECRET"),
            "{args:?}: {err}"
        );
        // Store URLs were redacted before (without the marker); the rest say `***`.
        if !args[2].starts_with("s3://") || args.len() > 3 {
            assert!(err.contains("***"), "{args:?}: {err}");
        }
    }
}

#[tokio::test]
async fn a_huge_value_in_a_planted_part_is_quoted_short() {
    use crate::support::bad_input::{contract_batch, parquet, with};
    let (_tmp, root, ptrs) = local_store().await;
    let huge = "R".repeat(1 << 20);
    let b = contract_batch(3);
    let col: arrow_array::ArrayRef =
        std::sync::Arc::new(arrow_array::StringArray::from(vec![huge.as_str(); 3]));
    let b = with(&b, "run_id", col);
    let dir = std::path::Path::new(&ptrs[0].part_path)
        .parent()
        .unwrap()
        .to_path_buf();
    let planted = dir.join("part-01a234d7-5435-7313-b465-2822b322f0a8.parquet");
    std::fs::write(root.join(&planted), parquet(&b)).unwrap();
    let o = lineage(
        &["verify", "--store", root.to_str().unwrap(), "--grace", "0s"],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains(planted.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.len() < 2048,
        "a line of {} bytes: {}",
        line.len(),
        &line[..300]
    );
    assert!(!line.contains(&"R".repeat(65)), "{}", &line[..300]);
    assert!(out.len() < 16 * 1024, "{} bytes of output", out.len());
}

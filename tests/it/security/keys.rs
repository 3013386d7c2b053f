//! The signing key: refused when others can read it (unless told) or when it lies inside
//! the store; and nothing unknown under `_lineage/` (a key placed there) is replicated.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{lineage, text};

fn seal(store: &Path, key: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "seal",
        "--store",
        store.to_str().unwrap(),
        "--signing-key",
        key.to_str().unwrap(),
        "--allow-empty",
    ];
    args.extend_from_slice(extra);
    lineage(&args, None)
}

#[test]
fn a_readable_key_is_refused_unless_accepted_and_a_key_inside_the_store_always() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("lake");
    let o = lineage(
        &["append", "--store", store.to_str().unwrap(), "--input", "-"],
        Some(crate::support::ndjson("r", 3, "k").as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let key = tmp.path().join("seal.key");
    lineage_store::keygen(&tmp.path().join("seal")).unwrap();
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let o = seal(&store, &key, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);

    for mode in [0o640, 0o604, 0o660] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let o = seal(&store, &key, &[]);
        let err = text(&o).1;
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("accessible by others") && err.contains(&format!("{mode:04o}")),
            "{err}"
        );
        assert!(err.contains("--allow-readable-key"), "{err}");
    }
    let o = seal(&store, &key, &["--allow-readable-key"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);

    // Inside the store: refused, flag or not, and never replicated.
    let inside = store.join("_lineage/seals/seal.key");
    std::fs::copy(&key, &inside).unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
    for extra in [&[][..], &["--allow-readable-key"][..]] {
        let o = seal(&store, &inside, extra);
        let err = text(&o).1;
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("is inside the store"), "{err}");
    }
    let replica = tmp.path().join("replica");
    let o = lineage(
        &[
            "replicate",
            "--from",
            store.to_str().unwrap(),
            "--to",
            replica.to_str().unwrap(),
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(
        !replica.join("_lineage/seals/seal.key").exists(),
        "{out}{err}"
    );
    assert!(
        format!("{out}{err}").contains("_lineage/seals/seal.key"),
        "{out}{err}"
    );
}

/// Issue 34: under `umask 000` the public key was written 0666 (anyone could replace it);
/// both files have fixed modes whatever the umask, with `--force` too.
#[test]
fn keygen_modes_do_not_follow_a_permissive_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("seal");
    for force in ["", " --force"] {
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("umask 000; exec \"$0\" keygen --out \"$1\"{force}"))
            .arg(env!("CARGO_BIN_EXE_lineage"))
            .arg(&prefix)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
        for (ext, want) in [("key", 0o600), ("pub", 0o644)] {
            let mode = std::fs::metadata(prefix.with_extension(ext))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, want, "{ext}{force}: {:04o}", mode & 0o777);
        }
    }
}

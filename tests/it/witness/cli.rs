//! `lineage witness` and `verify --witness` through the CLI, with the witness in another
//! store (another backend): local disk witnessed in LocalStack, Azurite witnessed in moto,
//! and local disk witnessed on local disk (runs without emulators). Truncating the newest
//! seal after witnessing, rewriting a seal, and deleting witness records.

use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::keys::seal_key;
use serde_json::Value;

use crate::support::replica::{json, kinds_and_keys, rewritten_seal, run, Side};
use crate::support::{text, Emulator};

fn witness_cmd(store: &Side, wit: &Side, cmd: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec![cmd.to_string()];
    a.extend(store.args("store"));
    a.extend(wit.args("witness"));
    a.extend(extra.iter().map(|s| s.to_string()));
    run(&a, &[])
}

/// (kind, key) of every witness problem `verify --witness --json` reports; its exit code.
fn witness_problems(store: &Side, wit: &Side) -> (Option<i32>, Vec<(String, String)>, Value) {
    let o = witness_cmd(store, wit, "verify", &["--json"]);
    let v = json(&o);
    (
        o.status.code(),
        kinds_and_keys(&v["witness"]["problems"]),
        v,
    )
}

fn p(kind: &str, key: String) -> (String, String) {
    (kind.to_string(), key)
}

async fn scenario(store: Side, wit: Side) {
    let ctx = format!("{} witnessed in {}", store.name, wit.name);
    // Three seals, each witnessed.
    let mut heads = Vec::new();
    for i in 1..=3 {
        store.append(&format!("run-{i}"), 12, 6, None).await;
        heads.push(store.seal().await);
        let o = witness_cmd(&store, &wit, "witness", &["--json"]);
        assert_eq!(o.status.code(), Some(0), "{ctx}: {:?}", text(&o));
        let w = json(&o);
        assert_eq!(
            (w["seq"].as_u64(), w["created"].as_bool()),
            (Some(i), Some(true)),
            "{ctx}: {w}"
        );
        assert_eq!(w["head"].as_str(), Some(heads[i as usize - 1].as_str()));
    }
    let id = json(&witness_cmd(&store, &wit, "witness", &["--json"]))["store_id"]
        .as_str()
        .unwrap()
        .to_string();
    let record = |n: u64| lineage_store::witness::record_key(&id, n);
    let (code, problems, v) = witness_problems(&store, &wit);
    assert_eq!((code, problems.len()), (Some(0), 0), "{ctx}: {v}");
    assert_eq!(v["witness"]["records"], 3);

    // Rewrite seal 2 (a signed-looking edit: another time): named with the witnessed head.
    let s2 = store.get(&seal_key(2)).await.unwrap();
    store.raw_put(&seal_key(2), &rewritten_seal(&s2)).await;
    let o = witness_cmd(&store, &wit, "verify", &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{ctx}: {out} {err}");
    assert!(
        out.contains(&format!(
            "PROBLEM witness witnessed_seal_rewritten: {}",
            seal_key(2)
        )) && out.contains(&heads[1])
            && out.contains("rewritten after the witness saw it"),
        "{ctx}: {out}"
    );
    store.raw_put(&seal_key(2), &s2).await; // put back

    // Truncate the newest seal: named, and the witness refuses to record the cut history.
    let s3 = store.get(&seal_key(3)).await.unwrap();
    store.raw_delete(&seal_key(3)).await;
    let (code, problems, v) = witness_problems(&store, &wit);
    assert_eq!(code, Some(1), "{ctx}: {v}");
    assert_eq!(
        problems,
        vec![p("witnessed_seal_missing", seal_key(3))],
        "{ctx}"
    );
    assert!(
        v.to_string().contains(&heads[2]),
        "{ctx}: the witnessed head is named"
    );
    let o = witness_cmd(&store, &wit, "witness", &[]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{ctx}: {out}");
    assert!(out.contains("nothing recorded"), "{ctx}: {out}");
    store.raw_put(&seal_key(3), &s3).await;

    // Delete a witness record: the record after it names it.
    wit.raw_delete(&record(2)).await;
    let (code, problems, _) = witness_problems(&store, &wit);
    assert_eq!(code, Some(1));
    assert_eq!(
        problems,
        vec![p("witness_record_missing", record(2))],
        "{ctx}"
    );
    // Delete the newest too: nothing names the deleted records any more. The witness
    // store must refuse deletes; verify says how old the newest witnessed head is.
    wit.raw_delete(&record(3)).await;
    let o = witness_cmd(&store, &wit, "verify", &[]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}: {out}");
    assert!(
        out.contains("newest witnessed: seal 1") && out.contains("2 newer seals not witnessed yet"),
        "{ctx}: {out}"
    );
    // Witnessing again records the head with a link to the newest record left.
    let o = witness_cmd(&store, &wit, "witness", &["--json"]);
    assert_eq!(json(&o)["seq"], 3);
    let rec: Value = serde_json::from_slice(&wit.get(&record(3)).await.unwrap()).unwrap();
    let r1 = sha256_hex(&wit.get(&record(1)).await.unwrap());
    assert_eq!(
        (rec["prev"]["seq"].as_u64(), rec["prev"]["sha256"].as_str()),
        (Some(1), Some(r1.as_str()))
    );

    // Rewrite from seal 1: a store the witness does not know, but it names the old identity.
    let s1 = store.get(&seal_key(1)).await.unwrap();
    store.raw_put(&seal_key(1), &rewritten_seal(&s1)).await;
    let (code, problems, v) = witness_problems(&store, &wit);
    assert_eq!(code, Some(1));
    assert_eq!(problems.len(), 1, "{ctx}: {v}");
    assert_eq!(problems[0].0, "another_store_at_location");
    assert!(
        v.to_string()
            .contains(&format!("store {id} (witnessed up to seal 3)")),
        "{ctx}: {v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_disk_witnessed_on_local_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = Side::posix(dir.path(), "store");
    // A witness inside the store it witnesses is refused.
    store.append("run-0", 4, 4, None).await;
    store.seal().await;
    let o = witness_cmd(&store, &store, "witness", &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is the store itself"), "{err}");
    let store = Side::posix(dir.path(), "store2");
    scenario(store, Side::posix(dir.path(), "witness")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_disk_witnessed_in_localstack() {
    let Some(wit) = Side::s3(Emulator::LocalStack, "witness_ls").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    scenario(Side::posix(dir.path(), "store"), wit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seaweedfs_witnessed_in_local_disk_and_local_disk_in_seaweedfs() {
    let dir = tempfile::tempdir().unwrap();
    let (Some(store), Some(wit)) = (
        Side::s3(Emulator::SeaweedFs, "witness_sw_store").await,
        Side::s3(Emulator::SeaweedFs, "witness_sw").await,
    ) else {
        return;
    };
    scenario(store, Side::posix(dir.path(), "witness")).await;
    scenario(Side::posix(dir.path(), "store"), wit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_witnessed_in_moto() {
    let (Some(store), Some(wit)) = (
        Side::azurite("witness_az").await,
        Side::s3(Emulator::Moto, "witness_moto").await,
    ) else {
        return;
    };
    scenario(store, wit).await;
}

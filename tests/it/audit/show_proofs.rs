//! `lineage show SEAL` names the proofs to ask for: each command of its `proofs:` line,
//! run as printed (the commit id and, when no key file was given to `show`, the key file
//! filled in), proves a commit of that seal and checks the proof offline, for an unsigned
//! seal (a `lineage-proof/1`, checked against the head digest) and a signed one (its
//! compact proof, checked against the key; with `--embed-seal`, against the head digest).

use std::path::Path;
use std::sync::Arc;

use lineage_store::{keygen, open, read_signing_key, seal, AtomicPublisher, SystemClock};

use crate::support::audit::append;
use crate::support::lineage;

/// Run one printed command (`lineage …`, its words split on blanks): its stdout.
fn run_printed(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"lineage"), "{command}");
    let o = lineage(&words[1..], None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{command}: {err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The commands of `show SEAL`'s `proofs:` line, in order.
fn proof_commands(store: &str, seal: &str, extra: &[&str]) -> (String, Vec<String>) {
    let mut args = vec!["show", "--store", store, seal];
    args.extend(extra);
    let o = lineage(&args, None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("  proofs:    "))
        .unwrap_or_else(|| panic!("no proofs line in:\n{out}"))
        .to_string();
    let commands = line
        .replace(" (or: ", "; ")
        .trim_end_matches(')')
        .split("; ")
        .map(str::to_string)
        .collect();
    (line, commands)
}

/// Run the commands for `commit`, the proof written into `dir`; each verify-proof must
/// say the proof is valid.
fn prove_and_check(commands: &[String], commit: &str, dir: &Path, key_file: &str) {
    let proof = dir.join("proof.json").display().to_string();
    for c in commands {
        let c = c
            .replace("COMMIT_ID", commit)
            .replace("proof.json", &proof)
            .replace(
                &format!("<PUBLIC_KEY_FILE of key {}>", key_id(key_file)),
                key_file,
            );
        let out = run_printed(&c);
        if c.starts_with("lineage verify-proof") {
            assert!(
                out.starts_with(&format!("valid: commit {commit} ")),
                "{c}: {out}"
            );
            std::fs::remove_file(&proof).unwrap();
        }
    }
}

fn key_id(pub_file: &str) -> String {
    let k = lineage_store::read_public_key(Path::new(pub_file)).unwrap();
    lineage_store::key_id(&k)
}

#[tokio::test]
async fn the_proofs_show_names_prove_and_check_for_a_signed_and_an_unsigned_seal() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let id = keygen(&dir.path().join("owner")).unwrap();
    let pub_file = dir.path().join("owner.pub").display().to_string();
    let sk = read_signing_key(&dir.path().join("owner.key")).unwrap();
    let s: Arc<dyn AtomicPublisher> = open(&store, &Default::default()).await.unwrap();
    let first = append(s.clone(), 60, 20, 1).await;
    let h1 = seal(s.as_ref(), &SystemClock, None).await.unwrap().head;
    let second = append(s.clone(), 60, 20, 2).await;
    let h2 = seal(s.as_ref(), &SystemClock, Some(&sk))
        .await
        .unwrap()
        .head;

    // Unsigned: one proof form, checked against the head digest.
    let (line, commands) = proof_commands(&store, "1", &[]);
    assert_eq!(commands.len(), 2, "{line}");
    assert!(
        commands[1].ends_with(&format!("verify-proof proof.json --head {h1}")),
        "{line}"
    );
    prove_and_check(&commands, &first[0].commit_id, dir.path(), &pub_file);

    // Signed: the compact proof against the key (the file given to show, else named by
    // its id), and the proof with the seal against the head digest.
    let (line, commands) = proof_commands(&store, "2", &[]);
    assert_eq!(commands.len(), 4, "{line}");
    assert!(
        commands[1].ends_with(&format!("--public-key <PUBLIC_KEY_FILE of key {id}>")),
        "{line}"
    );
    assert!(commands[2].contains(" --embed-seal "), "{line}");
    assert!(commands[3].ends_with(&format!("--head {h2}")), "{line}");
    prove_and_check(&commands, &second[0].commit_id, dir.path(), &pub_file);
    let (line, commands) = proof_commands(
        &store,
        "2",
        &["--public-key", &pub_file, "--signed-from", "2"],
    );
    assert!(
        commands[1].ends_with(&format!("--public-key {pub_file}")),
        "{line}"
    );
    prove_and_check(&commands, &second[1].commit_id, dir.path(), &pub_file);
}

//! `lineage show COMMIT|SEAL`: one commit's pointer or one seal, in words: who, when, what,
//! where, sealed by, and the proofs to ask for (`--json`: the same as one object).

use std::path::PathBuf;

use crate::audit::show::{show, CommitShown, SealShown, Shown};
use crate::base::error::Result;
use crate::cli::anchors::AnchorArgs;
use crate::cli::common::{json_line, out, out_raw, Status, StoreArg};
use crate::history::signing::{key_id, read_public_key};
use crate::publish::store::options::Opening;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArg,
    /// A commit id, a seal's sequence number, or a seal's sha256.
    what: String,
    #[command(flatten)]
    anchors: AnchorArgs,
    /// As one JSON object (`kind`: commit or seal).
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(a: Args) -> Result<Status> {
    let store = a.store.open(Opening::ExistingStore).await?;
    let anchors = crate::cli::seal_anchors::check(&a.anchors, store.as_ref()).await?;
    anchors.require_clean()?;
    anchors.say_held();
    let witnessed: Option<std::collections::BTreeSet<u64>> = anchors.witness.as_ref().map(|_| {
        anchors
            .list
            .seals
            .iter()
            .filter(|s| s.witnessed == Some(true))
            .map(|s| s.seq)
            .collect()
    });
    let shown = show(
        store.as_ref(),
        &a.what,
        anchors.trust.as_ref(),
        witnessed.as_ref(),
    )
    .await?;
    if a.json {
        out_raw(&json_line(&shown)?)?;
        return Ok(0);
    }
    let lines = match &shown {
        Shown::Commit(c) => commit_lines(c, &a.store.store),
        Shown::Seal(s) => seal_lines(s, &a.store.store, &a.anchors.public_key),
    };
    for l in lines {
        out(&l)?;
    }
    Ok(0)
}

fn commit_lines(c: &CommitShown, store: &str) -> Vec<String> {
    let p = &c.pointer;
    let mut lines = vec![
        format!("commit {}", p.commit_id),
        format!("  who:       {}", who(p)),
        format!(
            "  when:      committed {}; events from {} to {}",
            p.committed_utc, p.min_event_time_utc, p.max_event_time_utc
        ),
        format!(
            "  what:      {} rows of run_id={} target_crs={}, sequence {}..{}, contract {}",
            p.row_count,
            p.run_id,
            p.target_crs,
            p.first_sequence,
            p.last_sequence,
            p.schema_version
        ),
        format!(
            "  where:     part {} ({} bytes, sha256 {}{}); pointer {}",
            p.part_path,
            p.size_bytes,
            p.sha256,
            p.blake3
                .as_ref()
                .map_or(String::new(), |b| format!(", blake3 {b}")),
            c.pointer_key
        ),
        format!("  sealed:    {}", sealed(c)),
        format!("  compacted: {}", compacted(c)),
    ];
    if let Some(s) = &c.sealed_by {
        lines.push(format!(
            "  proofs:    lineage prove --store {store} {} --head {}; one row: lineage prove --store {store} --event-id E --head {}",
            p.commit_id, s.sha256, s.sha256
        ));
    }
    lines
}

/// The tool that wrote a commit, its commit key, and whether `repair` wrote its pointer.
fn who(p: &crate::format::pointer::Pointer) -> String {
    let mut who = p.tool_version.clone();
    if let Some(k) = &p.commit_key {
        who.push_str(&format!(", commit key {k:?}"));
    }
    if p.adopted {
        who.push_str(", pointer written by `lineage repair` for an orphan part");
    }
    if let Some(w) = &p.writer {
        // What the writer's platform said: a record, not evidence.
        who.push_str(&format!("; writer (as recorded): {}", w.describe()));
    }
    who
}

/// Which seal sealed a commit, in words.
fn sealed(c: &CommitShown) -> String {
    match &c.sealed_by {
        Some(s) => format!(
            "by seal {} of {} (sha256 {}, {}), leaf {} of the tree",
            s.seq,
            s.sealed_utc,
            s.sha256,
            signer(s.key_id.as_deref()),
            c.leaf_index.unwrap_or_default()
        ),
        None => "not yet: no seal covers it (run `lineage seal`)".into(),
    }
}

/// The compactions of a commit in effect, in words.
fn compacted(c: &CommitShown) -> String {
    if c.compacted_into.is_empty() {
        return "no".to_string();
    }
    c.compacted_into
        .iter()
        .map(|(id, seq)| format!("into compaction {id}, in effect from seal {seq}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// "signed by key K", or "unsigned".
fn signer(key_id: Option<&str>) -> String {
    key_id.map_or("unsigned".into(), |k| format!("signed by key {k}"))
}

fn seal_lines(s: &SealShown, store: &str, keys: &[PathBuf]) -> Vec<String> {
    let x = &s.seal;
    let runs: Vec<String> = s.runs.iter().map(|(r, n)| format!("{r} ({n})")).collect();
    let witnessed = match x.witnessed {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not checked (give --witness)",
    };
    vec![
        format!("seal {}", x.seq),
        format!(
            "  who:       {} ({})",
            signer(x.key_id.as_deref()),
            x.tool_version
        ),
        format!("  when:      sealed {}", x.sealed_utc),
        format!(
            "  what:      adds {} commits ({} in all) of runs {}; puts {} compactions into effect{}",
            x.commits_added,
            x.tree_size,
            if runs.is_empty() { "-".into() } else { runs.join(", ") },
            x.compactions.len(),
            if x.compactions.is_empty() { String::new() } else { format!(": {}", x.compactions.join(", ")) }
        ),
        format!(
            "  digest:    sha256 {} (the head digest); root {}; follows {}",
            x.sha256,
            s.root,
            s.prev_sha256
                .as_ref()
                .map_or("nothing (the first seal)".into(), |p| format!("sha256 {p}"))
        ),
        format!("  witnessed: {witnessed}"),
        proofs(s, store, keys),
    ]
}

/// How to prove a commit in the seal and check the proof offline, for the form `prove`
/// writes of it: a signed seal's compact proof is checked against its key (the file given
/// to `show` that holds it, if any), a proof with the seal (`--embed-seal`, or any proof
/// of a seal without a checkpoint) against the head digest.
fn proofs(s: &SealShown, store: &str, keys: &[PathBuf]) -> String {
    let head = &s.seal.sha256;
    let prove = format!("lineage prove --store {store} COMMIT_ID --head {head}");
    let by_head = format!("lineage verify-proof proof.json --head {head}");
    match (&s.seal.key_id, s.checkpoint) {
        (Some(k), true) => format!(
            "  proofs:    {prove} --out proof.json; lineage verify-proof proof.json --public-key {} (or: {prove} --embed-seal --out proof.json; {by_head})",
            key_file(keys, k)
        ),
        _ => format!("  proofs:    {prove} --out proof.json; {by_head}"),
    }
}

/// The key file given (`--public-key`) that holds key `id`, or a placeholder naming it.
fn key_file(keys: &[PathBuf], id: &str) -> String {
    keys.iter()
        .find(|p| read_public_key(p).is_ok_and(|k| key_id(&k) == id))
        .map_or_else(
            || format!("<PUBLIC_KEY_FILE of key {id}>"),
            |p| p.display().to_string(),
        )
}

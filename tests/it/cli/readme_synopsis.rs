//! The README's synopsis, and the same synopsis in docs/cli.md, list every flag each command
//! takes, and no other: the flags of `lineage <cmd> --help` for every subcommand (and
//! `export`'s), compared with the synopsis lines of that command.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{lineage, text};

/// The long flags an `Options:` section of a help text names (`--help`/`--version` aside).
fn help_flags(args: &[&str]) -> BTreeSet<String> {
    let mut a = args.to_vec();
    a.push("--help");
    let o = lineage(&a, None);
    assert_eq!(o.status.code(), Some(0), "{a:?}: {:?}", text(&o));
    let (out, _) = text(&o);
    let mut flags = BTreeSet::new();
    for line in out.lines() {
        let t = line.trim_start();
        // An option line starts with `-x, --flag` or `--flag`.
        let t = t
            .strip_prefix('-')
            .filter(|r| r.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
            .and_then(|r| r.split_once(", "))
            .map_or(t, |(_, rest)| rest);
        if let Some(rest) = t.strip_prefix("--") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !name.is_empty() && name != "help" && name != "version" {
                flags.insert(format!("--{name}"));
            }
        }
    }
    flags
}

/// Subcommands as `lineage --help` (or `lineage export --help`) lists them.
fn subcommands(args: &[&str]) -> Vec<String> {
    let mut a = args.to_vec();
    a.push("--help");
    let (out, _) = text(&lineage(&a, None));
    let mut in_commands = false;
    let mut v = Vec::new();
    for line in out.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            let Some(name) = line
                .strip_prefix("  ")
                .and_then(|l| l.split_whitespace().next())
            else {
                break;
            };
            if name != "help" {
                v.push(name.to_string());
            }
        }
    }
    v
}

/// The files holding the synopsis, each with the heading its `sh` block follows.
const SYNOPSES: [(&str, &str); 2] = [("README.md", "## The CLI"), ("docs/cli.md", "## Synopsis")];

/// The synopsis in `file` (the first `sh` block after `heading`): command (one or two
/// words) → every `--flag` of its lines.
fn synopsis(file: &str, heading: &str) -> BTreeMap<String, BTreeSet<String>> {
    let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme.find(heading).unwrap();
    let block = &readme[start..];
    let block = &block[block.find("```sh").unwrap() + 5..];
    let block = &block[..block.find("```").unwrap()];
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in block.lines().filter(|l| l.starts_with("lineage ")) {
        let mut words = line.split_whitespace().skip(1);
        let mut cmd = words.next().unwrap().to_string();
        let mut rest = words.clone();
        if cmd == "export" || (cmd == "verify" && rest.next() == Some("merge")) {
            cmd = format!("{cmd} {}", words.next().unwrap());
        }
        let flags = out.entry(cmd).or_default();
        for w in line.split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '|') {
            if let Some(rest) = w.strip_prefix("--") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                flags.insert(format!("--{name}"));
            }
        }
    }
    out
}

#[test]
fn the_readme_synopsis_lists_every_flag_of_every_command() {
    for (file, heading) in SYNOPSES {
        check_synopsis(file, heading);
    }
}

/// The synopsis in `file` against every command's `--help`.
fn check_synopsis(file: &str, heading: &str) {
    let readme = synopsis(file, heading);
    let mut commands: Vec<Vec<String>> = Vec::new();
    for c in subcommands(&[]) {
        // `export` is only its subcommands; `verify` is a command and has `verify merge`.
        if c == "export" || c == "verify" {
            for e in subcommands(&[c.as_str()]) {
                commands.push(vec![c.clone(), e]);
            }
        }
        if c != "export" {
            commands.push(vec![c]);
        }
    }
    assert!(commands.len() >= 15, "{commands:?}");
    let mut wrong = Vec::new();
    for c in &commands {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        let name = c.join(" ");
        let want = help_flags(&args);
        let Some(have) = readme.get(&name) else {
            wrong.push(format!("{name}: no synopsis line in {file}"));
            continue;
        };
        let missing: Vec<_> = want.difference(have).collect();
        let extra: Vec<_> = have.difference(&want).collect();
        if !missing.is_empty() || !extra.is_empty() {
            wrong.push(format!(
                "{name}: {file} lacks {missing:?}, lists unknown {extra:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{file} synopsis out of step with --help:\n{}",
        wrong.join("\n")
    );
}

//! One exit-code table, in the README, the same from every command: each command that
//! reads a damaged part (one byte flipped) exits 1, as `verify` does for its problems;
//! commands that do not read parts exit 0.

use super::{flip_byte, ok, Store};

/// The README's exit-code table: (code, the commands its row names in backticks).
fn readme_table() -> Vec<(i32, Vec<String>)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("### Exit codes")
        .expect("README has ### Exit codes");
    readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let code = cells.get(1)?.trim_matches('`').parse().ok()?;
            let commands = cells
                .get(3)?
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            Some((code, commands))
        })
        .collect()
}

#[test]
fn every_command_that_reads_a_damaged_part_exits_1_as_the_readme_says() {
    let table = readme_table();
    let codes: Vec<i32> = table.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, [0, 1, 2, 3, 4, 141], "{table:?}");
    let (_, damaged_readers) = &table[1];
    assert!(damaged_readers.len() >= 6, "{damaged_readers:?}");
    let s = Store::new();
    let (_, part) = s.sealed_commit();
    let run_id = part
        .to_str()
        .unwrap()
        .split("run_id=")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    flip_byte(&part);
    let to = s.dir.path().join("replica");
    for command in damaged_readers {
        let words: Vec<&str> = command.split_whitespace().collect();
        let mut args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        match words.as_slice() {
            ["scan"] | ["report"] => args.extend(["--out".into(), "-".into()]),
            ["export", "iso19115"] => args.extend(["--run-id".into(), run_id.clone()]),
            ["compact"] => args.extend(["--min-parts".into(), "2".into()]),
            _ => {}
        }
        let o = if words == ["replicate"] {
            let to = to.to_str().unwrap();
            crate::support::lineage(&["replicate", "--from", &s.path, "--to", to], None)
        } else {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            s.run(&a)
        };
        let (out, err) = crate::support::text(&o);
        assert_eq!(o.status.code(), Some(1), "{command}: {out} {err}");
        let name = part.file_name().unwrap().to_str().unwrap();
        assert!(
            out.contains(name) || err.contains(name),
            "{command} names the part: {out} {err}"
        );
    }
    // Commands that read no part are not affected by it.
    for args in [&["log"][..], &["seal"][..]] {
        ok(&s.run(args));
    }
}

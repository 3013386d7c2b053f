//! Issue 34, item 10: malformed binary input is refused input (exit 2, naming the input
//! and what lies in it), never a panic. An Arrow IPC message whose buffer claims bytes past
//! its body made arrow panic (`check` exit 101 with a backtrace, `append` exit 4 "worker
//! panic").

use crate::support::bad_input::{contract_batch, ipc_file, ipc_stream};
use crate::support::{lineage, text};

/// `ipc` (a stream, or a file: its messages start at its first continuation marker after
/// the magic and padding) with the first record batch
/// message's first non-empty buffer claiming a million bytes more than it has.
fn lying_buffer(ipc: &[u8]) -> Vec<u8> {
    let mut at = match ipc.starts_with(b"ARROW1") {
        true => (8..ipc.len())
            .step_by(8)
            .find(|&i| ipc[i..i + 4] == [0xff; 4])
            .unwrap(),
        false => 0,
    };
    loop {
        assert_eq!(ipc[at..at + 4], [0xff; 4], "a continuation marker at {at}");
        let meta = i32::from_le_bytes(ipc[at + 4..at + 8].try_into().unwrap()) as usize;
        let m = &ipc[at + 8..at + 8 + meta];
        let msg = arrow_ipc::root_as_message(m).unwrap();
        if let Some(rb) = msg.header_as_record_batch() {
            let b = rb
                .buffers()
                .unwrap()
                .iter()
                .find(|b| b.length() > 0)
                .unwrap();
            let pattern = [b.offset().to_le_bytes(), b.length().to_le_bytes()].concat();
            let found: Vec<usize> = m
                .windows(16)
                .enumerate()
                .filter(|(_, w)| *w == pattern)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(
                found.len(),
                1,
                "the buffer's bytes are unique in the metadata"
            );
            let mut out = ipc.to_vec();
            let len_at = at + 8 + found[0] + 8;
            out[len_at..len_at + 8].copy_from_slice(&(b.length() + 1_000_000).to_le_bytes());
            return out;
        }
        at += 8 + meta + msg.bodyLength() as usize;
    }
}

#[test]
fn an_arrow_buffer_claiming_bytes_past_its_body_is_refused_input_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let b = contract_batch(3);
    let store = tmp.path().join("lake");
    for (name, ipc, what) in [
        (
            "lying.arrows",
            ipc_stream(&b),
            "corrupt Arrow IPC stream: message 2",
        ),
        (
            "lying.arrow",
            ipc_file(&b),
            "corrupt Arrow IPC file: block 1",
        ),
    ] {
        let file = tmp.path().join(name);
        std::fs::write(&file, lying_buffer(&ipc)).unwrap();
        let f = file.to_str().unwrap();
        for cmd in [
            &["check"][..],
            &["append", "--store", store.to_str().unwrap()][..],
        ] {
            let args = [cmd, &["--format", "arrow", "--input", f][..]].concat();
            let o = lineage(&args, None);
            let (out, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
            assert!(!err.contains("panic"), "{args:?}: {err}");
            let want = format!("{f}: {what}");
            assert!(
                err.lines().any(|l| l.contains(&want)
                    && l.contains("claims")
                    && l.contains("bytes at offset")
                    && l.ends_with("the input is refused")),
                "{args:?}: {err}"
            );
        }
        // The untouched input is accepted.
        std::fs::write(&file, &ipc).unwrap();
        let o = lineage(&["check", "--format", "arrow", "--input", f], None);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    }
    assert!(!store.exists() || std::fs::read_dir(&store).unwrap().next().is_none());
}

//! Tests that change process-wide state run in a process of their own.
//!
//! Every test of this binary runs in one process, beside the others. A test that changes
//! what the whole process sees, and cannot undo it (registering a contract version: the
//! registry is the process's, and a registered version stays), would change what the tests
//! beside it test, depending on which ran first. Such a test begins with
//!
//! ```ignore
//! if !own_process::here(module_path!(), "the_test_s_name") {
//!     return;
//! }
//! ```
//!
//! In the test process, [`here`] runs this binary again with only that test selected and
//! waits for it: the child's failure is the test's failure, with the child's output. In
//! the child it returns `true`, and the test's body runs there.

use std::process::Command;

/// Set in the child: the name of the one test it runs.
const VAR: &str = "LINEAGE_TEST_OWN_PROCESS";

/// Whether the body of test `test` of module `module` (its `module_path!()`) runs here:
/// `true` in the child made for it; otherwise the child is run, and `false`.
pub fn here(module: &str, test: &str) -> bool {
    // libtest names a test by its path without the crate's name.
    let name = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    };
    if std::env::var(VAR).as_deref() == Ok(name.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("this test binary: {e}"));
    let out = Command::new(exe)
        .args([name.as_str(), "--exact", "--test-threads=1"])
        .env(VAR, &name)
        .output()
        .unwrap_or_else(|e| panic!("run {name} in a process of its own: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown with the test's own output (on failure, or with --nocapture).
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, run in a process of its own, did not pass ({})",
        out.status
    );
    false
}

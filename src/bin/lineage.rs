//! The `lineage` binary: all of it lives in the library (`lineage_store::cli`).

fn main() -> std::process::ExitCode {
    lineage_store::cli::main()
}

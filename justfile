# Recipes mirror CI; `just test` is exactly what .ci/run runs.

# the main job on the local-disk default
demo:
    cargo run --release -- demo

# everything CI runs (installs the venv, starts and stops the emulators)
test:
    scripts/test.sh

# fast inner loop: Rust tests only, emulator tests switched off (they say so)
unit:
    LINEAGE_NO_LOCALSTACK=1 LINEAGE_NO_MOTO=1 LINEAGE_NO_AZURITE=1 cargo test

lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

# write-path benchmark on the shared bench's 1 M events (see README, Performance)
bench events="":
    cargo bench --bench write -- {{ if events != "" { "--events " + events } else { "" } }}

# fuzz each cargo-fuzz target for SECS seconds (not in CI; needs `cargo install cargo-fuzz`)
fuzz secs="60" *targets="":
    scripts/fuzz.sh {{secs}} {{targets}}

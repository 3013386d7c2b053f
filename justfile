# Recipes mirror CI; `just test` is exactly what .ci/run runs.

# the main job on the local-disk default
demo:
    cargo run --release -- demo

# everything CI runs (installs the venv, starts and stops the emulators)
test:
    scripts/test.sh

# portable x86_64 artefacts into dist/: the glibc-2.17 `lineage` binary, the abi3
# manylinux2014 wheel, the Lambda zip (docs/deploy.md, "Building")
dist profile="release":
    scripts/dist.sh --profile {{profile}} --out dist

# sizing of the Lambda writer (docs/deploy.md, "Sizing for Lambda"): the release wheel
# of `dist` and boto3 in a venv outside the repository, LocalStack started and stopped here
lambda-size events="10000,100000,1000000":
    #!/usr/bin/env bash
    set -euo pipefail
    scripts/dist.sh --out dist
    v=../lambda-size-venv
    [ -x "$v/bin/python" ] || python3 -m venv "$v"
    "$v/bin/pip" install -q --force-reinstall --no-deps dist/lineage_store-*.whl
    "$v/bin/pip" install -q boto3==1.44.8
    localstack/start.sh && . .emulators/env; trap localstack/stop.sh EXIT
    "$v/bin/python" examples/lambda/size.py --python "$v/bin/python" --endpoint "$LINEAGE_LOCALSTACK_ENDPOINT" --events {{events}}

# the same without LocalStack (the table in docs/deploy.md): a local-disk store, the
# S3 objects local files served by a stand-in for get_object; peak RSS from /usr/bin/time -v
lambda-size-local events="10000,100000,1000000":
    #!/usr/bin/env bash
    set -euo pipefail
    scripts/dist.sh --out dist
    v=../lambda-size-venv
    [ -x "$v/bin/python" ] || python3 -m venv "$v"
    "$v/bin/pip" install -q --force-reinstall --no-deps dist/lineage_store-*.whl
    "$v/bin/pip" install -q boto3==1.44.8
    d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
    "$v/bin/python" examples/lambda/size.py --python "$v/bin/python" --local "$d" --events {{events}}

# fast inner loop: Rust tests only, emulator tests switched off (they say so)
unit:
    LINEAGE_NO_LOCALSTACK=1 LINEAGE_NO_MOTO=1 LINEAGE_NO_AZURITE=1 LINEAGE_NO_SEAWEEDFS=1 cargo test

lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

# Benchmarks. Inputs come from the shared bench's generator (same seed as its README),
# made once into LINEAGE_BENCH_DATA; BENCH_VENV holds its requirements (outside the repo).
bench_data := env_var_or_default("LINEAGE_BENCH_DATA", "../benchdata")
shared_bench := env_var_or_default("LINEAGE_SHARED_BENCH", "../shared/bench")
bench_venv := env_var_or_default("BENCH_VENV", "../benchvenv")

bench-inputs:
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p "{{bench_data}}"
    [ -x "{{bench_venv}}/bin/python" ] || { python3 -m venv "{{bench_venv}}" && "{{bench_venv}}/bin/pip" install -q -r "{{shared_bench}}/requirements.txt"; }
    gen() { [ -s "{{bench_data}}/$1" ] || "{{bench_venv}}/bin/python" "{{shared_bench}}/gen_events.py" --rows "$2" --seed 42 --out "{{bench_data}}/$1" ${3:+--format "$3"}; }
    gen ev-1m.arrow 1000000; gen ev-10k.arrow 10000; gen ev-1m.ndjson 1000000 ndjson; gen ev-5m.ndjson 5000000 ndjson

# docs/performance.md, Append, Commit latency, Memory, Verify: write throughput beside the shared bench's engines,
# verify GB/s, peak RSS of streaming appends, LocalStack commits/s (started and stopped here)
bench sections="write,verify,rss,s3": bench-inputs
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --release --bin lineage
    d=$(realpath "{{bench_data}}")
    if [[ "{{sections}}" == *s3* ]]; then localstack/start.sh && . .emulators/env; trap localstack/stop.sh EXIT; fi
    cargo bench --bench write -- --sections "{{sections}}" \
      --events "$d/ev-1m.arrow" --events-small "$d/ev-10k.arrow" \
      --ndjson "$d/ev-1m.ndjson" --rss-ndjson "$d/ev-5m.ndjson" \
      --lineage-bin "$PWD/target/release/lineage" \
      --python "$(realpath "{{bench_venv}}")/bin/python" --shared-bench "$(realpath "{{shared_bench}}")" \
      ${LINEAGE_BASELINE_BIN:+--baseline-bin "$LINEAGE_BASELINE_BIN"}

# the Python package appending 1 M events from a pyarrow Table, beside the CLI on the same
# input, the design note's writer and pyarrow write_dataset (docs/python.md, Performance)
bench-python:
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p "{{bench_data}}"
    [ -x "{{bench_venv}}/bin/python" ] || { python3 -m venv "{{bench_venv}}" && "{{bench_venv}}/bin/pip" install -q -r "{{shared_bench}}/requirements.txt"; }
    [ -s "{{bench_data}}/ev-1m.arrow" ] || "{{bench_venv}}/bin/python" "{{shared_bench}}/gen_events.py" --rows 1000000 --seed 42 --out "{{bench_data}}/ev-1m.arrow"
    cargo build --release --locked --bin lineage
    wheels=$(mktemp -d); trap 'rm -rf "$wheels"' EXIT
    "{{bench_venv}}/bin/pip" install -q maturin==1.16.0
    "{{bench_venv}}/bin/maturin" build --release --locked -q -m python/Cargo.toml --out "$wheels"
    "{{bench_venv}}/bin/pip" install -q --force-reinstall --no-deps "$wheels"/*.whl
    "{{bench_venv}}/bin/python" python/bench/bench_append.py --events "$(realpath "{{bench_data}}")/ev-1m.arrow" \
      --shared-bench "$(realpath "{{shared_bench}}")" --lineage-bin "$PWD/target/release/lineage"

# the release wheel's size (docs/python.md, "Size"): the wheel and its extension module
# unzipped (what counts against Lambda's 250 MB with pyarrow), stripped (pyproject.toml)
python-size:
    #!/usr/bin/env bash
    set -euo pipefail
    scripts/python-env.sh
    wheels=$(mktemp -d); trap 'rm -rf "$wheels"' EXIT
    .venv/bin/maturin build --release --locked -q -m python/Cargo.toml --out "$wheels"
    ls -l "$wheels"/*.whl
    unzip -l "$wheels"/*.whl | grep '_native'
    unzip -q -d "$wheels/x" "$wheels"/*.whl && file "$wheels"/x/lineage_store/_native*.so

# peak RSS of `Store.append(reader)` on a ROWS-row stream made as it is read (docs/python.md,
# Performance): the release wheel in a venv outside the repository, one fresh process
python-rss rows="3000000":
    #!/usr/bin/env bash
    set -euo pipefail
    v=$(realpath -m "{{bench_venv}}-rss")
    [ -x "$v/bin/python" ] || python3 -m venv "$v"
    "$v/bin/pip" install -q pyarrow==26.0.1 pytest==9.2.0 maturin==1.16.0
    wheels=$(mktemp -d); trap 'rm -rf "$wheels"' EXIT
    "$v/bin/maturin" build --release --locked -q -m python/Cargo.toml --out "$wheels"
    "$v/bin/pip" install -q --force-reinstall --no-deps "$wheels"/*.whl
    "$v/bin/python" python/bench/bench_stream_rss.py --rows {{rows}}

# the history at scale on local disk, through the CLI (docs/performance.md, History at scale;
# benches/history_disk.rs): log/verify --since-seal, seal and prove of 100 new commits as
# processes, with strace counts; stores of up to 20,000 commits are built with the CLI,
# larger ones through the library (10^5: ~4.5 min to generate here; 10^6: ~4 M files, ~15 GB)
bench-history-disk sizes="1000,20000,100000":
    cargo build --release --locked --bin lineage
    cargo bench --bench history_disk -- --sizes {{sizes}} --lineage-bin target/release/lineage

# the tables of docs/performance.md from these benches in one run: the write path (above) and the history
# at scale (benches/history.rs in memory, benches/history_disk.rs on local disk)
bench-all: bench bench-history-disk
    cargo bench --bench history

# fuzz each cargo-fuzz target for SECS seconds (not in CI; needs `cargo install cargo-fuzz`)
fuzz secs="60" *targets="":
    scripts/fuzz.sh {{secs}} {{targets}}

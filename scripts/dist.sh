#!/usr/bin/env bash
# Portable Linux artefacts for x86_64, from this machine (docs/deploy.md, "Building"):
#
#   DIST/lineage-x86_64-unknown-linux-gnu      the CLI, glibc 2.17 as its floor
#                                              (cargo-zigbuild, target x86_64-unknown-linux-gnu.2.17)
#   DIST/lineage_store-*-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
#                                              the Python package, one abi3 wheel for CPython >= 3.9
#                                              (maturin --zig --compatibility manylinux2014)
#   DIST/lambda-writer.zip                     examples/lambda/handler.py + that wheel unpacked:
#                                              the Lambda zip package (terraform/modules/lambda-writer)
#   DIST/SHA256SUMS
#
# Usage: scripts/dist.sh [--profile release|dev] [--out DIR]   (default: release, dist/)
# `just dist` runs it. The test command builds with --profile dev into target/dist-dev
# and checks the artefacts (tests/dist); the toolchain is the same, the optimiser is not.
# zig and cargo-zigbuild come pinned from PyPI (scripts/dist-requirements.txt) into
# .venv-dist; the Rust target is the host's own (x86_64-unknown-linux-gnu), so nothing
# but the toolchain already here is needed.
#
# Both builds share one target directory, target/zig, and reuse each other's dependencies:
# for the same target they resolve the same features for every crate they share (all
# but clap and tracing-subscriber for the binary, pyo3 and arrow-pyarrow for the wheel),
# and both run zig through the same wrapper scripts. maturin 1.16.0 embeds the
# cargo-zigbuild 0.24.0 pinned here, which writes its wrappers (the CC_/CXX_/AR_ and
# linker settings of every C build script: zstd, aws-lc, ring, blake3) into a directory
# named after the executable that runs it; CARGO_BIN_EXE_cargo-zigbuild names the same
# executable for both, so the wrapper paths match. Without it every C build script reruns
# for the other tool and most of the tree is rebuilt each time. Keep the two pins in step
# (another cargo-zigbuild version writes elsewhere). tests/dist runs after this script.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
out=dist
while [ $# -gt 0 ]; do
  case $1 in
    --profile) profile=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: scripts/dist.sh [--profile release|dev] [--out DIR]" >&2; exit 2 ;;
  esac
done
case $profile in
  release) dir=release ;;
  dev) dir=debug ;;
  *) echo "scripts/dist.sh: --profile release or dev, not $profile" >&2; exit 2 ;;
esac

scripts/python-env.sh .venv-dist scripts/dist-requirements.txt
venv=$PWD/.venv-dist
# cargo-zigbuild and maturin find zig through `python3 -m ziglang` (the venv's python).
export PATH="$venv/bin:$PATH"
# One set of zig wrappers for both tools (above); `env` because of the dash in the name.
zig_env=("CARGO_BIN_EXE_cargo-zigbuild=$venv/bin/cargo-zigbuild")
target=x86_64-unknown-linux-gnu
glibc=2.17
tdir=target/zig
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$SECONDS

# The CLI. The target's glibc suffix makes zig link against glibc 2.17's symbol versions:
# a symbol newer than that fails the link instead of raising the floor.
env "${zig_env[@]}" cargo zigbuild --locked --profile "$profile" --target "$target.$glibc" --bin lineage \
  --target-dir "$tdir"
cp "$tdir/$target/$dir/lineage" "$out/lineage-$target"
echo "dist: lineage-$target ($(( $(stat -c %s "$out/lineage-$target") / 1024 )) KiB) after $((SECONDS - started)) s" >&2

# The wheel (abi3: no interpreter is linked; the Python package builds without `cli`).
rm -f "$out"/lineage_store-*.whl
env "${zig_env[@]}" maturin build --locked --zig --compatibility manylinux2014 --target "$target" \
  --profile "$profile" -m python/Cargo.toml --target-dir "$tdir" --out "$out"
wheel=$(ls "$out"/lineage_store-*.whl)
auditwheel show "$wheel"
echo "dist: $(basename "$wheel") ($(( $(stat -c %s "$wheel") / 1024 )) KiB) after $((SECONDS - started)) s" >&2

# The Lambda zip: the handler at the root, the package beside it (a wheel is a zip of what
# an install puts into site-packages). Entries sorted and dated 1980: the same inputs give
# the same zip, so terraform's source_code_hash changes only with the code.
"$venv/bin/python" - "$wheel" examples/lambda/handler.py "$out/lambda-writer.zip" <<'PY'
import sys, zipfile
wheel, handler, dest = sys.argv[1:]
entries = {}
with zipfile.ZipFile(wheel) as w:
    for info in w.infolist():
        if not info.is_dir():
            entries[info.filename] = (w.read(info), info.external_attr)
with open(handler, "rb") as f:
    entries["handler.py"] = (f.read(), 0o644 << 16)
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(entries):
        data, attr = entries[name]
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = attr or (0o644 << 16)
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data)
PY
(cd "$out" && sha256sum "lineage-$target" "$(basename "$wheel")" lambda-writer.zip > SHA256SUMS)
echo "dist: $out ($profile) in $((SECONDS - started)) s:" >&2
ls -l "$out" >&2

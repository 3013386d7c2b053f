#!/usr/bin/env bash
# Run every cargo-fuzz target (fuzz/) for a bounded time each, then print per target how
# long it ran, how many inputs it tried, its corpus size and what it found. Not part of
# CI (`scripts/test.sh`); run by hand or from `just fuzz`.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a C++ compiler (libFuzzer is built
# from source). On a stable toolchain RUSTC_BOOTSTRAP=1 lets cargo-fuzz's nightly flags
# through. FUZZ_SANITIZER=address adds AddressSanitizer (default none: the crate forbids
# unsafe code, and panics, failed assertions and overflows are caught without it).
# Findings land in fuzz/artifacts/<target>/; turn each into a regression test in
# tests/it/fuzz/regressions.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
export RUSTC_BOOTSTRAP=1
san=${FUZZ_SANITIZER:-none}
command -v cargo-fuzz > /dev/null || { echo "fuzz.sh: cargo-fuzz is not installed: cargo install cargo-fuzz" >&2; exit 2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
cargo fuzz build -s "$san" "${targets[@]/#/--bin=}" 2>/dev/null || cargo fuzz build -s "$san"
mkdir -p fuzz/logs
summary=()
status=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t"
  start=$(date +%s)
  set +e
  dict=()
  [ -f "fuzz/dicts/$t.dict" ] && dict=("-dict=fuzz/dicts/$t.dict")
  cargo fuzz run -s "$san" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$secs" -max_len=8192 -timeout=10 -print_final_stats=1 "${dict[@]}" \
    > "fuzz/logs/$t.log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "fuzz/logs/$t.log" | grep -o '[0-9]*$' || echo "?")
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  found=$(find "fuzz/artifacts/$t" -type f 2>/dev/null | wc -l)
  if [ "$rc" -ne 0 ]; then status=1; fi
  summary+=("$(printf '%-18s %5ss %10s execs %6s corpus %3s findings (exit %s)' "$t" "$took" "$runs" "$corpus" "$found" "$rc")")
done
printf '%s\n' "${summary[@]}"
[ "$status" -eq 0 ] || echo "fuzz.sh: a target stopped on a finding; see fuzz/logs/ and fuzz/artifacts/" >&2
exit "$status"

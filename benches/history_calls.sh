#!/usr/bin/env bash
# System calls and time of the routine commands on local-disk stores, each a whole
# `lineage` process: `log --since-seal`, `verify --since-seal`, `seal`, `prove` (of the
# store's first commit against the newest seal), `witness`, and `files` / `scan` of the
# newest round's run (the witness one that recorded the store before). Calls come from `strace -f -c` (load-independent: the primary
# figure); time is one run's wall clock (moves with the machine's load).
#
#   benches/history_calls.sh LINEAGE_BIN NEW_ROWS.parquet LOOKBACK STORE...
#
# Each STORE must be sealed at least twice (a first seal puts the whole store in `ahead`;
# the routine case is a seal after a seal). Per store: append NEW_ROWS (`--batch-rows
# 10`, not measured), then each read-only command once timed and once under strace, then
# `seal --lookback LOOKBACK` under strace, another append and `seal` timed. Prints one
# Markdown row per store and command: commits in the store, command, wall ms, calls,
# stat family (statx + newfstatat + fstat), getdents64, openat, read.
set -euo pipefail
bin=$1; new=$2; lookback=$3; shift 3
run_id=$("$(dirname "$0")/../.venv/bin/python" -c "import pyarrow.parquet as pq,sys; print(pq.read_table(sys.argv[1], columns=['run_id'])['run_id'][0])" "$new")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ms() { local s e; s=$(date +%s%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
calls() { # file -> "total | stat | getdents64 | openat | read"
  awk '$NF=="total"{t=$4} /statx|newfstatat|fstat$/{s+=$4} $NF=="getdents64"{g=$4} $NF=="openat"{o=$4} $NF=="read"{r=$4}
       END{printf "%d | %d | %d | %d | %d", t, s, g, o, r}' "$1"
}
row() { # store commits op ms strace-file
  printf '| %s | %s | %s | %s |\n' "$2" "$3" "$4" "$(calls "$5")"
}
for store in "$@"; do
  commits=$(python3 -c "
import glob, json, sys
seals = sorted(glob.glob(sys.argv[1] + '/_lineage/seals/*.json'))
print(json.load(open(seals[-1]))['tree_size'])" "$store")
  first=$(python3 -c "
import glob, json, sys
s = json.load(open(sorted(glob.glob(sys.argv[1] + '/_lineage/seals/*.json'))[0]))
print(s['entries'][0]['key'].rsplit('/', 1)[-1].removesuffix('.json'))" "$store")
  # The witness has seen the store before (a routine record is of the seals since).
  "$bin" witness --store "$store" --witness "$work/witness-t" > /dev/null 2>&1
  "$bin" witness --store "$store" --witness "$work/witness-s" > /dev/null 2>&1
  "$bin" append --store "$store" --input "$new" --batch-rows 10 > /dev/null 2>&1
  for op in "log --since-seal" "verify --since-seal" "prove $first"; do
    # shellcheck disable=SC2086
    t=$(ms "$bin" $op --store "$store")
    # shellcheck disable=SC2086
    strace -f -c -o "$work/st" "$bin" $op --store "$store" > /dev/null 2>&1 || true
    row "$store" "$commits" "$op" "$t" "$work/st"
  done
  strace -f -c -o "$work/st" "$bin" seal --store "$store" --lookback "$lookback" > /dev/null 2>&1
  "$bin" append --store "$store" --input "$new" --batch-rows 10 > /dev/null 2>&1
  t=$(ms "$bin" seal --store "$store" --lookback "$lookback")
  row "$store" "$commits" "seal" "$t" "$work/st"
  t=$(ms "$bin" witness --store "$store" --witness "$work/witness-t")
  strace -f -c -o "$work/st" "$bin" witness --store "$store" --witness "$work/witness-s" > /dev/null 2>&1 || true
  row "$store" "$commits" "witness" "$t" "$work/st"
  for op in "files --run-id $run_id" "scan --run-id $run_id --out -"; do
    # shellcheck disable=SC2086
    t=$(ms "$bin" $op --store "$store")
    # shellcheck disable=SC2086
    strace -f -c -o "$work/st" "$bin" $op --store "$store" > /dev/null 2>&1 || true
    row "$store" "$commits" "${op%% --out*}" "$t" "$work/st"
  done
done

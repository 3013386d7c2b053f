#!/usr/bin/env bash
# The Delta version's cost per seal, through the CLI (release build):
# K seals of C commits each; then C more commits; copy the store, delete the copy's
# _delta_log/; `lineage seal` on the original writes 1 version, on the copy K+2 versions.
set -euo pipefail
cd "$(dirname "$0")/.."
L=${L:-target/release/lineage}
K=${K:-20}; C=${C:-100}; W=${W:-$(mktemp -d)}
rm -rf "$W"; mkdir -p "$W"
for k in $(seq 1 "$K"); do
  $L demo --store "$W/x" --events $((C * 50)) --runs 1 --seed "$k" --batch-rows 50 --no-seal >/dev/null
  $L seal --store "$W/x" >/dev/null
done
$L demo --store "$W/x" --events $((C * 50)) --runs 1 --seed 999 --batch-rows 50 --no-seal >/dev/null
cp -a "$W/x" "$W/y"; rm -rf "$W/y/_delta_log"
sync
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
tx=$(t $L seal --store "$W/x"); ty=$(t $L seal --store "$W/y")
cmp <(cd "$W/x/_delta_log" && sha256sum * | head -n $((K+1))) <(cd "$W/y/_delta_log" && sha256sum * | head -n $((K+1))) && echo "versions 0..K identical"
echo "K=$K C=$C seal_with_1_version=${tx}s seal_writing_$((K+2))_versions=${ty}s per_version=$(echo "($ty - $tx) / $K" | bc -l)s"
du -sb "$W/x/_delta_log" | cut -f1 | xargs -I{} echo "log bytes {} for $((K+1)) seals"

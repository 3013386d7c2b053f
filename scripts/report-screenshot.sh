#!/usr/bin/env bash
# The screenshot of an audit report in docs/cli.md (docs/report-screenshot.png): a demo store
# sealed twice with a signing key and witnessed after each seal, its report, and the top
# of the page in headless Chromium. Usage: scripts/report-screenshot.sh [OUT.png]
# (LINEAGE: the binary, default target/release/lineage, else target/debug/lineage).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/report-screenshot.png}
lineage=${LINEAGE:-target/release/lineage}
[ -x "$lineage" ] || lineage=target/debug/lineage
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$lineage" demo --store "$work/demo" --events 200000 --runs 3 --seed 7 --no-seal >/dev/null
"$lineage" keygen --out "$work/seal" >/dev/null
"$lineage" seal --store "$work/demo" --signing-key "$work/seal.key" >/dev/null
"$lineage" witness --store "$work/demo" --witness "$work/witness" >/dev/null
# A second day's runs: another demo store's events appended, sealed and witnessed again.
"$lineage" demo --store "$work/more" --events 100000 --runs 2 --seed 8 --no-seal >/dev/null
"$lineage" scan --store "$work/more" --include-unsealed --out "$work/more.parquet" 2>/dev/null
"$lineage" append --store "$work/demo" --input "$work/more.parquet" >/dev/null
head=$("$lineage" seal --store "$work/demo" --signing-key "$work/seal.key" | awk '$1 == "head" {print $2}')
"$lineage" witness --store "$work/demo" --witness "$work/witness" >/dev/null
"$lineage" report --store "$work/demo" --public-key "$work/seal.pub" --expect-head "$head" \
  --witness "$work/witness" --out "$work/demo.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1900 \
  --screenshot="$out" "file://$work/demo.html" 2>/dev/null
echo "wrote $out"

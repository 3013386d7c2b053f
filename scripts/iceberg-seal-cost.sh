#!/usr/bin/env bash
# The Iceberg snapshot's cost per seal, through the CLI: N seals of one small commit each
# (10 events), every one with `--iceberg`, except at each point P in POINTS: there seal P is
# made without it, then `seal` (nothing new: the baseline) and `seal --iceberg` (nothing
# new: writes only seal P's Iceberg objects) are timed, and seal P's objects counted.
set -euo pipefail
cd "$(dirname "$0")/.."
L=${L:-target/release/lineage}
POINTS=${POINTS:-"10 100 1000"}; W=${W:-$(mktemp -d)}
N=$(echo $POINTS | tr ' ' '\n' | sort -n | tail -1)
rm -rf "$W"; mkdir -p "$W/in"
python3 - "$W/in" "$N" <<'PY'
import json, sys
for k in range(1, int(sys.argv[2]) + 1):
    with open(f"{sys.argv[1]}/{k}.ndjson", "w") as f:
        for i in range(10):
            n = k * 10 + i
            f.write(json.dumps({"event_id": f"00000000-0000-4000-8000-{n:012d}", "run_id": "cost",
                "sequence": n, "event_time_utc": "2026-07-13T06:00:00Z", "stage": "reproject",
                "event_type": "crs_transform", "feature_id": f"f:{n}", "source_crs": "EPSG:31467",
                "target_crs": "EPSG:4326", "outcome": "transformed", "strategy_index": 0,
                "accuracy_m": 0.5, "rejection_reason": None, "tool_version": "t/1",
                "audit_tag": None}) + "\n")
PY
S="$W/s"; M="$S/_iceberg/metadata"
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
echo "seal objects bytes(metadata,list,manifest) iceberg_total_bytes seal_nothing_new_s seal_iceberg_nothing_new_s"
for k in $(seq 1 "$N"); do
  $L append --store "$S" --input "$W/in/$k.ndjson" >/dev/null
  if echo " $POINTS " | grep -q " $k "; then
    $L seal --store "$S" >/dev/null
    tb=$(t $L seal --store "$S"); ti=$(t $L seal --store "$S" --iceberg)
    m=$(stat -c %s "$M/v$k.metadata.json"); l=$(stat -c %s "$M/snap-$k.avro"); f=$(stat -c %s "$M/manifest-$k.avro")
    echo "$k 3 $((m + l + f))($m,$l,$f) $(du -sb "$S/_iceberg" | cut -f1) $tb $ti"
  else
    $L seal --store "$S" --iceberg >/dev/null
  fi
done

#!/usr/bin/env bash
# Start the storage emulators the tests need, on 127.0.0.1 only, wait until each answers,
# create the buckets and containers, and write their endpoints to .emulators/env (which
# scripts/test.sh sources). PIDs go to .emulators/run/*.pid for localstack/stop.sh.
#
# Switch one off with LINEAGE_NO_LOCALSTACK=1, LINEAGE_NO_MOTO=1, LINEAGE_NO_AZURITE=1 or
# LINEAGE_NO_SEAWEEDFS=1:
# its tests then skip, saying why. Without a switch, a test whose emulator is missing fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
run=$root/.emulators/run
mkdir -p "$run"
: > .emulators/env

# Emulators a crashed earlier run left behind are stopped first, by their recorded PIDs.
localstack/stop.sh
localstack/install.sh
# A half-started set is stopped again: nothing is left running when this script fails.
trap 'localstack/stop.sh' ERR
py=$root/.emulators/moto/bin/python

free_port() {
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until a URL answers HTTP at all (any status): the emulator is serving.
wait_http() { # name, url, pidfile, log
  if ! "$py" - "$2" "$(cat "$3")" <<'PY'
import sys, time, urllib.request, urllib.error, os
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 180
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(f"process {pid} exited before answering")
    try:
        urllib.request.urlopen(url, timeout=2)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.2)
sys.exit(f"{url} did not answer within 180 s")
PY
  then
    echo "start.sh: $1 did not come up; last lines of $4:" >&2
    tail -n 30 "$4" >&2 || true
    exit 1
  fi
}

# Start a command in its own session (so stop.sh can end it and its children by PID).
launch() { # name, log, command...
  local name=$1 log=$2; shift 2
  setsid "$@" > "$log" 2>&1 < /dev/null &
  echo $! > "$run/$name.pid"
}

{
  echo "export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1"
  # Never ask a cloud metadata server in tests.
  echo "export AWS_EC2_METADATA_DISABLED=true"
  echo "export LINEAGE_S3_BUCKET=lineage-test LINEAGE_S3_LOCK_BUCKET=lineage-lock"
  echo "export LINEAGE_AZURE_CONTAINER=lineage-test"
} >> .emulators/env
started=()

if [ "${LINEAGE_NO_LOCALSTACK:-}" != 1 ]; then
  port=$(free_port)
  mkdir -p "$run/localstack-fs"
  # hypercorn: bind only 127.0.0.1 (the default server binds every address);
  # DNS_ADDRESS=0: no DNS server; OVERRIDE_IN_DOCKER=0: no writes under /var/lib.
  # kms,iam,sts: terraform/examples/localstack (they load on first use: no slower start).
  launch localstack "$run/localstack.log" env \
    GATEWAY_SERVER=hypercorn GATEWAY_LISTEN="127.0.0.1:$port" LOCALSTACK_HOST="127.0.0.1:$port" \
    SERVICES=s3,kms,iam,sts EAGER_SERVICE_LOADING=1 DNS_ADDRESS=0 DISABLE_EVENTS=1 OVERRIDE_IN_DOCKER=0 \
    SKIP_SSL_CERT_DOWNLOAD=1 FILESYSTEM_ROOT="$run/localstack-fs" \
    "$root/.emulators/localstack/bin/python" -m localstack.runtime.main
  wait_http LocalStack "http://127.0.0.1:$port/_localstack/health" "$run/localstack.pid" "$run/localstack.log"
  echo "export LINEAGE_LOCALSTACK_ENDPOINT=http://127.0.0.1:$port" >> .emulators/env
  started+=("LocalStack 4.0.3 on 127.0.0.1:$port")
fi

if [ "${LINEAGE_NO_MOTO:-}" != 1 ]; then
  port=$(free_port)
  launch moto "$run/moto.log" "$root/.emulators/moto/bin/moto_server" -H 127.0.0.1 -p "$port"
  wait_http moto "http://127.0.0.1:$port/" "$run/moto.pid" "$run/moto.log"
  echo "export LINEAGE_MOTO_ENDPOINT=http://127.0.0.1:$port" >> .emulators/env
  started+=("moto 5.2.5 on 127.0.0.1:$port")
fi

if [ "${LINEAGE_NO_AZURITE:-}" != 1 ]; then
  port=$(free_port)
  launch azurite "$run/azurite.log" "$root/.emulators/azurite/node_modules/.bin/azurite-blob" \
    --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --disableTelemetry \
    --loose --skipApiVersionCheck
  wait_http Azurite "http://127.0.0.1:$port/devstoreaccount1?comp=list" "$run/azurite.pid" "$run/azurite.log"
  {
    echo "export LINEAGE_AZURITE_BLOB_URL=http://127.0.0.1:$port"
    # object_store's emulator settings: az:// URLs go to Azurite with its well-known key.
    echo "export AZURE_STORAGE_USE_EMULATOR=true AZURITE_BLOB_STORAGE_URL=http://127.0.0.1:$port"
  } >> .emulators/env
  started+=("Azurite 3.37.0 on 127.0.0.1:$port")
fi

if [ "${LINEAGE_NO_SEAWEEDFS:-}" != 1 ]; then
  # SeaweedFS 4.48 (`weed server`: master, volume server, filer and S3 gateway in one
  # process), a real distributed object store. Every listener on 127.0.0.1 and a free port;
  # telemetry off (it posts cluster statistics to the internet by default); the Iceberg and
  # Lance catalog ports and the metrics port off; a fresh data directory per run (a restart
  # on old data waits ~18 s for its volumes); S3 identities from a config file (the same
  # test credentials as the emulators).
  sw=$run/seaweedfs
  rm -rf "$sw"
  mkdir -p "$sw/data"
  cat > "$sw/s3.json" <<'JSON'
{"identities": [{"name": "test",
  "credentials": [{"accessKey": "test", "secretKey": "test"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
  p_master=$(free_port); p_master_grpc=$(free_port); p_volume=$(free_port)
  p_volume_grpc=$(free_port); p_filer=$(free_port); p_filer_grpc=$(free_port)
  port=$(free_port); p_s3_grpc=$(free_port)
  launch seaweedfs "$run/seaweedfs.log" "$root/.emulators/seaweedfs/bin/weed" server \
    -dir="$sw/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false -metricsPort=0 \
    -master.port="$p_master" -master.port.grpc="$p_master_grpc" \
    -master.volumeSizeLimitMB=256 -volume.max=64 \
    -volume.port="$p_volume" -volume.port.grpc="$p_volume_grpc" \
    -filer -filer.port="$p_filer" -filer.port.grpc="$p_filer_grpc" \
    -s3 -s3.port="$port" -s3.port.grpc="$p_s3_grpc" -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.config="$sw/s3.json"
  wait_http SeaweedFS "http://127.0.0.1:$port/" "$run/seaweedfs.pid" "$run/seaweedfs.log"
  echo "export LINEAGE_SEAWEEDFS_ENDPOINT=http://127.0.0.1:$port" >> .emulators/env
  started+=("SeaweedFS 4.48 on 127.0.0.1:$port")
fi

# Buckets (one with Object Lock) and the container.
# shellcheck disable=SC1091
. .emulators/env
"$py" localstack/setup_stores.py
for s in "${started[@]}"; do echo "started $s" >&2; done

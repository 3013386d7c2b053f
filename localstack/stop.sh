#!/usr/bin/env bash
# Stop every emulator localstack/start.sh started, by the PIDs it recorded (each was
# started in its own session, so its process group is ended with it). SIGTERM first;
# LocalStack may ignore it, so SIGKILL after a grace period. SeaweedFS's graceful stop
# takes 17-27 s (it drains its volume servers); its data directory is thrown away at the
# next start, so it gets 2 s before SIGKILL.
set -uo pipefail
cd "$(dirname "$0")/.."
run=.emulators/run
shopt -s nullglob
for f in "$run"/*.pid; do
  pid=$(cat "$f")
  name=$(basename "$f" .pid)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    tries=50
    [ "$name" = seaweedfs ] && tries=10
    for _ in $(seq "$tries"); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "stop.sh: $name ($pid) ignored SIGTERM; sending SIGKILL" >&2
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$f"
done
exit 0

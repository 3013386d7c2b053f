#!/usr/bin/env bash
# Create (or reuse) the project venv .venv with the pinned interop readers.
# Reused when tests/python/requirements.txt has not changed since it was made.
set -euo pipefail
cd "$(dirname "$0")/.."
req=tests/python/requirements.txt
stamp=.venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$stamp"

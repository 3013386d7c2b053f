#!/usr/bin/env bash
# Create (or reuse) a venv with pinned packages: by default .venv with the interop readers
# (tests/python/requirements.txt); `scripts/python-env.sh DIR REQUIREMENTS` for another
# (scripts/test.sh: .venv-checkov, whose heavy pins must not meet the interop readers').
# Reused when the requirements file has not changed since the venv was made.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
req=${2:-tests/python/requirements.txt}
stamp=$venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
# --clear: a venv left half-made (a run stopped while it was being created, so no pip) or
# made for other requirements is made anew rather than patched.
python3 -m venv --clear "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$stamp"

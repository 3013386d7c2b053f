#!/usr/bin/env bash
# Start the storage emulators the tests need and write their endpoints to .emulators/env.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .emulators
: > .emulators/env

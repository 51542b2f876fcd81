#!/usr/bin/env bash
# Installs axe-core, the accessibility engine the UI's browser tests run inside Chromium, from the
# npm registry with npm, at a pinned version, into a cache folder shared by every clone on this
# machine (once). Node and npm come from Debian's packages when missing and we are root (as CI
# is); anyone else is told the one command to run. Prints the path of axe.min.js.
set -o errexit -o nounset -o pipefail

AXE_VERSION=4.14.1
DIR="${SLUICE_TESTBIN_AXE:-${XDG_CACHE_HOME:-${HOME}/.cache}/sluice/testbin/axe-core-${AXE_VERSION}}"
mkdir -p "${DIR}"

# A lock, because parallel test packages may all find the folder empty at once.
exec 9>"${DIR}/.lock"
flock 9

FILE="${DIR}/node_modules/axe-core/axe.min.js"
if [ ! -s "${FILE}" ]; then
  if ! command -v npm >/dev/null; then
    if [ "$(id -u)" != 0 ]; then
      echo "the UI's accessibility test needs npm: run \`sudo apt-get install -y npm\` once" >&2
      exit 1
    fi
    echo "installing Debian's npm for the UI's accessibility test" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm >&2
  fi
  echo "installing axe-core ${AXE_VERSION} (cached in ${DIR})" >&2
  npm install --prefix "${DIR}" --no-save --no-audit --no-fund --ignore-scripts "axe-core@${AXE_VERSION}" >&2
fi
echo "${FILE}"

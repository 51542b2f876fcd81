#!/usr/bin/env bash
# Builds oauth2-proxy (the authenticating proxy of the UI's proxy-mode tests) from the module
# pinned in go.mod here into a cache folder shared by every clone on this machine. Built once;
# a cold build takes a few minutes. Prints the binary's path.
set -o errexit -o nounset -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION=v7.15.6
DIR="${SLUICE_TESTBIN_OAUTH2_PROXY:-${XDG_CACHE_HOME:-${HOME}/.cache}/sluice/testbin/oauth2-proxy-${VERSION}}"
mkdir -p "${DIR}"

# A lock, because parallel test packages may all find the folder empty at once.
exec 9>"${DIR}/.lock"
flock 9

if [ ! -x "${DIR}/oauth2-proxy" ]; then
  echo "building oauth2-proxy ${VERSION} (cached in ${DIR})" >&2
  cd "${HERE}"
  GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=${VERSION}" -o "${DIR}/oauth2-proxy.tmp" github.com/oauth2-proxy/oauth2-proxy/v7
  mv "${DIR}/oauth2-proxy.tmp" "${DIR}/oauth2-proxy"
fi

echo "${DIR}/oauth2-proxy"

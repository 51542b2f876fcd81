#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from their pinned Go modules into a cache
# folder shared by every clone on this machine, so integration tests and the demo run the real
# controllers beside the local control plane (testenv/flux). Built once; a cold build takes about
# 7 minutes on 2 cores, downloads included. Prints the folder.
# go mod tidy cannot run in this module: it also resolves the controllers' test imports, and the
# module proxy refuses one of them (fluxcd/pkg/helmtestserver); go build needs only what is listed.
set -o errexit -o nounset -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FLUX_VERSION=v1.9.6
DIR="${SLUICE_TESTBIN_FLUX:-${XDG_CACHE_HOME:-${HOME}/.cache}/sluice/testbin/flux-${FLUX_VERSION}}"
mkdir -p "${DIR}"

# A lock, because parallel test packages may all find the folder empty at once.
exec 9>"${DIR}/.lock"
flock 9

cd "${HERE}"
export GOWORK=off
for bin in source-controller kustomize-controller; do
  [ -x "${DIR}/${bin}" ] && continue
  echo "building ${bin} ${FLUX_VERSION} (cached in ${DIR})" >&2
  CGO_ENABLED=0 go build -trimpath -o "${DIR}/${bin}.tmp" "github.com/fluxcd/${bin}"
  mv "${DIR}/${bin}.tmp" "${DIR}/${bin}"
done

echo "${DIR}"

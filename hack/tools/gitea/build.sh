#!/usr/bin/env bash
# Builds Gitea (a real SCM for integration tests) from the pinned module into a cache folder shared
# by every clone on this machine, next to a readable copy of the assets Gitea loads from disk
# (options/locale, templates, public). Built once; a cold build takes several minutes.
# Prints the folder.
set -o errexit -o nounset -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GITEA_VERSION=v1.26.0
TAGS="sqlite sqlite_unlock_notify"
DIR="${SLUICE_TESTBIN_GITEA:-${XDG_CACHE_HOME:-${HOME}/.cache}/sluice/testbin/gitea-${GITEA_VERSION}}"
mkdir -p "${DIR}"

# A lock, because parallel test packages may all find the folder empty at once.
exec 9>"${DIR}/.lock"
flock 9

cd "${HERE}"
export GOWORK=off

if [ ! -x "${DIR}/gitea" ]; then
  echo "building gitea ${GITEA_VERSION} (cached in ${DIR})" >&2
  CGO_ENABLED=1 go build -trimpath -tags "${TAGS}" \
    -ldflags "-X 'main.Version=${GITEA_VERSION#v}' -X 'main.Tags=${TAGS}'" \
    -o "${DIR}/gitea.tmp" code.gitea.io/gitea
  mv "${DIR}/gitea.tmp" "${DIR}/gitea"
fi

# Without the bindata tag Gitea reads these from STATIC_ROOT_PATH. The module cache is read-only and
# may sit in a home folder the unprivileged test user cannot enter, so the harness gets its own copy.
if [ ! -d "${DIR}/static" ]; then
  go mod download code.gitea.io/gitea
  src="$(go list -m -f '{{.Dir}}' code.gitea.io/gitea)"
  rm -rf "${DIR}/static.tmp"
  mkdir -p "${DIR}/static.tmp"
  cp -R "${src}/options" "${src}/templates" "${src}/public" "${DIR}/static.tmp/"
  chmod -R u+w,a+rX "${DIR}/static.tmp"
  mv "${DIR}/static.tmp" "${DIR}/static"
fi

echo "${DIR}"

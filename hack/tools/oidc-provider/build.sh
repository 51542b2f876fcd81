#!/usr/bin/env bash
# Builds the OpenID provider of the UI's tests (main.go here: zitadel/oidc's provider with the
# users and clients a test names) into a cache folder shared by every clone on this machine,
# named by a hash of this folder's sources, so a change rebuilds it. Prints the binary's path.
#
# Why not Dex, which Argo CD ships: the Go module proxy serves github.com/dexidp/dex only as
# v0.6.1 and v2.13.0+incompatible (2018; every later version, tag or commit answers 403 "not
# available"), and v2.13.0 does not compile against the only cockroach-go it serves (v2.0.1):
# storage/sql/sql.go:104: cannot use crdb.ExecuteTx (func(ctx, db, opts, fn) error) as
# func(db, fn) error; its etcd v3.3 client does not compile against the gRPC it resolves (v1.85).
set -o errexit -o nounset -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUM="$(cat "${HERE}/main.go" "${HERE}/go.mod" "${HERE}/go.sum" | sha256sum | cut -c1-12)"
DIR="${SLUICE_TESTBIN_OIDC:-${XDG_CACHE_HOME:-${HOME}/.cache}/sluice/testbin/oidc-provider-${SUM}}"
mkdir -p "${DIR}"

# A lock, because parallel test packages may all find the folder empty at once.
exec 9>"${DIR}/.lock"
flock 9

if [ ! -x "${DIR}/oidc-provider" ]; then
  echo "building the OpenID provider (cached in ${DIR})" >&2
  cd "${HERE}"
  GOWORK=off CGO_ENABLED=0 go build -trimpath -o "${DIR}/oidc-provider.tmp" .
  mv "${DIR}/oidc-provider.tmp" "${DIR}/oidc-provider"
fi

echo "${DIR}/oidc-provider"

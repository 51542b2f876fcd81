#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, etcd), kubectl and helm from pinned Go modules
# into a cache folder shared by every clone on this machine. Each binary is built once; a cold
# build takes about 8 minutes on 2 cores. Prints the folder.
# With --node it also builds what a real single-node cluster needs (make e2e, docs/e2e.md):
# kubelet, kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS, about 7 more minutes.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
HELM_VERSION=v3.22.0
DIR="${SLUICE_TESTBIN:-${XDG_CACHE_HOME:-${HOME}/.cache}/sluice/testbin/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}-helm-${HELM_VERSION}}"
mkdir -p "${DIR}"

build() { # build <tools module> <binary> <package> [ldflags]
  local module="$1" bin="$2" pkg="$3" ldflags="${4:-}"
  # A binary is rebuilt when its ldflags changed (kept beside it; none for most).
  [ -x "${DIR}/${bin}" ] && [ "$(cat "${DIR}/${bin}.ldflags" 2>/dev/null)" = "${ldflags}" ] && return 0
  echo "building ${bin} from ${pkg} (cached in ${DIR})" >&2
  (cd "${ROOT}/hack/tools/${module}" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${DIR}/${bin}.tmp" "${pkg}")
  mv "${DIR}/${bin}.tmp" "${DIR}/${bin}"
  if [ -n "${ldflags}" ]; then printf '%s' "${ldflags}" > "${DIR}/${bin}.ldflags"; else rm -f "${DIR}/${bin}.ldflags"; fi
}

# The API server and kubectl report the version they were built from, as release builds do: unstamped it is
# v0.0.0-master, which every chart's kubeVersion refuses, so helm could not install a chart into
# the local control plane (make controlplane).
KUBE_MINOR="${KUBE_VERSION#v1.}"
KUBE_MINOR="${KUBE_MINOR%%.*}"
KUBE_STAMP="-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${KUBE_MINOR} -X k8s.io/component-base/version.gitTreeState=clean"

# A lock, because parallel test packages may all find the folder empty at once.
exec 9>"${DIR}/.lock"
flock 9
build kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${KUBE_STAMP}"
build kube kubectl k8s.io/kubernetes/cmd/kubectl "${KUBE_STAMP}"
build etcd etcd go.etcd.io/etcd/server/v3
build helm helm helm.sh/helm/v3/cmd/helm
if [ "${1:-}" = "--node" ]; then
  for bin in kubelet kube-controller-manager kube-scheduler kube-proxy; do
    build kube "${bin}" "k8s.io/kubernetes/cmd/${bin}"
  done
  build coredns coredns github.com/coredns/coredns
fi
echo "${DIR}"

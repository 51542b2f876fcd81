#!/usr/bin/env bash
# make e2e: brings up a real single-node Kubernetes cluster on this machine, installs Sluice's
# charts with helm from Sluice's own images, runs the end-to-end suite (e2e/suite) against the
# pods, and always tears the node down, after a failure or a Ctrl-C too. Needs root; installs
# Debian's containerd, runc, CNI plugins, iptables, conntrack and Chromium (the browser of the
# UI's sign-in test) when they are missing.
# See docs/e2e.md. Extra `go test` flags: E2E_FLAGS='-run TestUmbrellaChart'.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
PACKAGES=(containerd runc containernetworking-plugins iptables conntrack chromium)

if [ "$(id -u)" -ne 0 ]; then
  cat >&2 <<MSG
make e2e needs root: it brings up a real single-node Kubernetes cluster on this machine.
  - It creates a network link, iptables rules, mounts, cgroups and network namespaces, and
    removes them all when it ends.
  - It needs these Debian packages, which it installs itself as root: ${PACKAGES[*]}.
Run it as root (sudo make e2e). Everything else runs as any user: make test. See docs/e2e.md.
MSG
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q "install ok installed" || missing+=("${p}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null || { echo "make e2e: install ${missing[*]} (Debian packages; no apt-get here)" >&2; exit 1; }
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi

start=$(date +%s)
bash hack/testbin.sh --node >/dev/null
bash hack/tools/gitea/build.sh >/dev/null
bash hack/tools/oidc-provider/build.sh >/dev/null
FLUX_BIN="$(bash hack/tools/flux/build.sh)"
make --no-print-directory images
# The images only the suite runs, for this machine's platform: Flux's source-controller and
# kustomize-controller from the binaries above, and the suite's HTTP app (e2e/cmd/e2e-web).
(cd hack/tools/images && GOWORK=off go run . --set e2e --flux-bin "${FLUX_BIN}" --registry localhost/e2e \
  --platforms "linux/$(go env GOARCH)" --out "${ROOT}/bin/e2e-images")
mkdir -p .cache/e2e
(cd e2e && go build -o "${ROOT}/.cache/e2e/sluice-node" ./cmd/sluice-node)
echo "e2e: binaries and images ready after $(( $(date +%s) - start ))s"

# A node that a killed run left behind goes first; the trap removes this run's in any case.
.cache/e2e/sluice-node down
trap '.cache/e2e/sluice-node down' EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086 # E2E_FLAGS is a list of flags
(cd e2e && go test -count=1 -timeout 40m -v ./suite/ ${E2E_FLAGS:-})
echo "e2e: done after $(( $(date +%s) - start ))s"

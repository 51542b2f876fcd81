#!/usr/bin/env bash
# Regenerates deepcopy, clientset (with watch and apply configurations), listers, informers and CRDs
# from the types in the api module (api/<group>/<version>). Generators are pinned by hack/tools/codegen/go.mod.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/hack/tools/codegen"
export GOBIN="${ROOT}/.cache/tools/bin"
mkdir -p "${GOBIN}"

# `go list -m` reports no folder for a module not yet in the cache: download it first.
(cd "${TOOLS}" && GOWORK=off go mod download k8s.io/code-generator)
CODEGEN_DIR="$(cd "${TOOLS}" && GOWORK=off go list -m -f '{{.Dir}}' k8s.io/code-generator)"
if [ ! -f "${CODEGEN_DIR}/kube_codegen.sh" ]; then
  echo "cannot find kube_codegen.sh of k8s.io/code-generator (got folder '${CODEGEN_DIR}')" >&2
  exit 1
fi
# shellcheck source=/dev/null
source "${CODEGEN_DIR}/kube_codegen.sh"

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/api"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --output-dir "${ROOT}/api/generated" \
    --output-pkg "github.com/sluicehq/sluice/api/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/api"

(cd "${TOOLS}" && GOWORK=off go build -o "${GOBIN}/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
rm -rf "${ROOT}/api/crds"/*.yaml
mkdir -p "${ROOT}/api/crds"
(cd "${ROOT}/api" && "${GOBIN}/controller-gen" crd:crdVersions=v1 paths=./... output:crd:artifacts:config=crds)

# Charts: each ships the CRDs of the groups it owns or cannot work without, in crds/ so Helm
# installs them once, never takes ownership (no conflicts between charts) and keeps them on
# uninstall. The shared templates are copied so every chart renders the same workload.
declare -A CHART_GROUPS=(
  [gate-controller]="gating.sluice.dev"
  [health-controller]="health.sluice.dev"
  [commitstatus-controller]="commitstatus.sluice.dev scm.sluice.dev"
  [promoter-controller]="promoter.sluice.dev commitstatus.sluice.dev scm.sluice.dev gating.sluice.dev"
  [rollback-controller]="rollback.sluice.dev promoter.sluice.dev commitstatus.sluice.dev scm.sluice.dev"
)
for chart in "${!CHART_GROUPS[@]}"; do
  dir="${ROOT}/charts/${chart}"
  [ -d "${dir}" ] || continue
  rm -rf "${dir}/crds"
  for group in ${CHART_GROUPS[${chart}]}; do
    for crd in "${ROOT}/api/crds/${group}"_*.yaml; do
      if [ -e "${crd}" ]; then mkdir -p "${dir}/crds" && cp "${crd}" "${dir}/crds/"; fi
    done
  done
  cp "${ROOT}/hack/chart-common/_sluice.tpl" "${dir}/templates/_sluice.tpl"
done

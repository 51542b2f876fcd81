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

# Charts: every CRD has exactly one owner chart, which ships it in files/crds/ and renders it as a
# template (hack/chart-common/_sluice.tpl, sluice.crds), so `helm upgrade` upgrades it and
# crds.keep keeps it on uninstall. A chart that needs another chart's kinds says so in its README;
# no CRD is copied into a second chart. The shared templates are copied into every controller
# chart and into the UI's chart (charts/ui, which owns no CRD), and values.yaml and
# values.schema.json are written from hack/chart-common and the chart's values.own.yaml and
# values.own.schema.json.
declare -A CRD_OWNER=(
  [gating.sluice.dev]=gate-controller
  [health.sluice.dev]=health-controller
  [commitstatus.sluice.dev]=commitstatus-controller
  [scm.sluice.dev]=commitstatus-controller
  [promoter.sluice.dev]=promoter-controller
  [rollback.sluice.dev]=rollback-controller
)
for dir in "${ROOT}"/charts/*-controller "${ROOT}"/charts/ui; do
  rm -rf "${dir}/crds" "${dir}/files/crds"
  cp "${ROOT}/hack/chart-common/_sluice.tpl" "${dir}/templates/_sluice.tpl"
done
for crd in "${ROOT}/api/crds"/*.yaml; do
  group="$(basename "${crd}")"
  group="${group%%_*}"
  owner="${CRD_OWNER[${group}]:-}"
  if [ -z "${owner}" ]; then
    echo "no chart owns the CRDs of API group ${group}: add it to CRD_OWNER in hack/update-codegen.sh" >&2
    exit 1
  fi
  mkdir -p "${ROOT}/charts/${owner}/files/crds"
  cp "${crd}" "${ROOT}/charts/${owner}/files/crds/"
done
(cd "${ROOT}/hack/chart-common/chartgen" && GOWORK=off go run . -common .. -charts ../../../charts)

#!/usr/bin/env bash
# Regenerates deepcopy, clientset (with watch and apply configurations), listers, informers and CRDs
# from the types in pkg/apis. Generators are pinned by hack/tools/codegen/go.mod.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/hack/tools/codegen"
export GOBIN="${ROOT}/.cache/tools/bin"
mkdir -p "${GOBIN}"

CODEGEN_DIR="$(cd "${TOOLS}" && GOWORK=off go list -m -f '{{.Dir}}' k8s.io/code-generator)"
# shellcheck source=/dev/null
source "${CODEGEN_DIR}/kube_codegen.sh"

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "github.com/sluicehq/sluice/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

(cd "${TOOLS}" && GOWORK=off go build -o "${GOBIN}/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
rm -rf "${ROOT}/pkg/crds"/*.yaml
mkdir -p "${ROOT}/pkg/crds"
(cd "${ROOT}/pkg" && "${GOBIN}/controller-gen" crd:crdVersions=v1 paths=./apis/... output:crd:artifacts:config=crds)

#!/usr/bin/env bash
# The release steps. .github/workflows/release.yaml runs them on a tag; each can also run on a
# checkout, against a local registry, to try it (see docs/release.md).
#
#   hack/release.sh push-images REGISTRY   push every controller image from bin/images (make images)
#                                          to REGISTRY/<name>:<version>; digests into dist/images.txt
#   hack/release.sh sign-images REGISTRY   an SPDX SBOM per image and platform (syft), attested, and a
#                                          keyless signature of each index and its images (cosign)
#   hack/release.sh binaries               kubectl-gate and kubectl-sluice for linux and darwin, amd64
#                                          and arm64, as archives with checksums.txt and the krew
#                                          manifests gate.yaml and sluice.yaml
#   hack/release.sh charts                 every chart packaged at the version into dist/charts
#   hack/release.sh push-charts OCI_REPO   helm push of dist/charts/*.tgz; digests into dist/charts.txt
#   hack/release.sh sign-charts            keyless signature of every pushed chart
#
# VERSION (without "v") and REVISION default to what make images stamped, so everything released
# carries the same stamp.
# CRANE, HELM, COSIGN and SYFT name the tools; HELM_PUSH_FLAGS adds flags (--plain-http for a local
# registry).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
IMAGES=bin/images
DIST="${DIST:-dist}"
VERSION_PKG=github.com/sluicehq/sluice/pkg/version
VERSION="${VERSION:-$(jq -r .version "${IMAGES}/images.json" 2>/dev/null || true)}"
VERSION="${VERSION#v}"
REVISION="${REVISION:-$(jq -r .revision "${IMAGES}/images.json" 2>/dev/null || git rev-parse HEAD)}"
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
HELM="${HELM:-helm}"
COSIGN="${COSIGN:-cosign}"
SYFT="${SYFT:-syft}"
[ -n "${VERSION}" ] || { echo "no version: run make images first, or set VERSION" >&2; exit 1; }

# crane is pinned by the image builder's module, so the release pushes with the library that built.
crane() {
  if [ -n "${CRANE:-}" ]; then "${CRANE}" "$@"; return; fi
  (cd "${ROOT}/hack/tools/images" && GOWORK=off go tool crane "$@")
}

# Controller images only: pause is for local clusters and tests.
controller_images() {
  jq -r '.images[] | select(.name != "pause") | .name' "${IMAGES}/images.json"
}

push_images() {
  local registry="$1" name ref
  mkdir -p "${DIST}"
  : > "${DIST}/images.txt"
  for name in $(controller_images); do
    ref="${registry}/${name}:${VERSION}"
    # A layout folder: crane pushes its one multi-arch index, with both platforms' images.
    crane push "${ROOT}/${IMAGES}/${name}" "${ref}" | tee -a "${DIST}/images.txt"
  done
}

sign_images() {
  local registry="$1" name platform digest archive sbom
  mkdir -p "${DIST}/sbom"
  while read -r ref; do
    "${COSIGN}" sign --yes --recursive "${ref}"
  done < "${DIST}/images.txt"
  for name in $(controller_images); do
    jq -r --arg n "${name}" '.images[] | select(.name == $n) | .platforms | to_entries[] | "\(.key) \(.value)"' "${IMAGES}/images.json" |
      while read -r platform digest; do
        archive="$(jq -r --arg n "${name}" --arg p "${platform}" '.images[] | select(.name == $n) | .dockerArchives[$p]' "${IMAGES}/images.json")"
        sbom="${DIST}/sbom/${name}_${VERSION}_$(echo "${platform}" | cut -d/ -f1-2 | tr / _).spdx.json"
        "${SYFT}" scan "docker-archive:${IMAGES}/${archive}" -o "spdx-json=${sbom}"
        "${COSIGN}" attest --yes --type spdxjson --predicate "${sbom}" "${registry}/${name}@${digest}"
      done
  done
}

# The kubectl plugins released as binaries: krew name, then the main package of kubectl-<name>.
PLUGINS=(
  "gate ./gate-controller/cmd/kubectl-gate"
  "sluice ./ui/cmd/kubectl-sluice"
)

binaries() {
  local plugin name pkg
  rm -f "${DIST}/checksums.txt"
  for plugin in "${PLUGINS[@]}"; do
    read -r name pkg <<<"${plugin}"
    plugin_binaries "${name}" "${pkg}"
  done
  (cd "${DIST}" && sha256sum kubectl-*_"${VERSION}"_*.tar.gz > checksums.txt)
}

# plugin_binaries builds kubectl-NAME from PKG for every platform, as reproducible archives, and
# renders its krew manifest hack/krew/NAME.yaml with their checksums into dist/NAME.yaml.
plugin_binaries() {
  local name="$1" pkg="$2" bin="kubectl-$1" platform os arch work archive template
  rm -rf "${DIST:?}/${bin}" && mkdir -p "${DIST}/${bin}"
  template="$(grep -v '^#' "hack/krew/${name}.yaml")" # the template's own comments stay behind
  template="${template//'${VERSION}'/${VERSION}}"
  for platform in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
    os="${platform%/*}" arch="${platform#*/}"
    work="${DIST}/${bin}/${os}-${arch}"
    mkdir -p "${work}"
    CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X ${VERSION_PKG}.Version=${VERSION} -X ${VERSION_PKG}.Revision=${REVISION}" \
      -o "${work}/${bin}" "${pkg}"
    archive="${DIST}/${bin}_${VERSION}_${os}_${arch}.tar.gz"
    # Fixed order, owners and times, and gzip without a name or time: the same commit gives the
    # same archive, so the checksums in the krew manifest can be checked by rebuilding.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH}" \
      -C "${work}" -cf - "${bin}" | gzip -9 -n > "${archive}"
    template="${template//"\${SHA256_${os}_${arch}}"/$(sha256sum "${archive}" | cut -d' ' -f1)}"
  done
  if grep -q '\${' <<<"${template}"; then
    echo "hack/krew/${name}.yaml has a placeholder this script does not fill" >&2
    exit 1
  fi
  printf '%s\n' "${template}" > "${DIST}/${name}.yaml"
}

charts() {
  local chart stage
  rm -rf "${DIST}/charts" && mkdir -p "${DIST}/charts"
  # A copy where every chart, and every dependency of the umbrella chart sluice, is at the
  # release's version, so the umbrella chart carries the controller charts of this release.
  stage="$(mktemp -d)"
  cp -R charts/. "${stage}/"
  rm -rf "${stage}/sluice/charts" "${stage}/sluice/Chart.lock"
  for chart in "${stage}"/*/Chart.yaml; do
    sed -i.orig -E -e "s/^version: .*/version: ${VERSION}/" -e "s/^appVersion: .*/appVersion: \"${VERSION}\"/" \
      -e "s/^    version: .*/    version: ${VERSION}/" \
      -e "s#(image: ghcr.io/sluicehq/[a-z-]+):[^ ]+#\1:${VERSION}#" "${chart}"
    rm -f "${chart}.orig"
  done
  # file:// dependencies need no network; --skip-refresh leaves helm's repository indexes alone.
  "${HELM}" dependency build --skip-refresh "${stage}/sluice"
  for chart in "${stage}"/*/; do
    "${HELM}" package "${chart}" -d "${DIST}/charts"
  done
  rm -rf "${stage}"
}

push_charts() {
  local repo="$1" tgz out name digest
  : > "${DIST}/charts.txt"
  for tgz in "${DIST}"/charts/*.tgz; do
    # shellcheck disable=SC2086 # HELM_PUSH_FLAGS is a list of flags
    out="$("${HELM}" push "${tgz}" "oci://${repo}" ${HELM_PUSH_FLAGS:-} 2>&1)"
    echo "${out}"
    name="$(basename "${tgz}" "-${VERSION}.tgz")"
    digest="$(sed -n 's/^Digest: //p' <<<"${out}")"
    [ -n "${digest}" ] || { echo "helm push printed no digest for ${tgz}" >&2; exit 1; }
    echo "${repo}/${name}@${digest}" >> "${DIST}/charts.txt"
  done
}

sign_charts() {
  local ref
  while read -r ref; do
    "${COSIGN}" sign --yes "${ref}"
  done < "${DIST}/charts.txt"
}

case "${1:-}" in
  push-images) push_images "${2:?registry, such as ghcr.io/sluicehq}" ;;
  sign-images) sign_images "${2:?registry, such as ghcr.io/sluicehq}" ;;
  binaries) binaries ;;
  charts) charts ;;
  push-charts) push_charts "${2:?OCI repository, such as ghcr.io/sluicehq/charts}" ;;
  sign-charts) sign_charts ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac

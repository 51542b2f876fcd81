#!/usr/bin/env bash
# Regenerates into a scratch copy of the generated paths and fails on any difference.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GENERATED=(api charts)
before="$(mktemp -d)"
trap 'rm -rf "${before}"' EXIT
for p in "${GENERATED[@]}"; do [ -e "$p" ] && mkdir -p "${before}/$(dirname "$p")" && cp -a "$p" "${before}/$p"; done

mkdir -p .cache
flock .cache/codegen.lock bash hack/update-codegen.sh >/dev/null

stale=0
for p in "${GENERATED[@]}"; do
  if ! diff -r "${before}/$p" "$p"; then stale=1; fi
done
if [ "${stale}" -ne 0 ]; then
  echo "generated files are stale: run 'make generate' and commit the result" >&2
  exit 1
fi
echo "generated files are up to date"

# Sluice: every target works on a fresh machine with Go, git and gcc.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c

MODULES     := api testenv pkg gate-controller health-controller promoter-controller commitstatus-controller rollback-controller ui dev soak
# Tool modules outside go.work that have tests of their own; built and tested with GOWORK=off.
# hack/monitoring runs the demo story and scrapes the controllers: it needs make build.
TOOL_MODULES := hack/tools/images hack/tools/oidc-provider hack/chart-common/chartgen hack/monitoring
CONTROLLERS := gate health promoter commitstatus rollback
GOTEST_FLAGS ?= -count=1
LOCK        := .cache/codegen.lock

.PHONY: all generate verify build images test unit bench lint charts monitoring testbin testbin-kube testbin-gitea testbin-oidc testbin-oauth2-proxy testbin-flux testbin-axe screenshots demo controlplane flux clean e2e soak

all: build

## generate: regenerate deepcopy, clients, informers, listers, CRDs and chart CRDs.
generate:
	@mkdir -p .cache
	flock $(LOCK) bash hack/update-codegen.sh

## verify: regenerate into the tree and fail if anything was stale.
verify:
	bash hack/verify-codegen.sh
	$(MAKE) lint

## build: every controller binary and the dev tools into bin/.
build:
	@mkdir -p bin
	@for c in $(CONTROLLERS); do go build -o bin/ ./$$c-controller/cmd/$$c-controller; done
	go build -o bin/ ./gate-controller/cmd/kubectl-gate
	go build -o bin/ ./ui/cmd/sluice-ui ./ui/cmd/kubectl-sluice
	go build -o bin/ ./dev/cmd/...

## images: OCI images of every controller and pause, linux/amd64 and arm64, into bin/images; no Docker.
## See docs/release.md for which file docker, ctr, kind and crane take.
images:
	cd hack/tools/images && GOWORK=off go run . --out $(CURDIR)/bin/images

## testbin: build kube-apiserver, etcd, kubectl, helm, gitea, the OpenID provider, oauth2-proxy
## and Flux's source-controller and kustomize-controller from Go modules into the cache (once).
testbin: testbin-kube testbin-gitea testbin-oidc testbin-oauth2-proxy testbin-flux testbin-axe

## testbin-kube: only the control plane, kubectl and helm (all make controlplane needs).
testbin-kube:
	bash hack/testbin.sh

testbin-gitea:
	bash hack/tools/gitea/build.sh

## testbin-oidc: the OpenID provider of the UI's login tests (hack/tools/oidc-provider; why not Dex is in its build.sh).
testbin-oidc:
	bash hack/tools/oidc-provider/build.sh

## testbin-oauth2-proxy: oauth2-proxy, in front of the UI in its proxy-mode tests.
testbin-oauth2-proxy:
	bash hack/tools/oauth2-proxy/build.sh

## screenshots: every screenshot of the UI in docs/images, taken in Chromium by the browser tests
## that show each view, from the real UI against the embedded control plane.
SCREENSHOT_TESTS := TestPromotionMovesLiveOnThePipelinePage|TestHistoryPageShowsCommitsEnvironmentsAndDORA|TestAGateClosedFromThePageHoldsAKustomization|TestActionsRunAsThePersonTheProxyNames|TestFrozenNowFollowsAGateClosingLive|TestActivityNamesThePersonLive|TestApproveThisDrySHAFromTheCardLetsExactlyItThrough|TestDarkModeFollowsTheSystemAndTheToggleIsRemembered|TestEveryPageFitsAPhoneAndShowsTimesInThePersonsZone
screenshots: testbin-kube
	cd ui && SLUICE_UI_SCREENSHOTS=$(CURDIR)/docs/images go test -count=1 -run '^($(SCREENSHOT_TESTS))$$' ./internal/integration/

## testbin-axe: axe-core from npm, the accessibility engine the UI's browser tests run in Chromium.
testbin-axe:
	bash hack/tools/axe/install.sh

## testbin-flux: only the real Flux controllers that integration tests run beside the control plane.
testbin-flux:
	bash hack/tools/flux/build.sh

## test: unit and integration tests of every module, on the real local control plane.
test: testbin build
	@for m in $(MODULES); do echo "==> go test $$m"; (cd $$m && go test $(GOTEST_FLAGS) -timeout 30m ./...) || exit 1; done
	@for m in $(TOOL_MODULES); do echo "==> go test $$m"; (cd $$m && GOWORK=off go test $(GOTEST_FLAGS) -timeout 30m ./...) || exit 1; done

## e2e: as root, a real single-node cluster on this machine: every chart installed with helm from
## make images, the end-to-end suite against the pods, then a full teardown (docs/e2e.md).
e2e:
	bash hack/e2e.sh

## bench: benchmarks, each beside its baseline from the same run.
bench: testbin
	@for m in $(MODULES); do (cd $$m && go test -run '^$$' -bench . -benchmem ./...) || exit 1; done
	@# Sluice's CEL engine beside Flux's runtime/cel: a module of its own, outside go.work.
	cd hack/bench/celbench && GOWORK=off go test -run '^$$' -bench . -benchmem ./...

## lint: go vet and a gofmt check.
lint:
	@bad=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	@for m in $(MODULES); do (cd $$m && go vet ./...) || exit 1; done
	@for m in $(TOOL_MODULES); do (cd $$m && GOWORK=off go vet ./...) || exit 1; done
	@# The end-to-end suite's module: vetted here, run only by make e2e.
	cd e2e && go vet ./...
	@# Each controller also builds alone, through its replace of ../pkg.
	@for c in $(CONTROLLERS); do (cd $$c-controller && GOWORK=off go build ./...) || exit 1; done
	cd ui && GOWORK=off go build ./...

## charts: lint every chart and install it into the local control plane, alone, together and
## through the umbrella chart sluice; CRD ownership, schemas, sharding and least privilege.
charts: testbin-kube
	cd testenv && go test $(GOTEST_FLAGS) ./charts/...

## monitoring: every alert and dashboard expression checked against the controllers' real /metrics.
monitoring: testbin build
	cd hack/monitoring && GOWORK=off go test $(GOTEST_FLAGS) ./...

## demo: the whole story on the embedded local control plane, beside real Flux controllers. No
## cluster, no Docker. A screenshot of the web UI after each chapter goes into .cache/demo/ (with
## chromium installed); UI=1 leaves everything running at the end and prints the UI's URL. On a
## first run the control plane, Gitea, Flux's controllers and bin/ are built in parallel.
demo:
	$(MAKE) --no-print-directory -j4 testbin-kube testbin-gitea testbin-flux build
	bin/sluice-demo $(if $(UI),--keep-running)

## soak: every controller with two replicas, Gitea and the plain git server behind fault proxies,
## real Flux, ManifestReleases, a workload and seeded faults for SOAK_DURATION (default 30m),
## invariants checked on git, Gitea and the cluster; a violation prints the seed that replays it
## (docs/reliability.md). SOAK_SEED and SOAK_STRATEGIES choose the rest.
soak: testbin build
	@mkdir -p .cache/soak
	go build -o bin/ ./soak/cmd/sluice-soak
	bin/sluice-soak --report .cache/soak/report.md

## controlplane: run the local control plane in the foreground and write a kubeconfig for kubectl.
controlplane: testbin-kube
	go run ./dev/cmd/sluice-controlplane

## flux: beside make controlplane (another shell), install the Flux CRDs and run the real
## source-controller and kustomize-controller v1.9.6 in the foreground (no pods, no DNS).
flux: testbin-flux
	go run ./dev/cmd/sluice-flux

clean:
	rm -rf bin .cache

# The one entry point for generating, checking, testing, benchmarking,
# building and running Wick. Every tool is pinned in tools/go.mod and run with
# `go tool`; nothing needs to be installed globally.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# tools/go.mod is kept out of the workspace so that buf's dependencies never
# change the versions the services build with.
TOOL := GOWORK=off go tool -modfile=$(CURDIR)/tools/go.mod
BUF := $(TOOL) buf
# Every package of every module in go.work.
PKGS = $(shell go list -m -f '{{.Dir}}/...' | sed 's|^$(CURDIR)|.|')
GOTEST_FLAGS ?= -race -count=1 -timeout 20m
BENCH_FLAGS ?= -run '^$$' -bench . -benchmem -count=1 -timeout 30m
BIN := $(CURDIR)/bin

.PHONY: help gen gen-check lint breaking api-baseline fmt test test-deps test-k8s test-ts test-clients test-ui bench bench-ui build ui images image-runtime image-claude-code run clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

gen: ## regenerate gen/ from proto/ with the pinned generators
	rm -rf gen/wick gen/openapi/*.json
	$(BUF) generate
	@# OpenAPI 3.1: protoc-gen-openapiv3 writes one document per proto file
	@# with HTTP rules into a scratch directory; openapigen merges them and adds
	@# what the gateway serves beyond them (docs/api.md).
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(BUF) generate --template buf.gen.openapi.yaml -o "$$tmp" && \
	  go run ./internal/openapigen/cmd/openapigen -o gen/openapi/wick.openapi.json "$$tmp/openapi"

gen-check: gen ## fail when the committed generated code is not what `make gen` produces
	@git add -N gen >/dev/null 2>&1 || true
	@git diff --exit-code --stat -- gen || { echo 'generated code is stale: run make gen and commit gen/'; exit 1; }

lint: ## buf lint + format, go vet, gofmt, staticcheck
	$(BUF) lint
	$(BUF) format proto --diff --exit-code
	go vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@# Built from tools/go.mod, run in workspace mode so it sees every module.
	"$$($(TOOL) -n staticcheck)" $(PKGS)

# buf breaking compares against the API as last released, kept as a buf image
# in the repository, not against a branch: in CI's clone main is the change
# itself, so comparing with main would always pass. Moving the baseline is a
# deliberate act (`make api-baseline`) in a commit that says which break it
# accepts and why.
API_BASELINE := proto/baseline.binpb
breaking: ## buf breaking (WIRE_JSON) against the released API (proto/baseline.binpb)
	$(BUF) breaking proto --against $(API_BASELINE)

api-baseline: ## record the current protos as the released API that `make breaking` guards
	$(BUF) build proto --exclude-source-info -o $(API_BASELINE)

fmt: ## format Go and proto sources
	gofmt -w $$(git ls-files '*.go')
	$(BUF) format proto -w

test-deps: ## install and start what the tests need (Docker engine, redis-server, busybox, Node.js, Chromium)
	./scripts/test-deps.sh

test: test-deps ## run every test (Go with the race detector, the TypeScript SDK, then the UI), against real dependencies
	go test $(GOTEST_FLAGS) $(PKGS)
	$(MAKE) test-ts
	$(MAKE) test-clients
	$(MAKE) test-ui

# A real single-node cluster built on this machine (deploy/k8s/internal/cluster):
# root only, minutes cold; not part of `make test` (docs/deploy.md#a-real-single-node-cluster).
# It skips when the machine cannot run it; WICK_TEST_K8S=1 makes that a failure.
test-k8s: ## run pods, the sandbox service's pods (their NetworkPolicies enforced by kube-router) and the whole of overlays/dev with a conversation on a real single-node Kubernetes cluster built here (root)
	./scripts/test-deps.sh k8s
	@# The tests run the images `make images` tags: the suite's are built from this tree every time (no UI;
	@# under a minute warm), so a test never proves an older build.
	go run ./deploy/images/cmd/wick-images -only wick-gateway,wick-agent,wick-llmgw,wick-sandbox
	cd deploy/k8s && go test -tags k8scluster -count=1 -timeout 30m -v ./internal/cluster

# The TypeScript SDK against the real suite: its Vitest setup builds cmd/wick
# and starts it on free ports.
test-ts: ## build and test the TypeScript SDK (sdk/typescript) against the real suite
	cd sdk/typescript && npm ci && npm run build && npm test

# Third-party clients (LangGraph SDK, AI SDK, AG-UI, A2A, MCP, OpenAI),
# pinned by e2e/clients/package-lock.json, against the real suite.
test-clients: ## test the protocol adapters with the ecosystem's own clients (e2e/clients) against the real suite
	cd e2e/clients && npm ci && npm test

# The UI's unit tests (jsdom), then its browser tests: Debian's Chromium
# (CHROMIUM_PATH, default /usr/bin/chromium; never downloaded) against the
# real suite, on the local backend and on Docker (required under CI=true).
test-ui: ui ## test the web UI: unit tests, then browser tests against the real suite
	cd ui && npm test && npm run e2e

bench: test-deps ## run every benchmark (figures go into the README's performance table)
	go test $(BENCH_FLAGS) $(PKGS) | tee bench.out

# The UI's numbers (docs/ui.md): initial-route JavaScript gzipped, long tasks
# while a 60 s stream renders, first token painted after its SSE event.
bench-ui: ui ## measure the web UI in Chromium against the real suite (figures for the README)
	cd ui && node scripts/perf.mjs

# The UI is built when one of its inputs is newer than the last build: the
# targets are npm's own record of an install (node_modules/.package-lock.json)
# and a file of each build's output, touched once the build succeeded (a
# failed Vite build leaves no index.html, so the next make builds again).
UI_STAMP := ui/dist/index.html
SDK_STAMP := sdk/typescript/dist/index.js
SDK_INPUTS = $(shell find sdk/typescript/src -type f) sdk/typescript/tsconfig.json sdk/typescript/tsconfig.build.json
UI_INPUTS = $(shell find ui/src ui/public -type f 2>/dev/null) ui/index.html ui/vite.config.ts ui/tsconfig.json

ui: $(UI_STAMP) ## build the web UI into ui/dist (skipped when it is newer than its sources)

sdk/typescript/node_modules/.package-lock.json: sdk/typescript/package.json sdk/typescript/package-lock.json
	cd sdk/typescript && npm ci
	@touch $@

$(SDK_STAMP): sdk/typescript/node_modules/.package-lock.json $(SDK_INPUTS)
	cd sdk/typescript && npm run build
	@touch $@

ui/node_modules/.package-lock.json: ui/package.json ui/package-lock.json
	cd ui && npm ci
	@touch $@

$(UI_STAMP): ui/node_modules/.package-lock.json $(SDK_STAMP) $(UI_INPUTS)
	cd ui && npm run build
	@touch $@

build: ## build every binary into bin/ (wick-daemon and wickfs static)
	mkdir -p $(BIN)
	go build -o $(BIN)/ ./cmd/... ./services/agent/cmd/... ./services/sandbox/cmd/... ./services/llmgw/cmd/... ./services/gateway/cmd/...
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o $(BIN)/ ./daemon/cmd/... ./wickfs/cmd/...

# Images of every binary (docs/deploy.md), built by the local engine with
# nothing pulled: static binaries FROM scratch, tagged with git describe and
# latest. The UI goes into the gateway and wick images when Node.js builds it.
# Then the sandbox images built from Debian packages (docs/sandbox.md), each
# skipped when the tag of its recipe is already on the engine.
images: ## build a Docker image of every binary (wick-<name>:<git describe> and :latest), then the sandbox runtime images, with the local engine
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory ui || echo "make images: the web UI did not build (above); the gateway and wick images carry none" >&2; \
	else \
	  echo "make images: Node.js and npm are not installed, so the gateway and wick images carry no web UI" >&2; \
	fi
	go run ./deploy/images/cmd/wick-images $$([ -f ui/dist/index.html ] && echo -ui-dir ui/dist) $(ARGS)
	$(MAKE) --no-print-directory image-claude-code

# mmdebstrap from the Debian mirror, imported into the engine; FORCE=1
# rebuilds an unchanged recipe (to take Debian's updates).
image-runtime: ## build wick-sandbox-runtime (Debian: python3, pandas, git, Node.js, ripgrep) with mmdebstrap
	./deploy/images/runtime.sh $(if $(FORCE),-f)

# npm ci of deploy/acp-agents on this host, COPYed onto the runtime image.
image-claude-code: image-runtime ## build wick-sandbox-claude-code: the runtime image with the ACP adapters of deploy/acp-agents
	./deploy/images/acp-agents.sh $(if $(FORCE),-f)

run: ## run the whole suite in one process with embedded defaults (and the web UI when Node.js is installed)
	@mkdir -p $(BIN)
	@# The static binaries let sandboxes run in Docker when an engine answers.
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/ ./daemon/cmd/wick-daemon ./wickfs/cmd/wickfs
	@# The UI is built once and rebuilt only when its sources change; without
	@# Node.js the suite runs all the same and says how to get the UI.
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory ui || echo "make run: the web UI did not build (above); running without it" >&2; \
	else \
	  echo "make run: Node.js and npm are not installed, so there is no web UI; install Node.js 20.19 or later with npm (Debian: apt-get install nodejs npm) and run make run again" >&2; \
	fi
	WICK_DAEMON_BIN=$(BIN)/wick-daemon WICK_WICKFS_BIN=$(BIN)/wickfs go run ./cmd/wick -knowledge-dir $(BIN)/knowledge $$([ -f ui/dist/index.html ] && echo -ui-dir ui/dist) $(ARGS)

clean:
	rm -rf $(BIN) bench.out

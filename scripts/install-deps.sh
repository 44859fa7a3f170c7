#!/usr/bin/env bash
# install-deps.sh: installs what agorad needs to build, run and test.
# Idempotent: re-running it changes nothing that is already in place.
#
#   libwhisper-dev, libggml-dev  whisper.cpp and ggml (Debian sid, pinned on bookworm)
#   portaudio19-dev              microphone capture and earcon playback
#   mosquitto, mosquitto-clients MQTT broker for tests and benchmarks
#   espeak-ng                    speaks the replies (run time); synthetic speech in tests
#   sox, alsa-utils              audio conversion, the ALSA file microphone
#   nats-server                  MQTT broker + JetStream for the bridge's fleet tests (bookworm 2.9.10)
#   libasound2-plugins           (not needed: the file plugin is in libasound2 itself)
#
# Set AGORAD_DEPS_TEST=0 to skip the test-only packages on a production device.
set -euo pipefail

log() { printf 'install-deps: %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

. /etc/os-release
log "system: ${PRETTY_NAME:-unknown}"

need_pin=0
case "${ID:-}:${VERSION_CODENAME:-}" in
  debian:bookworm) need_pin=1 ;;
  debian:*|ubuntu:*) need_pin=0 ;;
  *) log "untested distribution ${ID:-?}; trying plain apt" ;;
esac

APT_OPTS=(-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
export DEBIAN_FRONTEND=noninteractive

if [ "$need_pin" = 1 ]; then
  # Bookworm has no libwhisper: take it from sid, pinned low so nothing else
  # is upgraded from sid unless asked for with -t sid.
  if [ ! -f /etc/apt/sources.list.d/agorad-sid.sources ]; then
    log "adding the Debian sid source (pinned at priority 100) for libwhisper-dev"
    $SUDO tee /etc/apt/sources.list.d/agorad-sid.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  if [ ! -f /etc/apt/preferences.d/agorad-sid ]; then
    $SUDO tee /etc/apt/preferences.d/agorad-sid >/dev/null <<'PIN'
Package: *
Pin: release n=sid
Pin-Priority: 100
PIN
  fi
fi

# espeak-ng speaks the backend's replies (run as its own process, never linked).
pkgs_run=(portaudio19-dev pkg-config mosquitto mosquitto-clients alsa-utils espeak-ng)
pkgs_test=(sox libsox-fmt-all nats-server)
want=("${pkgs_run[@]}")
if [ "${AGORAD_DEPS_TEST:-1}" != 0 ]; then want+=("${pkgs_test[@]}"); fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
whisper_missing=0
dpkg-query -W -f='${Status}' libwhisper-dev 2>/dev/null | grep -q "install ok installed" || whisper_missing=1

if [ ${#missing[@]} -gt 0 ] || [ "$whisper_missing" = 1 ]; then
  log "apt-get update"
  $SUDO apt-get -q -o Acquire::Check-Valid-Until=false update >/dev/null
fi
if [ "$whisper_missing" = 1 ]; then
  log "installing libwhisper-dev and libggml-dev"
  if [ "$need_pin" = 1 ]; then
    $SUDO apt-get install "${APT_OPTS[@]}" -o Acquire::Check-Valid-Until=false -t sid libwhisper-dev libggml-dev
  else
    $SUDO apt-get install "${APT_OPTS[@]}" libwhisper-dev libggml-dev
  fi
else
  log "libwhisper-dev already installed"
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing: ${missing[*]}"
  $SUDO apt-get install "${APT_OPTS[@]}" --no-install-recommends "${missing[@]}"
else
  log "system packages already installed"
fi

# mosquitto's package starts a system broker on :1883; tests start their own
# on free ports, so the system one is left as the distribution configured it.
log "done: $(dpkg-query -W -f='libwhisper ${Version}' libwhisper-dev 2>/dev/null)"

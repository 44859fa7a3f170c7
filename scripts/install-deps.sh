#!/usr/bin/env bash
# install-deps.sh: installs what agorad needs to build, run and test.
# Idempotent: re-running it changes nothing that is already in place.
#
#   libwhisper-dev, libggml-dev  whisper.cpp and ggml (Debian sid, pinned on bookworm)
#   gcc, binutils, make, libc6-dev cgo's C toolchain; libc6-dev comes from the same
#                                suite (exact version) as the libc6 whisper left
#   procps                       /bin/kill, named by the unit (systemd-analyze verify)
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
pkgs_run=(portaudio19-dev pkg-config mosquitto mosquitto-clients alsa-utils espeak-ng gcc binutils make procps)
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
    # pkg/sid selects sid for the named packages only; apt then takes from
    # sid just the dependencies bookworm cannot satisfy (libstdc++6,
    # gcc-16-base, libc-gconv-modules-extra) and nothing else: no `-t sid`,
    # which prefers sid for every package and upgrades dozens of libraries.
    # whisper needs libc6 >= 2.43, and sid's libc6 Breaks base-files < 13.3,
    # so libc6, libc-bin and base-files are named: /etc/os-release then says
    # forky/sid; that is the price of sid's whisper on bookworm.
    whisper_sel=(libwhisper-dev/sid libggml-dev/sid libc6/sid libc-bin/sid base-files/sid)
    from_sid=$(apt-get -s install --no-install-recommends -o Acquire::Check-Valid-Until=false "${whisper_sel[@]}" 2>/dev/null \
      | sed -n 's/^Inst \([^ ]*\) .*/\1/p' | tr '\n' ' ')
    log "from sid: ${from_sid:-nothing}"
    $SUDO apt-get install "${APT_OPTS[@]}" --no-install-recommends -o Acquire::Check-Valid-Until=false "${whisper_sel[@]}"
  else
    $SUDO apt-get install "${APT_OPTS[@]}" --no-install-recommends libwhisper-dev libggml-dev
  fi
else
  log "libwhisper-dev already installed"
fi
# cgo needs libc6-dev of exactly the installed libc6 (sid's once whisper
# pulled it in; bookworm's libc6-dev then no longer installs).
libc_ver=$(dpkg-query -W -f='${Version}' libc6)
if [ "$(dpkg-query -W -f='${Status} ${Version}' libc6-dev 2>/dev/null)" != "install ok installed $libc_ver" ]; then
  if [ ${#missing[@]} -eq 0 ] && [ "$whisper_missing" = 0 ]; then
    $SUDO apt-get -q -o Acquire::Check-Valid-Until=false update >/dev/null
  fi
  log "installing libc6-dev $libc_ver (the suite of the installed libc6)"
  $SUDO apt-get install "${APT_OPTS[@]}" --no-install-recommends -o Acquire::Check-Valid-Until=false \
    "libc6-dev=$libc_ver" "libc-dev-bin=$libc_ver"
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

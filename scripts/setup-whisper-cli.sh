#!/usr/bin/env bash
# setup-whisper-cli.sh: builds the reference whisper-cli for the benchmarks.
#
# Debian sid's whisper.cpp-tools conflicts with bookworm's OpenSSL when
# installed in place (it breaks apt), so it lives in its own sid root made
# with debootstrap. Idempotent; prints the root's path on stdout.
#   AGORAD_SID_ROOT  where the root goes (default /var/cache/agorad/sid-root)
set -euo pipefail
ROOT=${AGORAD_SID_ROOT:-/var/cache/agorad/sid-root}
MIRROR=${AGORAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf 'setup-whisper-cli: %s\n' "$*" >&2; }

if [ -x "$ROOT/usr/bin/whisper-cli" ]; then
  log "whisper-cli already in $ROOT"
  echo "$ROOT"; exit 0
fi
if ! command -v debootstrap >/dev/null; then
  log "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
fi
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  log "debootstrap sid into $ROOT (a few minutes)"
  mkdir -p "$ROOT"
  debootstrap --variant=minbase sid "$ROOT" "$MIRROR" >&2
fi
log "installing whisper.cpp-tools inside the sid root"
chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get -q -o Acquire::Check-Valid-Until=false update >&2
chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends whisper.cpp-tools >&2
chroot "$ROOT" /usr/bin/whisper-cli --help >/dev/null 2>&1 || { log "whisper-cli does not run in $ROOT"; exit 1; }
log "ready: $ROOT/usr/bin/whisper-cli ($(chroot "$ROOT" dpkg-query -W -f='${Version}' whisper.cpp-tools))"
echo "$ROOT"

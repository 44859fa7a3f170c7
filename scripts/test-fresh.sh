#!/usr/bin/env bash
# test-fresh.sh: the README's two commands, exactly as a new user runs them,
# on a fresh Debian root that never saw this project (make test-fresh).
#
# The root: debootstrap SUITE (default bookworm) minbase plus what a fresh
# machine of the project's kind has (git, make, gcc, python3, CA
# certificates; Go bind-mounted read-only from the host's /usr/local/go,
# as the project's machines carry it there), and an ALSA file-plugin
# microphone as its default capture device (no sound card in a container;
# ../shared/alsa-virtual-mic.md). Then, in a clone of HEAD with shared/
# beside it, run under systemd-nspawn (no boot):
#   1. the installer's apt steps simulated (apt-get -s): fails on any Remv
#   2. make run: must reach "listening" (then stopped)
#   3. make demo: the whole chain, spoken, must complete (issue 26)
#   4. make test: must pass
# Every step is timed; the log is build/fresh/SUITE.log. Needs root,
# debootstrap and systemd-container. The base root is cached in
# build/fresh/base-SUITE (a copy is used per run); nothing else is reused:
# the run compiles whisper.cpp, downloads Go modules and models itself.
#   SUITE      bookworm (default) or trixie
#   STEPS      which steps (default "sim run demo test")
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=${SUITE:-bookworm}
STEPS=${STEPS:-sim run demo test}
MIRROR=${AGORAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
DIR=$PWD/build/fresh
BASE=$DIR/base-$SUITE
ROOT=$DIR/run-$SUITE
SHARED=${AGORAD_SHARED:-$PWD/../shared}
GOROOT_HOST=$(go env GOROOT)
log() { printf 'test-fresh: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, systemd-nspawn)"
command -v debootstrap >/dev/null && command -v systemd-nspawn >/dev/null || bash scripts/install-deps.sh
[ -d "$SHARED/audio" ] || die "no shared/ beside the repository ($SHARED)"

mkdir -p "$DIR"
echo "module ignore" >"$DIR/go.mod" # go ./... must not walk the roots
if [ ! -f "$BASE/.complete" ]; then
  rm -rf "$BASE"
  log "debootstrap $SUITE into $BASE (cached for later runs)"
  debootstrap --variant=minbase --include=ca-certificates,git,make,gcc,libc6-dev,python3,procps \
    "$SUITE" "$BASE" "$MIRROR" >"$DIR/debootstrap-$SUITE.log" 2>&1 || { tail -20 "$DIR/debootstrap-$SUITE.log" >&2; die "debootstrap"; }
  echo "127.0.0.1 localhost" >"$BASE/etc/hosts"
  cp /etc/resolv.conf "$BASE/etc/resolv.conf" 2>/dev/null || true
  touch "$BASE/.complete"
fi
rm -rf "$ROOT"; cp -a "$BASE" "$ROOT"
# A machine of this workplace trusts its network's CA (its TLS egress goes
# through it) and names the bundle in the environment (PIP_CERT and the
# like): the fresh root gets the same, and nothing else of the host.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
  chroot "$ROOT" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates in the root"
fi
# This workplace's mirror serves Release files past their Valid-Until.
echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99fresh"
# The microphone: speech then silence, through ALSA's file plugin.
mkdir -p "$ROOT/usr/share/fresh"
python3 - "$ROOT/usr/share/fresh/mic.raw" <<'PY'
import sys, math, struct
# 60 s of a quiet tone: the daemon opens the device and listens; what it hears is not the point here.
with open(sys.argv[1], "wb") as f:
    f.write(b"".join(struct.pack("<hh", int(300*math.sin(i/16000*2*math.pi*220)), 0) for i in range(16000*60)))
PY
# Only for the make run step (as ~/.asoundrc, removed afterwards): the
# tests build their own ALSA devices, and a system-wide default would
# replace them.
cat >"$ROOT/usr/share/fresh/asoundrc" <<'ASND'
pcm.filein { type file; slave.pcm "null"; file "/dev/null"; infile "/usr/share/fresh/mic.raw"; format "raw" }
pcm.!default { type plug; slave { pcm "filein"; format S16_LE; rate 16000; channels 2 } }
ASND
log "cloning HEAD ($(git rev-parse --short HEAD)) into the root, shared/ beside it"
mkdir -p "$ROOT/work"
git clone -q "$PWD" "$ROOT/work/agorad"
cp -a "$SHARED" "$ROOT/work/shared"

LOG=$DIR/$SUITE.log
: >"$LOG"
# /tmp on disk, as on a machine: nspawn's default /tmp is a RAM tmpfs of a
# fraction of memory, and the tests' Badger stores filled it (SIGBUS).
mkdir -p "$DIR/tmp-$SUITE"; rm -rf "${DIR:?}/tmp-$SUITE"/*; chmod 1777 "$DIR/tmp-$SUITE"
inroot() { # inroot CMD: one shell command in the root, as root, PATH as a login shell has it plus Go
  systemd-nspawn -q -D "$ROOT" --register=no --keep-unit --bind-ro="$GOROOT_HOST:/usr/local/go" --bind="$DIR/tmp-$SUITE:/tmp" \
    --setenv=PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --setenv=HOME=/root --setenv=CI="${CI:-}" --chdir=/work/agorad \
    --setenv=PIP_CERT=/etc/ssl/certs/ca-certificates.crt --setenv=SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --setenv=REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt /bin/bash -c "$1"
}
step() { # step NAME CMD
  local t0 rc=0
  t0=$(date +%s)
  log "$1: $2"
  echo "=== $1: $2" >>"$LOG"
  inroot "$2" >>"$LOG" 2>&1 || rc=$?
  log "$1: exit $rc after $(( $(date +%s) - t0 )) s"
  return $rc
}
start=$(date +%s)
for s in $STEPS; do
  case $s in
    sim)
      step "installer simulation" 'AGORAD_DEPS_SIMULATE=1 bash scripts/install-deps.sh >/tmp/sim.txt 2>&1; rc=$?; cat /tmp/sim.txt; [ $rc = 0 ] || exit $rc; grep -q "^Inst " /tmp/sim.txt || { echo "no Inst lines: nothing simulated"; exit 1; }; ! grep "^Remv " /tmp/sim.txt' ||
        die "the installer's apt steps would remove packages, or failed (see $LOG)"
      log "PASS installer simulation: $(grep -c '^Inst ' "$LOG") packages to install, 0 removed" ;;
    run)
      # make run in the background until it says it is listening (or gives up).
      step "make run" 'cp /usr/share/fresh/asoundrc ~/.asoundrc; trap "rm -f ~/.asoundrc" EXIT; make run >/tmp/run.log 2>&1 & pid=$!
        for i in $(seq 1800); do grep -q "listening" /tmp/run.log && break; kill -0 $pid 2>/dev/null || break; sleep 1; done
        cat /tmp/run.log; grep -q "listening" /tmp/run.log || { echo "make run never said listening"; exit 1; }
        pkill -TERM -f "[a]gorad run" || true; wait $pid || true' || die "make run did not reach listening (see $LOG)"
      log "PASS make run reached listening" ;;
    demo)
      step "make demo" 'make demo' || die "make demo failed (see $LOG)"
      log "PASS make demo" ;;
    test)
      step "make test" 'make test' || die "make test failed (see $LOG)"
      log "PASS make test" ;;
    *) die "unknown step $s" ;;
  esac
done
log "ALL PASS on a fresh $SUITE root in $(( $(date +%s) - start )) s (log $LOG)"

#!/usr/bin/env bash
# test-system.sh: the deployment test under a booted systemd (PID 1), as the
# README's deployment section says: apt install ./agorad_*.deb, edit one
# file, systemctl start agorad. Recipe: ../shared/systemd-boot.md.
#
#   bash scripts/test-system.sh          build/deb/agorad_*.deb (make deb first)
#   bash scripts/test-system.sh root     only build the cached base root
#
# The base root (debootstrap bookworm minbase + systemd, dbus; the sid
# source pinned at 100 as on a device) is cached in build/system/base; each
# run copies it so the install is always a fresh one. Needs root,
# debootstrap and systemd-container (installed here if missing, the latter
# pinned to the host's systemd version). Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
SYS=$PWD/build/system
BASE=$SYS/base
ROOT=$SYS/run
LOG=$SYS/nspawn.log
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
fail=0
log() { printf 'test-system: %s\n' "$*" >&2; }
check() { # check NAME COMMAND...: one PASS/FAIL line per check
  local name=$1; shift
  if out=$("$@" 2>&1); then log "PASS $name"; else log "FAIL $name: $out"; fail=1; fi
}

need_tools() {
  if ! command -v debootstrap >/dev/null || ! command -v systemd-nspawn >/dev/null; then
    v=$(dpkg-query -W -f='${Version}' systemd)
    apt-get install -y -q debootstrap "systemd-container=$v"
  fi
}

build_base() {
  [ -f "$BASE/.complete" ] && return 0
  need_tools
  rm -rf "$BASE"; mkdir -p "$SYS"
  # a module of its own: go ./... must not walk the Debian roots
  echo "module ignore" >"$SYS/go.mod"
  log "debootstrap $SUITE into $BASE (cached for later runs)"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,ca-certificates,procps "$SUITE" "$BASE" "$MIRROR" >"$SYS/debootstrap.log" 2>&1
  echo "127.0.0.1 localhost" >"$BASE/etc/hosts"
  echo agtest >"$BASE/etc/hostname"
  # What a device gets (README): sid's source pinned at 100, so only what
  # the .deb needs (libwhisper1, libggml0 and their newer libc6/libstdc++6)
  # is taken from it.
  cat >"$BASE/etc/apt/sources.list.d/agorad-sid.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  printf 'Package: *\nPin: release n=sid\nPin-Priority: 100\n' >"$BASE/etc/apt/preferences.d/agorad-sid"
  touch "$BASE/.complete"
}

build_base
[ "${1:-}" = root ] && exit 0

DEB=${DEB:-$(ls -t build/deb/agorad_*.deb 2>/dev/null | grep -v '~prev' | head -1)}
[ -n "$DEB" ] || { log "no build/deb/agorad_*.deb: run make deb"; exit 2; }
VERSION=$(dpkg-deb -f "$DEB" Version)
# "The previous .deb": the same build under a lower version, so the upgrade
# path (conffile, state, maintainer scripts) runs.
PREV=$(bash scripts/build-deb.sh agorad "${VERSION}~prev" | tail -1)
need_tools
rm -rf "$ROOT"; cp -a "$BASE" "$ROOT"
mkdir -p "$ROOT/root/debs"; cp "$DEB" "$ROOT/root/debs/current.deb"; cp "$PREV" "$ROOT/root/debs/prev.deb"

log "booting $ROOT"
# nspawn runs in a cgroup of its own (per hierarchy it uses), so the
# container's cgroups do not land in the host's root cgroup.
CG=agtest$$
cgs=()
for h in /sys/fs/cgroup/unified /sys/fs/cgroup/systemd /sys/fs/cgroup; do
  if [ -w "$h/cgroup.procs" ] && mkdir -p "$h/$CG" 2>/dev/null; then cgs+=("$h/$CG"); fi
  [ "$h" = /sys/fs/cgroup/systemd ] && [ ${#cgs[@]} -gt 0 ] && break
done
CGS="${cgs[*]}" SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 sh -c 'for c in $CGS; do echo $$ >"$c/cgroup.procs"; done
  exec systemd-nspawn -D "$0" --boot --machine="$1" --register=no --keep-unit --console=read-only --system-call-filter=bpf' \
  "$ROOT" "agtest$$" >"$LOG" 2>&1 &
NSPAWN=$!
LEADER=""
cleanup() {
  if [ -n "$LEADER" ]; then nsenter -t "$LEADER" -a systemctl poweroff >/dev/null 2>&1 || true; fi
  for _ in $(seq 30); do kill -0 "$NSPAWN" 2>/dev/null || return 0; sleep 1; done
  kill "$NSPAWN" 2>/dev/null || true
}
trap 'log "stopped at line $LINENO"; cleanup' EXIT
boot0=$(date +%s.%N)
for _ in $(seq 100); do
  LEADER=$(ps --ppid "$NSPAWN" -o pid= | tr -d ' ' | head -1) || true
  [ -n "$LEADER" ] && break; sleep 0.2
done
[ -n "$LEADER" ] || { log "container did not start:"; cat "$LOG" >&2; exit 1; }
ct() { nsenter -t "$LEADER" -a "$@"; }
for _ in $(seq 120); do
  st=$(ct systemctl is-system-running 2>/dev/null || true)
  case "$st" in running|degraded) break ;; esac; sleep 0.5
done
log "booted ($st) in $(echo "$(date +%s.%N) - $boot0" | bc) s"

export DEBIAN_FRONTEND=noninteractive
# This workplace's mirror serves Release files past their Valid-Until (as
# scripts/install-deps.sh accepts too).
echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99agtest"
ct apt-get -q update >/dev/null
# A real broker inside, on its own port (the container shares the host's network).
ct apt-get install -y -q --no-install-recommends mosquitto >"$SYS/apt-mosquitto.log" 2>&1
printf 'listener 18883 127.0.0.1\nallow_anonymous true\n' >"$ROOT/etc/mosquitto/conf.d/agtest.conf"
ct systemctl restart mosquitto

log "apt install ./agorad (previous version) -- the README's deployment step"
ct apt-get install -y -q /root/debs/prev.deb libwhisper1/sid libggml0/sid libc6/sid libc-bin/sid base-files/sid >"$SYS/apt-install.log" 2>&1 || { cat "$SYS/apt-install.log" >&2; exit 1; }
check "postinst says it did not start the placeholder config" grep -q "NOT started" "$SYS/apt-install.log"
check "enabled after install" ct systemctl is-enabled agorad
check "not started with the placeholder config" sh -c "! nsenter -t $LEADER -a systemctl is-active -q agorad"
from_sid=$(ct sh -c 'for p in $(dpkg-query -W -f="\${Package}\n"); do apt-cache policy "$p" | sed -n "/\*\*\*/{n;p}" | grep -q "sid/" && echo "$p"; done; true' | tr '\n' ' ')
log "packages from sid on the device: $from_sid"
check "at most 10 packages from sid" test "$(echo $from_sid | wc -w)" -le 10

log "edit /etc/agorad/agorad.yaml; systemctl start agorad"
sed -i -e 's#^  broker: .*#  broker: tcp://127.0.0.1:18883#' -e 's#^device_id: .*#device_id: agtest#' \
  -e 's#^  source: default#  source: none#' "$ROOT/etc/agorad/agorad.yaml"
t0=$(date +%s.%N)
check "systemctl start agorad (READY=1)" ct systemctl start agorad
log "start took $(echo "$(date +%s.%N) - $t0" | bc) s"
check "active (running)" sh -c "nsenter -t $LEADER -a systemctl status agorad | grep -q 'active (running)'"
check "STATUS says no microphone" sh -c "nsenter -t $LEADER -a systemctl show -p StatusText agorad | grep -q 'no microphone'"

ct useradd -m -G agorad inspector; ct useradd -m other
check "agorad group member uses agoractl" ct runuser -u inspector -- agoractl status
check "others get the permission message" sh -c "nsenter -t $LEADER -a runuser -u other -- agoractl status 2>&1 | grep -qi 'permission'"
check "version reported by agoractl status" sh -c "nsenter -t $LEADER -a runuser -u inspector -- agoractl status | grep -q '${VERSION}'"  # the ~prev package carries the same binary

sec=$(ct systemd-analyze security agorad 2>&1 | tail -1)
log "security: $sec"
check "systemd-analyze security <= 2.0" sh -c "echo '$sec' | awk '{for(i=1;i<=NF;i++) if (\$i ~ /^[0-9]+\\.[0-9]+\$/) v=\$i} END{exit !(v<=2.0)}'"

pid0=$(ct systemctl show -p MainPID --value agorad)
log "waiting 65 s (> 2 x WatchdogSec=30)"
sleep 65
check "survives 2 x WatchdogSec" test "$(ct systemctl show -p MainPID --value agorad)" = "$pid0"

restarts() { ct systemctl show -p NRestarts --value agorad; }
wait_restart() { # wait_restart OLDPID SECONDS
  for _ in $(seq "$2"); do
    p=$(ct systemctl show -p MainPID --value agorad)
    if [ "$p" != 0 ] && [ "$p" != "$1" ] && ct systemctl is-active -q agorad; then return 0; fi
    sleep 1
  done
  return 1
}
n0=$(restarts); t0=$(date +%s)
ct kill -STOP "$pid0"
check "SIGSTOP -> watchdog kill and restart" wait_restart "$pid0" 120
log "watchdog restart after $(( $(date +%s) - t0 )) s, NRestarts $n0 -> $(restarts)"
check "journal names the watchdog timeout" sh -c "nsenter -t $LEADER -a journalctl -u agorad --no-pager | grep -q 'Watchdog timeout'"
# systemd sends SIGCONT with the SIGABRT: the daemon's handler logs one line.
check "watchdog abort is one line, no goroutine dump" sh -c "j=\$(nsenter -t $LEADER -a journalctl -u agorad --no-pager); echo \"\$j\" | grep -q 'watchdog abort (SIGABRT)' && ! echo \"\$j\" | grep -q '^.*goroutine [0-9]'"
pid1=$(ct systemctl show -p MainPID --value agorad)
ct kill -9 "$pid1"
check "kill -9 -> restart" wait_restart "$pid1" 30
check "journal shows the structured log" sh -c "nsenter -t $LEADER -a journalctl -u agorad --no-pager | grep -q 'agorad running.*device_id=agtest'"

# The voice path under the unit's hardening (MemoryDenyWriteExecute, the
# device policy): ALSA's file plugin as the microphone (no sound card in the
# container; ../shared/alsa-virtual-mic.md), the shared test models
# (whisper tiny.en without weights: it loads and decodes; Silero VAD real).
SHARED=${AGORAD_SHARED:-$PWD/../shared}
mkdir -p "$ROOT/usr/share/agtest" "$ROOT/var/lib/agorad/models"
sox "$SHARED/audio/cheetah_test_en.wav" -r 16000 -c 1 -b 16 -e signed-integer -t raw "$ROOT/usr/share/agtest/speech.raw" pad 0 60
cat >"$ROOT/etc/asound.conf" <<'ASND'
pcm.filein { type file; slave.pcm "null"; file "/dev/null"; infile "/usr/share/agtest/speech.raw"; format "raw" }
pcm.agmic { type plug; slave { pcm "filein"; format S16_LE; rate 16000; channels 1 } }
ASND
cp "$SHARED/models/for-tests-ggml-tiny.en.bin" "$SHARED/models/for-tests-silero-v6.2.0-ggml.bin" "$ROOT/var/lib/agorad/models/"
ct chown -R agorad:agorad /var/lib/agorad/models
cp -p "$ROOT/etc/agorad/agorad.yaml" "$SYS/agorad.yaml.none"
sed -i -e 's#^  source: none#  source: agmic#' -e 's#^  whisper: .*#  whisper: for-tests-ggml-tiny.en.bin#' "$ROOT/etc/agorad/agorad.yaml"
check "restart with the file microphone (READY=1 once it is open)" ct systemctl restart agorad
check "STATUS names the microphone" sh -c "nsenter -t $LEADER -a systemctl show -p StatusText agorad | grep -q 'input agmic'"
heard() { for _ in $(seq 60); do
  n=$(ct runuser -u inspector -- agoractl --json status | sed -n 's/.*"transcriptions": *\([0-9]*\).*/\1/p')
  [ "${n:-0}" -gt 0 ] && return 0; sleep 1; done; return 1; }
check "transcribes under MemoryDenyWriteExecute and DevicePolicy=closed" heard
check "still running after transcribing" ct systemctl is-active agorad
cp -p "$SYS/agorad.yaml.none" "$ROOT/etc/agorad/agorad.yaml"
ct systemctl restart agorad

# State for the upgrade: a note in the listen buffer, a batch in the outbox
# (broker stopped so it stays there).
ct systemctl stop mosquitto
ct runuser -u inspector -- agoractl say "note kept across the upgrade" >/dev/null
ct runuser -u inspector -- agoractl flush >/dev/null || true
ct runuser -u inspector -- agoractl say "second note kept across the upgrade" >/dev/null
before=$(ct runuser -u inspector -- agoractl --json status)
log "before upgrade: $before"

log "upgrade to $VERSION"
ct apt-get install -y -q /root/debs/current.deb >"$SYS/apt-upgrade.log" 2>&1 || { cat "$SYS/apt-upgrade.log" >&2; fail=1; }
check "edited config kept" grep -q "tcp://127.0.0.1:18883" "$ROOT/etc/agorad/agorad.yaml"
for _ in $(seq 30); do ct systemctl is-active -q agorad && break; sleep 1; done
check "running again after upgrade" ct systemctl is-active agorad
after=$(ct runuser -u inspector -- agoractl --json status)
log "after upgrade: $after"
field() { echo "$1" | tr ',{}' '\n\n\n' | grep "\"$2\"" | head -1; }
check "version after upgrade" sh -c "echo '$after' | grep -q '\"$VERSION\"'"
check "listen buffer kept" test "$(field "$before" buffered)" = "$(field "$after" buffered)"
check "outbox kept" test "$(field "$before" outbox)" = "$(field "$after" outbox)"

ct apt-get remove -y -q agorad >"$SYS/apt-remove.log" 2>&1
check "remove keeps /var/lib/agorad" test -d "$ROOT/var/lib/agorad"
ct apt-get purge -y -q agorad >"$SYS/apt-purge.log" 2>&1
check "purge removes /var/lib/agorad" test ! -e "$ROOT/var/lib/agorad"
check "purge removes /etc/agorad" test ! -e "$ROOT/etc/agorad"

if [ "$fail" = 0 ]; then log "ALL PASS"; else log "SOME CHECKS FAILED (logs in $SYS)"; fi
exit "$fail"

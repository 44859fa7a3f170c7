#!/usr/bin/env bash
# wordtimes: how far agorad's word times are from where the words were
# said (issue 24; README.md). The set is libespeak-ng speech whose word
# events give each word's start; each model and window is run once with
# agorad's word times and, with WHISPER=1, once with whisper.cpp's own.
#
#   MODELS   "tiny.en-q8_0:en base-q8_0:auto" (model:language; Dutch
#            sentences only for a multilingual model)
#   WINDOWS  "full steps"                   WHISPER  1 (0: agorad's only)
#   THREADS  2                              OUT      bench/out/wordtimes
#   AGORAD_BIN (default build/bin/agorad)
set -euo pipefail
cd "$(dirname "$0")/../.."
MODELS=${MODELS:-tiny.en-q8_0:en base-q8_0:auto}
WINDOWS=${WINDOWS:-full steps}
WHISPER=${WHISPER:-1}
THREADS=${THREADS:-2}
OUT=${OUT:-bench/out/wordtimes}
SHARED=${AGORAD_SHARED:-$PWD/../shared}
make -s build
AGORAD=${AGORAD_BIN:-build/bin/agorad}
[ -d models/kws ] || make -s models
S=bench/wakebench/sentences
for lang in en nl; do
  [ -f "$OUT/set-$lang/.done" ] && continue
  python3 bench/wordtimes/espeak_words.py --out "$OUT/set-$lang" --lang "$lang" \
    "$S/${lang}_start.txt" "$S/${lang}_mid.txt" "$S/nearmiss_$lang.txt"
  touch "$OUT/set-$lang/.done"
done
report=$OUT/wordtimes.md
: >"$report"
for mv in $MODELS; do
  model=${mv%%:*} lang=${mv#*:}
  langs=en
  [ "$lang" = en ] || langs="en nl"
  for set in $langs; do
    runs=()
    for window in $WINDOWS; do
      times=agorad
      [ "$WHISPER" = 1 ] && times="agorad whisper"
      for t in $times; do
        run=$OUT/$model-$lang-$set-$window-$t.jsonl
        flags=()
        [ "$t" = whisper ] && flags=(--whisper-word-times)
        echo "wordtimes: $model $lang, $set sentences, $window window, $t's word times" >&2
        "$AGORAD" transcribe --model "models/ggml-$model.bin" --lang "$lang" --threads "$THREADS" \
          --vad-model "$SHARED/models/for-tests-silero-v6.2.0-ggml.bin" --spotter models/kws \
          --pack=false --window "$window" "${flags[@]}" "$OUT/set-$set"/*.wav >"$run" 2>"$run.err"
        runs+=("$run")
      done
    done
    {
      echo "### $model, --lang $lang, $set sentences"
      echo
      python3 bench/wordtimes/score.py "$OUT/set-$set" "${runs[@]}"
      echo
    } >>"$report"
  done
done
echo "$(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ)" >>"$report"
cat "$report"

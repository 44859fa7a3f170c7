#!/usr/bin/env bash
# noise benchmark (issue 25): how agorad hears speech through noise.
#
# Builds the corpus (bench/noise/mix.py: the English reference clips of
# shared/audio and our own espeak-ng sentences, clean and mixed with pink,
# brown, machine, recorded site and babble noise at 20/10/5/0 dB SNR against
# the speech's active level; noise-only files; bench/wakebench's English
# positives mixed), then in one run on the same weights (tiny.en):
#   - WER of agorad (q8_0, `agorad transcribe --lang en` as werbench.sh runs
#     it: Silero-segmented, packed windows) and faster-whisper int8 (beam 1)
#     per condition, and the CPU seconds (user+sys) of each process;
#   - the noise-only files through agorad's segmenter (energy gate + Silero
#     VAD) and whisper one utterance per call, as the daemon runs: the share
#     of the noise handed to whisper and the utterances it would publish
#     (non-empty text the hallucination guard kept) per hour;
#   - the wake verdict (the daemon's: spotter + fused rules, its defaults) on
#     every WAKE_EVERY-th English clean positive of bench/wakebench, clean and
#     under WAKE_CONDS;
#   - with PRE, candidate preprocessing (bench/noise/prep.py: speexdsp
#     denoise, denoise+AGC, RNNoise, sox noisered) applied before agorad on
#     the conditions PRE_CONDS, scored the same way.
# WER does not depend on load; CPU seconds do: the load is in the report.
#
#   EVERY 1        every Nth shared English clip (68 in all)
#   ESPEAK 12      how many of our own sentences (12 at most)
#   NOISES "pink brown machine recording babble"   SNRS "20 10 5 0"
#   SYSTEMS "agorad fw-int8"
#   NOISE_SECONDS 600   length of each noise-only file (0: no noise-only run)
#   WAKE_EVERY 8   WAKE_CONDS "pink10 pink5 babble10 babble5"  (WAKE=0: none)
#   WAKE_CORPUS    a bench/wakebench corpus (default: made, engines off)
#   PRE ""         "speex speexagc rnnoise noisered": candidates to measure
#   PRE_CONDS "clean pink10 pink5 machine10 machine5 babble10 babble5"
#   CONDS          the conditions run (default clean and every NOISES×SNRS;
#                  "none": only the PRE ones)
#   STAGES "wer noise wake report"   the parts run
#   REUSE 0        1: keep a system's output already in OUT for a condition
#   NOISE_RUN      the noise-only files run (default NOISES)
#   THREADS 2   NICE 10   SEED 25   OUT bench/out/noise   CORPUS build/noise/corpus
# Output: $OUT/noise.md (the tables), $OUT/<cond>.<system>.tsv (hypotheses),
# .time (wall user sys maxrss), .json (agorad's utterances).
# The body is one block, parsed before it runs.
{
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${AGORAD_SHARED:-$(pwd)/../shared}
EVERY=${EVERY:-1}
ESPEAK=${ESPEAK:-12}
NOISES=${NOISES:-pink brown machine recording babble}
SNRS=${SNRS:-20 10 5 0}
SYSTEMS=${SYSTEMS:-agorad fw-int8}
NOISE_SECONDS=${NOISE_SECONDS:-600}
WAKE=${WAKE:-1}
WAKE_EVERY=${WAKE_EVERY:-8}
WAKE_CONDS=${WAKE_CONDS:-pink10 pink5 babble10 babble5}
PRE=${PRE:-}
PRE_CONDS=${PRE_CONDS:-clean pink10 pink5 machine10 machine5 babble10 babble5}
THREADS=${THREADS:-2}
NICE=${NICE:-10}
SEED=${SEED:-25}
OUT=${OUT:-bench/out/noise}
CORPUS=${CORPUS:-build/noise/corpus}
CACHE=${AGORAD_MODEL_CACHE:-$(pwd)/build/cache/models}
MODEL=$(pwd)/models/ggml-tiny.en-q8_0.bin
VAD=$SHARED/models/for-tests-silero-v6.2.0-ggml.bin
log() { printf 'noisebench: %s\n' "$*" >&2; }
run() { nice -n "$NICE" /usr/bin/time -o "$1" -f '%e %U %S %M' "${@:2}"; }
mkdir -p "$OUT"
PY=$(bash bench/peers/setup.sh)
make -s build
[ -f "$MODEL" ] || make -s models >&2
[ -d "$CACHE/ct2/tiny.en" ] || { log "no CTranslate2 tiny.en in $CACHE/ct2 (make models)"; exit 1; }
LOAD0=$(cut -d" " -f1-3 /proc/loadavg)

# --- corpus ------------------------------------------------------------------
if [ "$WAKE" = 1 ] && [ -z "${WAKE_CORPUS:-}" ]; then
  WAKE_CORPUS=build/noise/wakecorpus
  [ -f "$WAKE_CORPUS/corpus.tsv" ] || python3 bench/wakebench/corpus.py --out "$WAKE_CORPUS" --shared "$SHARED" --engines "" >&2
fi
args=(--shared "$SHARED" --out "$CORPUS" --seed "$SEED" --every "$EVERY" --espeak "$ESPEAK" --noises "$NOISES"
  --snrs "$SNRS" --noise-seconds "$NOISE_SECONDS" --wake-every "$WAKE_EVERY" --wake-conds "$WAKE_CONDS")
[ "$WAKE" = 1 ] && args+=(--wake-corpus "$WAKE_CORPUS")
if [ "$(cat "$CORPUS/.args" 2>/dev/null)" != "$(sha256sum bench/noise/mix.py | cut -c1-16) ${args[*]}" ]; then
  rm -rf "$CORPUS"
  log "corpus: ${args[*]}"
  "$PY" bench/noise/mix.py "${args[@]}"
  echo "$(sha256sum bench/noise/mix.py | cut -c1-16) ${args[*]}" >"$CORPUS/.args"
fi
conds=clean
for n in $NOISES; do for s in $SNRS; do conds="$conds $n$s"; done; done
conds=${CONDS:-$conds}
[ "$conds" != none ] || conds=
STAGES=${STAGES:-wer noise wake report}
stage() { [[ " $STAGES " == *" $1 "* ]]; }
REUSE=${REUSE:-0}

# --- preprocessing candidates -------------------------------------------------
preconds=
if [[ " $PRE " == *" speex"* ]] && [ ! -x build/speexdsp/speexprep ]; then
  # Debian's libspeexdsp-dev unpacked into build/ (nothing installed on the host)
  mkdir -p build/speexdsp/deb
  (cd build/speexdsp/deb && apt-get download libspeexdsp-dev libspeexdsp1 >&2 && for d in *.deb; do dpkg -x "$d" ..; done)
  cc -O2 -Ibuild/speexdsp/usr/include bench/noise/speexprep/speexprep.c \
    "build/speexdsp/usr/lib/$(gcc -print-multiarch)/libspeexdsp.a" -lm -o build/speexdsp/speexprep
fi
if [[ " $PRE " == *" rnnoise "* ]]; then
  req=bench/noise/requirements.txt venv=$(dirname "$(dirname "$PY")")
  if [ "$(cat "$venv/.noise-requirements.sha256" 2>/dev/null)" != "$(sha256sum "$req" | cut -d' ' -f1)" ]; then
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
    sha256sum "$req" | cut -d' ' -f1 >"$venv/.noise-requirements.sha256"
  fi
fi
for p in $PRE; do
  for c in $PRE_CONDS; do
    [ -d "$CORPUS/$c" ] || continue
    if [ ! -d "$CORPUS/$c+$p" ]; then
      log "prep $p on $c"
      "$PY" bench/noise/prep.py --method "$p" --in "$CORPUS/$c" --out "$CORPUS/$c+$p.tmp"
      mv "$CORPUS/$c+$p.tmp" "$CORPUS/$c+$p"
    fi
    preconds="$preconds $c+$p"
  done
done

# --- WER per condition ---------------------------------------------------------
wconds="$conds $preconds"
stage wer || wconds=
for c in $wconds; do
  files=("$CORPUS/$c"/*.wav)
  for sys in $SYSTEMS; do
    case $c in *+*) [ "$sys" = agorad ] || continue ;; esac # candidates before agorad only
    o=$OUT/$c.$sys
    [ "$REUSE" = 1 ] && [ -s "$o.time" ] && continue
    log "$c $sys (${#files[@]} clips)"
    case $sys in
      agorad)
        run "$o.time" build/bin/agorad transcribe --model "$MODEL" --vad-model "$VAD" --threads "$THREADS" \
          --lang en "${files[@]}" >"$o.json" 2>"$o.err"
        jq -r '[(.file | split("/") | last), .text, .lang] | @tsv' "$o.json" >"$o.tsv" ;;
      fw-int8)
        run "$o.time" "$PY" bench/peers/fw_transcribe.py --model "$CACHE/ct2/tiny.en" --compute-type int8 \
          --threads "$THREADS" --lang en "${files[@]}" >"$o.tsv" 2>"$o.err" ;;
      *) log "unknown system $sys"; exit 2 ;;
    esac
  done
done

# --- noise alone ---------------------------------------------------------------
if [ "$NOISE_SECONDS" != 0 ] && stage noise; then
  for n in ${NOISE_RUN:-$NOISES}; do
    o=$OUT/noiseonly-$n.agorad
    log "noise alone: $n ($NOISE_SECONDS s)"
    run "$o.time" build/bin/agorad transcribe --model "$MODEL" --vad-model "$VAD" --threads "$THREADS" \
      --lang en --pack=false "$CORPUS/noiseonly/$n.wav" >"$o.json" 2>"$o.err"
  done
fi

# --- wake verdict under noise --------------------------------------------------
if [ "$WAKE" = 1 ] && stage wake; then
  o=$OUT/wake.agorad
  log "wake positives: $(($(wc -l <"$CORPUS/wake.tsv") - 1)) files"
  awk -F'\t' -v d="$CORPUS" 'NR > 1 {print d "/" $1}' "$CORPUS/wake.tsv" >"$o.files"
  run "$o.time" build/bin/agorad transcribe --model "$MODEL" --vad-model "$VAD" --threads "$THREADS" \
    --lang en --pack=false $(cat "$o.files") >"$o.json" 2>"$o.err"
fi

# --- report --------------------------------------------------------------------
stage report || exit 0
{
  echo "# noisebench $(date -u +%FT%TZ): tiny.en (agorad q8_0, faster-whisper int8), threads $THREADS, nice $NICE, $(git rev-parse --short HEAD); load before: $LOAD0, after: $(cut -d" " -f1-3 /proc/loadavg), $(nproc) cores"
  echo
  rep=(-corpus "$CORPUS" -out "$OUT" -conds "$conds" -pre "$preconds" -systems "$SYSTEMS")
  [ "$NOISE_SECONDS" = 0 ] || rep+=(-noises "$NOISES")
  [ "$WAKE" = 1 ] && rep+=(-wake)
  go run ./bench/noise "${rep[@]}"
} | tee "$OUT/noise.md"
exit
}

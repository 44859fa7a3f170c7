#!/usr/bin/env bash
# wakebench: does the daemon hear its name? (issue 21; docs/wake.md)
#
# Makes the corpus (corpus.py: the name at the start and mid-sentence and
# the listen words in English and Dutch by every espeak-ng voice and
# variant, clean and at 10 dB SNR; near-misses, the shared recordings and
# an hour of babble), runs `agorad transcribe` over it once per model and
# system, and scores each run (score.py): detection per language and
# position, false wakes per hour and on the near-misses, the question's
# WER, the spotter's time against whisper's, and each run's CPU time.
#
#   MODELS   "tiny.en-q8_0:en base-q8_0:auto" (model:language; tiny.en
#            gets the English positives and every negative)
#   SYSTEMS  "spotter" and/or text, biasN (whisper's logit bias N, no
#            spotter): text = whisper's text alone (the rules as before
#            issue 21), spotter = the daemon's default; a spotter run is
#            also scored on its text alone
#   KINDS    "clean noise10 nearmiss clip babble": the corpus kinds run
#   EVERY    1: every file; N: every Nth (near-misses always all)
#   SPOT_RUN the spotter threshold of the run (default: the head's); with
#   THRESHOLDS "0.9 0.99" the spotter run is also scored at each of these
#   ENGINES  "flite festival piper": English voices made by engines the
#            spotter never trained on (espeak-ng is always in); "kokoro"
#            adds Kokoro-82M's speakers in English and Dutch
#   SMALL=1  the make-test-sized corpus        OUT  bench/out/wake
#   NICE     10                                THREADS 2
set -euo pipefail
cd "$(dirname "$0")/../.."
MODELS=${MODELS:-tiny.en-q8_0:en base-q8_0:auto}
SYSTEMS=${SYSTEMS:-spotter}
OUT=${OUT:-bench/out/wake}
NICE=${NICE:-10}
THREADS=${THREADS:-2}
KINDS=${KINDS:-clean noise10 nearmiss clip babble}
EVERY=${EVERY:-1}
SHARED=${AGORAD_SHARED:-$PWD/../shared}
CORPUS=$OUT/corpus${SMALL:+-small}
mkdir -p "$OUT"
[ -x build/bin/agorad ] || make -s build
[ -d models/kws ] || make -s models
ENGINES=${ENGINES-flite festival piper}
THRESHOLDS=${THRESHOLDS:-}
if [[ " $ENGINES " == *" piper "* || " $ENGINES " == *" kokoro "* ]]; then
  venv=build/wakebench-venv
  bash scripts/pyvenv.sh "$venv" bench/wakebench/requirements-engines.txt
  export PIPER=$PWD/$venv/bin/piper KOKORO=$PWD/$venv/bin/python
fi
if [ ! -f "$CORPUS/corpus.tsv" ]; then
  python3 bench/wakebench/corpus.py --out "$CORPUS" --shared "$SHARED" ${SMALL:+--small} \
    --engines "$(echo $ENGINES | tr ' ' ,)" >&2
fi
report=$OUT/wake${SMALL:+-small}.md
runs=()
for mv in $MODELS; do
  model=${mv%%:*} lang=${mv#*:}
  poslangs=en
  [ "$lang" = en ] || poslangs=en,nl
  files=$(awk -F'\t' -v l="$poslangs" -v d="$CORPUS" -v k=" $KINDS " -v e="$EVERY" \
    'NR > 1 && ($2 == "neg" || index(l, $3)) && index(k, " " $5 " ") && (NR % e == 0 || $5 == "nearmiss") { print d "/" $1 }' "$CORPUS/corpus.tsv")
  for sys in $SYSTEMS; do
    case $sys in
      text) flags=(--spotter off --wake-bias 0) ;;
      spotter) flags=(--wake-bias 0 ${SPOT_RUN:+--spotter-threshold "$SPOT_RUN"}) ;;
      bias*) flags=(--spotter off --wake-bias "${sys#bias}") ;;
      *) echo "wakebench: unknown system $sys" >&2; exit 2 ;;
    esac
    run=$OUT/$model-$lang-$sys${SMALL:+-small}$( [ "$EVERY" = 1 ] || echo "-every$EVERY")$(echo " $KINDS" | tr -d ' ' | sed 's/^/-/; s/-cleannoise10nearmissclipbabble$//').jsonl
    echo "$files" >"$run.files"
    echo "wakebench: $model $lang $sys" >&2
    start=$(date +%s)
    TIMEFORMAT="%U %S"
    cpu=$( { time (nice -n "$NICE" build/bin/agorad transcribe --model "models/ggml-$model.bin" \
        --lang "$lang" --threads "$THREADS" --pack=false "${flags[@]}" $files >"$run" 2>"$run.err"); } 2>&1 | tail -n 1)
    took=$(( $(date +%s) - start ))
    {
      python3 bench/wakebench/score.py "$CORPUS" "$run" --label "$model, --lang $lang, $sys" --langs "$poslangs" --files "$run.files" --json "$run.score.json"
      for th in $THRESHOLDS; do # the same run, the spotter at a higher threshold
        python3 bench/wakebench/score.py "$CORPUS" "$run" --label "$model, --lang $lang, spotter at $th" --threshold "$th" \
          --langs "$poslangs" --files "$run.files" --json "$run.th$th.score.json"
      done
      if [ "$sys" = spotter ]; then # the same run, whisper's text alone
        python3 bench/wakebench/score.py "$CORPUS" "$run" --label "$model, --lang $lang, text (the same run)" --key text_wake \
          --langs "$poslangs" --files "$run.files" --json "$run.text.score.json"
      fi
      echo "process CPU (user sys, s): $cpu; wall $took s; $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD), load after $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
      echo
    } >"$run.md"
    runs+=("$run.md")
  done
done
# The report: every run of this invocation (other runs stay in $OUT/*.md).
cat "${runs[@]}" | tee "$report"

#!/usr/bin/env bash
# kws-head.sh: the keyword spotter for any name, from its text alone
# (make kws-head NAME=computer LANGS=en OUT=build/kws/computer).
# Synthesises the name, carriers and near-miss words (found in the word
# lists by sound) with espeak-ng, flite and festival, embeds them with the
# daemon's own front end (models/kws), fits the head with numpy and
# chooses its threshold on the development speakers, then teaches the
# gate. OUT gets head.json, gate.json, report.txt (per split) and
# times.txt; `agorad transcribe --spotter-head OUT` and the daemon's
# wake.spotter_head read it. Fixed seed (KWS_SEED, default 1).
#   NAME   the name (required)    LANGS  en, nl or en,nl (default en)
#   OUT    output directory (default build/kws/NAME)
#   KWS_POS, KWS_NEG  positive and negative clips (default 2000, 4000)
#   KWS_MEMBERS  networks of the head, hidden:seed,... (default 64:1,64:2)
#   KWS_EPOCHS, KWS_PATIENCE  epochs at most, and without a better dev recall
#   KWS_FA_PER_HOUR  false accepts an hour of dev negatives the threshold allows (0.5)
#   KWS_SPEECH_HOURS, KWS_SPEECH_DEV_HOURS  hours of running speech without the
#     name, for the training and (other voices, other sentences) for the
#     threshold (default 4 and 3); KWS_SPEECH_STRIDE  every how many of its
#     windows the training takes (2; 0: none, the threshold still counts them)
#   KWS_GATE=0  no gate (it saves CPU at run time, never changes a verdict)
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${NAME:?NAME: the name to spot, e.g. NAME=computer}
LANGS=${LANGS:-en}
OUT=${OUT:-build/kws/$NAME}
OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
VENV=build/kws-venv
bash scripts/pyvenv.sh "$VENV" wake/kws/train/requirements.txt
[ -f models/kws/embedding_model.tflite ] || make -s models
# The spotter's package needs only libdl (not whisper's shim, so no goenv).
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
go build -o build/bin/kws-embed ./wake/kws/train/embed
PY=$PWD/$VENV/bin/python EMBED=$PWD/build/bin/kws-embed KWS=$PWD/models/kws
cd wake/kws/train
: >"$OUT/times.txt"
step() {
  local t0=$SECONDS
  nice -n 10 "$PY" -m kwshead "$@"
  echo "$1 $((SECONDS - t0)) s" | tee -a "$OUT/times.txt" >&2
}
step gen "$OUT" "$NAME" "$LANGS"
step speech "$OUT" "$NAME" "$LANGS"
step embed "$OUT" "$EMBED" "$KWS"
step fit "$OUT"
if [ "${KWS_GATE:-1}" != 0 ]; then # the gate changes the cost, not the verdict (kws.Spotter.SetGate)
  KWS_GATE_EPOCHS=${KWS_GATE_EPOCHS:-4} step gate "$OUT"
fi
echo "kws-head: wrote $OUT (head.json, gate.json, report.txt); $(awk '{s+=$2} END {print s}' "$OUT/times.txt") s" >&2

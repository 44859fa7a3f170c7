#!/usr/bin/env bash
# kws-train.sh: retrain the keyword spotter's head for "Agora" (wake/kws).
# Synthesises the training clips with espeak-ng, flite and sox, embeds them with
# the daemon's own front end (models/kws, from make models), trains the
# small dense head with numpy in a venv (build/kws-venv, pinned
# wake/kws/train/requirements.txt) and writes wake/kws/agora.json, then the
# late head on the same clips (windows that hold the words after the name;
# kws.Spotter.SetLate) into wake/kws/late.json, and the gate taught the
# head's logit into wake/kws/gate.json; the daemon embeds all three.
# About two hours on 2 cores (docs/wake.md).
#   OUT  work directory (default build/kws)   HEAD  output (default wake/kws/agora.json)
#   KWS_KOKORO  positives per language said by three of Kokoro-82M's speakers
#        (train.py gen-kokoro, in the venv bench/wakebench/run.sh uses; 0, the
#        default: none; the shipped head has none, docs/wake.md "People's
#        voices in training")
#   KWS_NOISY  positives copied under a crowd of talkers or a machine, and as
#        many negatives (train.py gen-noisy; 0, the default: none; tried in
#        issue 21's eleventh round, not in the shipped head, docs/wake.md
#        "Talkers behind the name")
#   LATE the late head's output (default wake/kws/late.json; "" skips it)
#   GATE the gate's output (default wake/kws/gate.json; "" skips it): a small
#        network taught the head's logit, which runs the head only where it
#        passes (kws.Spotter.SetGate; retrain it with every new head)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/kws}
HEAD=${HEAD:-wake/kws/agora.json}
LATE=${LATE-wake/kws/late.json}
GATE=${GATE-wake/kws/gate.json}
VENV=build/kws-venv
bash scripts/pyvenv.sh "$VENV" wake/kws/train/requirements.txt
KWS_KOKORO=${KWS_KOKORO:-0}
if [ "$KWS_KOKORO" != 0 ]; then
  # Kokoro-82M's speakers (gen-kokoro) speak in the wake benchmark's venv.
  bash scripts/pyvenv.sh build/wakebench-venv bench/wakebench/requirements-engines.txt
  export KOKORO=$PWD/build/wakebench-venv/bin/python KWS_KOKORO KWS_SETS=clips,kokoro
fi
KWS_NOISY=${KWS_NOISY:-0}
if [ "$KWS_NOISY" != 0 ]; then
  export KWS_NOISY KWS_SETS=${KWS_SETS:-clips},noisy
fi
[ -f models/kws/embedding_model.tflite ] || make -s models
eval "$(make -s goenv)"
go build -o build/bin/kws-embed ./wake/kws/train/embed
nice -n 10 "$VENV/bin/python" wake/kws/train/train.py gen "$OUT"
if [ "$KWS_KOKORO" != 0 ]; then
  nice -n 10 "$VENV/bin/python" wake/kws/train/train.py gen-kokoro "$OUT"
fi
if [ "$KWS_NOISY" != 0 ]; then
  nice -n 10 "$VENV/bin/python" wake/kws/train/train.py gen-noisy "$OUT"
fi
nice -n 10 "$VENV/bin/python" wake/kws/train/train.py embed "$OUT" build/bin/kws-embed models/kws
nice -n 10 "$VENV/bin/python" wake/kws/train/train.py fit "$OUT" "$HEAD"
if [ -n "$LATE" ]; then
  # The verdict's threshold (kws.Verdict) is chosen with both heads on bench/kwsbench.
  # Never with Kokoro's clips: with them it let "agoraphobia" through (docs/wake.md).
  KWS_SETS=clips KWS_AFTER=0.32:0.64 KWS_WITH= KWS_MEMBERS=32:32,64:31 KWS_THRESHOLD=0.995 \
    nice -n 10 "$VENV/bin/python" wake/kws/train/train.py fit "$OUT" "$LATE"
fi
if [ -n "$GATE" ]; then
  nice -n 10 "$VENV/bin/python" wake/kws/train/train.py gate "$OUT" "$HEAD" "$GATE"
fi

#!/usr/bin/env bash
# kws-train.sh: retrain the keyword spotter's head for "Agora" (wake/kws).
# Synthesises the training clips with espeak-ng and sox, embeds them with
# the daemon's own front end (models/kws, from make models), trains the
# small dense head with numpy in a venv (build/kws-venv, pinned
# wake/kws/train/requirements.txt) and writes wake/kws/agora.json, then the
# late head on the same clips (windows that hold the words after the name;
# kws.Spotter.SetLate) into wake/kws/late.json, and the gate taught the
# head's logit into wake/kws/gate.json; the daemon embeds all three.
# About two hours on 2 cores (docs/wake.md).
#   OUT  work directory (default build/kws)   HEAD  output (default wake/kws/agora.json)
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
req=wake/kws/train/requirements.txt
if [ "$(cat "$VENV/.req" 2>/dev/null)" != "$(sha256sum "$req" | cut -d' ' -f1)" ]; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$req"
  sha256sum "$req" | cut -d' ' -f1 >"$VENV/.req"
fi
[ -f models/kws/embedding_model.tflite ] || make -s models
eval "$(make -s goenv)"
go build -o build/bin/kws-embed ./wake/kws/train/embed
nice -n 10 "$VENV/bin/python" wake/kws/train/train.py gen "$OUT"
nice -n 10 "$VENV/bin/python" wake/kws/train/train.py embed "$OUT" build/bin/kws-embed models/kws
nice -n 10 "$VENV/bin/python" wake/kws/train/train.py fit "$OUT" "$HEAD"
if [ -n "$LATE" ]; then
  # The verdict's threshold (kws.Verdict) is chosen with both heads on bench/kwsbench.
  KWS_AFTER=0.32:0.64 KWS_WITH= KWS_MEMBERS=32:32,64:31 KWS_THRESHOLD=0.995 \
    nice -n 10 "$VENV/bin/python" wake/kws/train/train.py fit "$OUT" "$LATE"
fi
if [ -n "$GATE" ]; then
  nice -n 10 "$VENV/bin/python" wake/kws/train/train.py gate "$OUT" "$HEAD" "$GATE"
fi

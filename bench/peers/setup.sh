#!/usr/bin/env bash
# setup.sh: the peers bench/speechbench.sh measures agorad against, on the
# same weights: faster-whisper (pinned, requirements.txt) in its own venv, and
# whisper-cli is built from the pinned source with agorad (scripts/whisper.sh).
# Idempotent; prints the venv's python on stdout.
#   AGORAD_BENCH_VENV  where the venv goes (default /var/cache/agorad/bench-venv)
set -euo pipefail
cd "$(dirname "$0")"
VENV=${AGORAD_BENCH_VENV:-/var/cache/agorad/bench-venv}
bash ../../scripts/pyvenv.sh "$VENV" requirements.txt

echo "$VENV/bin/python"

#!/usr/bin/env bash
# setup.sh: the peers bench/speechbench.sh measures agorad against, on the
# same weights: faster-whisper (pinned, requirements.txt) in its own venv, and
# whisper-cli is built from the pinned source with agorad (scripts/whisper.sh).
# Idempotent; prints the venv's python on stdout.
#   AGORAD_BENCH_VENV  where the venv goes (default /var/cache/agorad/bench-venv)
set -euo pipefail
cd "$(dirname "$0")"
VENV=${AGORAD_BENCH_VENV:-/var/cache/agorad/bench-venv}
log() { printf 'bench/peers/setup: %s\n' "$*" >&2; }
stamp="$VENV/.requirements.sha256"
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing faster-whisper into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r requirements.txt >&2
  echo "$want" >"$stamp"
fi

echo "$VENV/bin/python"

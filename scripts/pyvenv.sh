#!/usr/bin/env bash
# pyvenv.sh DIR REQUIREMENTS: makes the venv DIR from the pinned
# REQUIREMENTS, and again whenever they change (their hash in DIR/.req).
# For the benchmarks' and the spotter trainer's Python, which the daemon
# never runs. Prints nothing on stdout (callers capture theirs).
set -euo pipefail
venv=$1 req=$2
if [ "$(cat "$venv/.req" 2>/dev/null)" != "$(sha256sum "$req" | cut -d' ' -f1)" ]; then
  echo "pyvenv: installing $req into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
  sha256sum "$req" | cut -d' ' -f1 >"$venv/.req"
fi

#!/usr/bin/env bash
# The reference graph (refgraph/): install its pinned Python dependencies into
# a virtual environment once, then serve it or test it.
#
#   scripts/refgraph.sh venv         install if needed; the last line printed is the venv's python
#   scripts/refgraph.sh serve PORT   serve http://127.0.0.1:PORT/agui until SIGTERM (exec, so the signal reaches uvicorn)
#   scripts/refgraph.sh test         ruff check + pytest
#   scripts/refgraph.sh pytools DIR...  the same on other Python directories
#
# REFGRAPH_VENV overrides the venv directory (default refgraph/.venv), PYTHON
# the interpreter that creates it (3.11 or newer). The venv is rebuilt when
# refgraph/requirements.txt changes; concurrent callers wait on a lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${REFGRAPH_VENV:-$root/refgraph/.venv}
req=$root/refgraph/requirements.txt
py=${PYTHON:-python3}

ensure_venv() {
	local want stamp=$venv/.requirements.sha256
	want=$(sha256sum "$req" | cut -d' ' -f1)
	if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	mkdir -p "$(dirname "$venv")"
	exec 9>"$venv.lock"
	flock 9
	if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		return 0 # another caller installed it while we waited
	fi
	"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
		{ echo "refgraph: $py is older than Python 3.11" >&2; exit 1; }
	rm -rf "$venv"
	"$py" -m venv "$venv" ||
		{ echo "refgraph: '$py -m venv' failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
	"$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$req" >&2
	echo "$want" >"$stamp"
	exec 9>&-
}

cmd=${1:-}
case $cmd in
venv)
	ensure_venv
	echo "$venv/bin/python"
	;;
serve)
	port=${2:-}
	[[ $port =~ ^[0-9]+$ ]] || { echo "usage: $0 serve PORT" >&2; exit 2; }
	ensure_venv
	cd "$root"
	export PYTHONPATH=$root/refgraph${PYTHONPATH:+:$PYTHONPATH}
	exec "$venv/bin/python" -m agora_refgraph --host 127.0.0.1 --port "$port"
	;;
test)
	ensure_venv
	cd "$root/refgraph"
	"$venv/bin/ruff" check .
	"$venv/bin/ruff" format --check .
	# pytest exits 5 when it collects no test: that is a failure here too.
	"$venv/bin/python" -m pytest -q
	;;
pytools)
	# ruff and pytest, with the reference graph's pinned tools, on other
	# Python directories of the project (each with its own ruff.toml or
	# bench/wakebench's).
	shift
	ensure_venv
	cd "$root"
	for d in "$@"; do
		cfg=$d/ruff.toml
		[ -f "$cfg" ] || cfg=bench/wakebench/ruff.toml
		"$venv/bin/ruff" check --config "$cfg" "$d"
		"$venv/bin/ruff" format --check --config "$cfg" "$d"
	done
	"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
	;;
*)
	echo "usage: $0 venv | serve PORT | test | pytools DIR..." >&2
	exit 2
	;;
esac

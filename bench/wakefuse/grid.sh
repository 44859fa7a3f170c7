#!/usr/bin/env bash
# Rescores wakebench runs with the fused verdict over a grid of thresholds
# (bench/wakefuse; docs/wake.md): one markdown row per setting, the
# positives per language and position, near-miss files waking, shared
# recordings waking and false wakes per hour of babble.
#
#   bash bench/wakefuse/grid.sh CORPUS LANGS RUN.jsonl...
#
#   SURE  "0.992 0.995"      the spotter's own threshold (its verdict's)
#   FUSE  "0 0.5 0.7 0.9"    the band's floor (0: off, the spotter alone)
#   LIKE  "0.6 0.7"          wake.fuse_like
#   TAIL  "true"             "true false": also each setting without the tails
#         the runs transcribed again (wakefuse -tail)
#   BABBLE_HOURS  the babble the runs' babble files were picked from, when
#         they are only those where the spotter alone (kwsbench -dump) came
#         near the band: the others cannot wake in it (default: the files run)
# Each RUN.jsonl needs its RUN.jsonl.files (run.sh writes it); the runs'
# rows are pooled (e.g. positives from one run, babble from another).
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=$1 langs=$2
shift 2
SURE=${SURE:-0.992 0.995}
FUSE=${FUSE:-0 0.5 0.7 0.9}
LIKE=${LIKE:-0.6 0.7}
TAIL=${TAIL:-true}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/wakefuse" ./bench/wakefuse
# score.py once per run for whisper's text alone, then per setting.
score() { # label, rescored jsonl per run (in $tmp/r*.jsonl)
  local i=0 out=()
  for run in "$@"; do
    i=$((i + 1))
    python3 bench/wakebench/score.py "$corpus" "$tmp/r$i.jsonl" --label x --langs "$langs" \
      --files "$run.files" --json "$tmp/s$i.json" >/dev/null
    out+=("$tmp/s$i.json")
  done
  jq -rs --arg lab "$label" --arg langs "$langs" --arg bhall "${BABBLE_HOURS:-}" '
    . as $all |
    def cell($k): [$all[] | .[$k] // empty] as $c | if ($c | length) == 0 then "–" else
      ([$c[] | .[0][0] + .[1][0]] | add) as $n | ([$c[] | .[0][1] + .[1][1]] | add) as $d |
      "\($n)/\($d) (\(if $d > 0 then ($n * 100 / $d | round) else 0 end) %)" end;
    ([.[] | .false.babble // 0] | add) as $bw |
    (if $bhall != "" then ($bhall | tonumber) else ([.[] | .neg_hours_by_kind.babble // 0] | add) end) as $bh |
    "| \($lab) | " + ([($langs | split(","))[] as $l | ("start", "mid", "listen") | cell("\($l)-\(.)")] | join(" | ")) +
    " | \([.[] | .nearmiss | length] | add) | \([.[] | .false.clip // 0] | add) | \(if $bh > 0 then "\($bw) (\($bw / $bh * 10 | round / 10)/h)" else "–" end) |"' "${out[@]}"
}
hdr="| setting |"
sep="|---|"
for l in ${langs//,/ }; do
  for p in start mid listen; do hdr+=" $l $p |"; sep+="---|"; done
done
echo "$hdr near-miss files | recording wakes | babble wakes |"
echo "$sep---|---|---|"
i=0
for run in "$@"; do # whisper's text alone: the run's text_wake
  i=$((i + 1))
  jq -c '.wake = .text_wake' "$run" >"$tmp/r$i.jsonl"
done
label="whisper's text alone" score "$@"
for sure in $SURE; do
  for fuse in $FUSE; do
    for like in $LIKE; do
      [ "$fuse" = 0 ] && [ "$like" != "${LIKE%% *}" ] && continue # like is moot when fuse is off
      for tail in $TAIL; do
        i=0
        for run in "$@"; do
          i=$((i + 1))
          "$tmp/wakefuse" -sure "$sure" -fuse "$fuse" -like "$like" -tail="$tail" <"$run" >"$tmp/r$i.jsonl"
        done
        if [ "$fuse" = 0 ]; then label="spotter ≥ $sure"; else label="spotter ≥ $sure, or ≥ $fuse and like ≥ $like"; fi
        [ "$tail" = false ] && label+=", no tail heard again"
        score "$@"
      done
    done
  done
done

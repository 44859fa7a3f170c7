#!/usr/bin/env bash
# speechbench.sh: agorad transcribe against whisper-cli (Debian sid's
# whisper.cpp-tools, run from a debootstrap sid root) on the same model,
# audio and threads, in one run. Prints real-time factors and their ratio.
#
#   MODEL    whisper model file (default: shared test model tiny.en)
#   THREADS  threads for both (default 2)
#   RUNS     runs per measurement, the median is reported (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${AGORAD_SHARED:-$(pwd)/../shared}
MODEL=${MODEL:-$SHARED/models/for-tests-ggml-tiny.en.bin}
VAD=$SHARED/models/for-tests-silero-v6.2.0-ggml.bin
THREADS=${THREADS:-2}
RUNS=${RUNS:-3}
OUT=bench/out; mkdir -p "$OUT"
ROOT=$(bash scripts/setup-whisper-cli.sh)
make -s build
AGORAD=$(pwd)/build/bin/agorad

JFK=$(go env GOMODCACHE)/github.com/ggerganov/whisper.cpp/bindings/go@$(go list -m -f '{{.Version}}' github.com/ggerganov/whisper.cpp/bindings/go)/samples/jfk.wav
work=$(mktemp -d); trap 'umount "$ROOT/proc" 2>/dev/null || true; rm -rf "$work" "$ROOT/tmp/agorad-bench"' EXIT
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mkdir -p "$ROOT/tmp/agorad-bench"

# A long recording that is half silence: 6 x (speech clip, then as much silence).
sox "$JFK" -r 16000 -c 1 -b 16 "$work/speech.wav"
parts=()
for i in 1 2 3 4 5 6; do parts+=("$work/speech.wav" "$work/sil.wav"); done
sox -n -r 16000 -c 1 -b 16 "$work/sil.wav" trim 0 "$(soxi -D "$work/speech.wav")"
sox "${parts[@]}" "$work/long.wav"
sox -n -r 16000 -c 1 -b 16 "$work/silence60.wav" trim 0 60

cp "$MODEL" "$ROOT/tmp/agorad-bench/model.bin"
cp "$JFK" "$work/long.wav" "$ROOT/tmp/agorad-bench/"

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
timeit() { # prints wall seconds of the command
  local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }; e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}
measure() { # name file-in-root file-outside
  local name=$1 rootfile=$2 file=$3 dur a w
  dur=$(soxi -D "$file")
  a=$(for i in $(seq "$RUNS"); do timeit "$AGORAD" transcribe --model "$MODEL" --vad-model "$VAD" --threads "$THREADS" --lang en "$file"; done | median)
  w=$(for i in $(seq "$RUNS"); do timeit chroot "$ROOT" whisper-cli -m /tmp/agorad-bench/model.bin -f "/tmp/agorad-bench/$rootfile" -t "$THREADS" -l en -np; done | median)
  printf '%-28s audio %6.1fs  agorad %6.2fs (RTF %.3f)  whisper-cli %6.2fs (RTF %.3f)  whisper-cli/agorad %.2fx\n' \
    "$name" "$dur" "$a" "$(echo "$a/$dur" | bc -l)" "$w" "$(echo "$w/$dur" | bc -l)" "$(echo "$w/$a" | bc -l)"
}
{
  echo "# speechbench $(date -u +%FT%TZ) model=$(basename "$MODEL") threads=$THREADS runs=$RUNS (median wall time, model load included for both)"
  measure "jfk.wav (11 s speech)" jfk.wav "$JFK"
  measure "long, half silence" long.wav "$work/long.wav"
  # CPU while listening to silence: whole-process CPU of agorad on 60 s of
  # silence, minus the same process on 1 s of silence (model load and start-up).
  sox -n -r 16000 -c 1 -b 16 "$work/silence1.wav" trim 0 1
  cpu() { /usr/bin/time -f '%U %S' "$AGORAD" transcribe --model "$MODEL" --vad-model "$VAD" --threads "$THREADS" "$1" 2>&1 >/dev/null | tail -1 | awk '{print $1+$2}'; }
  c60=$(for i in $(seq "$RUNS"); do cpu "$work/silence60.wav"; done | median)
  c1=$(for i in $(seq "$RUNS"); do cpu "$work/silence1.wav"; done | median)
  printf 'silence: %.3f CPU-s for 59 s of audio = %.2f%% of one core at real time\n' "$(echo "$c60-$c1" | bc -l)" "$(echo "($c60-$c1)/59*100" | bc -l)"
  # Peak memory (max RSS) of one whole run on jfk.wav, model included.
  rss() { /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1; }
  ra=$(rss "$AGORAD" transcribe --model "$MODEL" --vad-model "$VAD" --threads "$THREADS" --lang en "$JFK")
  rw=$(rss chroot "$ROOT" whisper-cli -m /tmp/agorad-bench/model.bin -f /tmp/agorad-bench/jfk.wav -t "$THREADS" -l en -np)
  printf 'peak RSS on jfk.wav: agorad %d MiB, whisper-cli %d MiB, agorad/whisper-cli %.2fx\n' $((ra/1024)) $((rw/1024)) "$(echo "$ra/$rw" | bc -l)"
} | tee "$OUT/speechbench.txt"

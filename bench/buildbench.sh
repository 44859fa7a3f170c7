#!/usr/bin/env bash
# buildbench.sh: the project's whisper.cpp build (scripts/whisper.sh, the
# pinned source) against another build of whisper.cpp, on the same weights,
# in one run, interleaved: one encoder pass (whisper-bench), JFK, and the
# English reference clips of ../shared/audio each as its own file (one
# whisper-cli process per clip, greedy), wall and CPU seconds. Used to keep
# the faster build when the pin or the build options change (issue 20).
#
#   OTHER_ROOT=/path/to/root bash bench/buildbench.sh
#
# OTHER_ROOT is a root file system holding the other build's whisper-cli and
# whisper-bench in /usr/bin (e.g. a debootstrap root with a distribution's
# whisper.cpp-tools); they run there with chroot, so its C library is its own.
#   MODELS   model names in models/ (default "tiny.en-q8_0 base-q8_0")
#   THREADS  2;  ROUNDS  repetitions of the encoder pass and JFK (default 3)
#   CLIPS    0 skips the clip set
set -euo pipefail
cd "$(dirname "$0")/.."
OTHER=${OTHER_ROOT:?OTHER_ROOT=/path/to/a root with /usr/bin/whisper-cli}
MODELS=${MODELS:-tiny.en-q8_0 base-q8_0}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
CLIPS=${CLIPS:-1}
SHARED=${AGORAD_SHARED:-$PWD/../shared}
OUT=${OUT:-bench/out}; mkdir -p "$OUT"
make -s whisper
OURS=$PWD/build/whisper/$(dpkg --print-architecture)/bin
log() { printf 'buildbench: %s\n' "$*" >&2; }
work=$OTHER/tmp/buildbench.$$
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/clips"
en=$(awk -F'\t' 'NR>1 && $3=="en" && $4!="" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort)
for c in $en; do cp "$SHARED/audio/$c" "$work/clips/"; done
cp build/whisper/src/samples/jfk.wav "$work/jfk.wav"
nclips=$(ls "$work/clips" | wc -l)

# run WHICH CMD...: WHICH is ours or other; prints "wall cpu" seconds.
run() {
  local which=$1 t; shift
  t=$(mktemp)
  if [ "$which" = ours ]; then
    /usr/bin/time -o "$t" -f '%e %U %S' "$@" >/dev/null 2>>"$OUT/buildbench.err"
  else
    /usr/bin/time -o "$t" -f '%e %U %S' chroot "$OTHER" "$@" >/dev/null 2>>"$OUT/buildbench.err"
  fi
  awk '{printf "%.2f %.2f\n", $1, $2+$3}' "$t"; rm -f "$t"
}
bin() { [ "$1" = ours ] && echo "$OURS/$2" || echo "/usr/bin/$2"; }
path() { [ "$1" = ours ] && echo "$work/$2" || echo "/tmp/buildbench.$$/$2"; }
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

# encoder MODEL WHICH: ms of one encoder pass (whisper-bench's encode time).
encoder() {
  local out
  if [ "$2" = ours ]; then out=$("$(bin ours whisper-bench)" -m "$work/$1.bin" -t "$THREADS" 2>&1)
  else out=$(chroot "$OTHER" /usr/bin/whisper-bench -m "$(path other "$1.bin")" -t "$THREADS" 2>&1); fi
  echo "$out" | sed -n 's/.*encode time = *\([0-9.]*\) ms.*/\1/p' | head -1
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
log "load before: $load0; our build: $(cat build/whisper/*/VERSION | head -1)"
{
  echo "# buildbench $(date -u +%FT%TZ), $THREADS threads, load before $load0"
  printf 'model\tcell\tours\tother\tratio ours/other\n'
} >"$OUT/buildbench.tsv"
for m in $MODELS; do
  cp "models/ggml-$m.bin" "$work/$m.bin"
  declare -A enc=() jw=() jc=() e=() JW=() JC=()
  for r in $(seq "$ROUNDS"); do
    for w in ours other; do
      enc[$w]+="$(encoder "$m" "$w") "
      read -r wall cpu < <(run "$w" "$(bin "$w" whisper-cli)" -m "$(path "$w" "$m.bin")" -f "$(path "$w" jfk.wav)" -t "$THREADS" -l en -bs 1 -nf -mc 0 -np -nt)
      jw[$w]+="$wall "; jc[$w]+="$cpu "
    done
  done
  for w in ours other; do
    e[$w]=$(echo "${enc[$w]}" | tr ' ' '\n' | grep . | median)
    JW[$w]=$(echo "${jw[$w]}" | tr ' ' '\n' | grep . | median)
    JC[$w]=$(echo "${jc[$w]}" | tr ' ' '\n' | grep . | median)
  done
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "-" }'; }
  printf '%s\tencoder pass (ms, median of %s)\t%s\t%s\t%s\n' "$m" "$ROUNDS" "${e[ours]}" "${e[other]}" "$(ratio "${e[ours]}" "${e[other]}")" >>"$OUT/buildbench.tsv"
  printf '%s\tjfk wall s\t%s\t%s\t%s\n' "$m" "${JW[ours]}" "${JW[other]}" "$(ratio "${JW[ours]}" "${JW[other]}")" >>"$OUT/buildbench.tsv"
  printf '%s\tjfk CPU s\t%s\t%s\t%s\n' "$m" "${JC[ours]}" "${JC[other]}" "$(ratio "${JC[ours]}" "${JC[other]}")" >>"$OUT/buildbench.tsv"
  if [ "$CLIPS" != 0 ]; then
    declare -A cw=() cc=()
    for w in ours other; do cw[$w]=0; cc[$w]=0; done
    for c in $(ls "$work/clips"); do
      for w in ours other; do
        read -r wall cpu < <(run "$w" "$(bin "$w" whisper-cli)" -m "$(path "$w" "$m.bin")" -f "$(path "$w" "clips/$c")" -t "$THREADS" -l en -bs 1 -nf -mc 0 -np -nt)
        cw[$w]=$(awk -v a="${cw[$w]}" -v b="$wall" 'BEGIN{print a+b}'); cc[$w]=$(awk -v a="${cc[$w]}" -v b="$cpu" 'BEGIN{print a+b}')
      done
    done
    printf '%s\t%s clips, one process each: wall s\t%s\t%s\t%s\n' "$m" "$nclips" "${cw[ours]}" "${cw[other]}" "$(ratio "${cw[ours]}" "${cw[other]}")" >>"$OUT/buildbench.tsv"
    printf '%s\t%s clips, one process each: CPU s\t%s\t%s\t%s\n' "$m" "$nclips" "${cc[ours]}" "${cc[other]}" "$(ratio "${cc[ours]}" "${cc[other]}")" >>"$OUT/buildbench.tsv"
  fi
  unset enc jw jc cw cc e JW JC
  rm -f "$work/$m.bin"
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/buildbench.tsv"
column -t -s $'\t' "$OUT/buildbench.tsv"

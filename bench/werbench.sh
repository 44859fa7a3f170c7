#!/usr/bin/env bash
# werbench.sh: WER of agorad, whisper-cli and faster-whisper on the SAME
# weights, clip by clip (issue 15's accuracy table): the 68 English reference
# clips of shared/audio by group (sentences, short commands, wake words), and
# for the multilingual base also the Dutch natural recordings and the
# language each system labels every clip with.
#
# Each clip is its own input, as the accuracy tests feed them (one process
# per system, all clips in it; agorad segments each clip with Silero first,
# whisper-cli and faster-whisper decode each clip whole). WER does not depend
# on load: run it niced beside other work.
#
# PERCLIP=1 is the live pattern (issue 24): one whole process per clip and
# system (model load included, as a clip is one utterance reaching a
# freshly started CLI), CPU seconds (user+sys) summed over the clips. The
# CPU column then compares cost per utterance; state the load next to it.
# ESPEAK_NL=1 adds Dutch espeak-ng sentences (espeak-ng -v nl, transcripts
# known) to the Dutch clips of the auto and nl runs; ESPEAK_NL=N the first N.
# ESPEAK_EN=1 adds the English espeak-ng sentences the tests speak (voice
# en) to the en and auto runs, scored on their own (manifest language
# en-espeak, its own table); ESPEAK_EN=N the first N. ESPEAK_EN=wake speaks
# the wake benchmark's 85 English sentences instead (bench/wakebench/
# sentences/en_start.txt and en_mid.txt, the name taken out at the start and
# "the engineer" in its place mid-sentence: whisper's text of the rest), each
# by the next of ten espeak-ng English voices and variants.
#
# REALNL=dev or REALNL=test adds that half of the real Dutch speaker
# (shared/realdutch/flemishguy, 285 read utterances of one native speaker,
# clips fg_*.wav) to the Dutch clips; REALNL_N=N only the first N of it (a
# shorter run). The halves: metadata.psv sorted by id, odd lines dev, even
# lines test. Tune on dev (prompt words, thresholds, priors); report on test.
# Their table is scored apart from shared/audio's Dutch clips, and LANGS
# auto-nl runs language auto on the Dutch clips alone (CPU per Dutch
# utterance; with PERCLIP=0 a system's process holds all its clips, the model
# loaded once, as the daemon does).
# AGORAD_ARGS: more flags for every agorad system (a lever: --beam 2, ...;
# split on spaces), AGORAD_PROMPT: --prompt for them (one argument); put
# each lever's run in its own OUT. agorad's lines carry a fourth column,
# whisper's probability of the language it chose among the wearer's (lang_p).
#
# Systems (SYSTEMS, default all):
#   agorad agorad-q8_0             agorad transcribe, f16 / q8_0 import
#   agoradmain agoradmain-q8_0     the same with AGORAD_MAIN_BIN (another
#                                  build, e.g. main's: before and after)
#   agorad*-unpacked               --pack=false: one whisper call per
#                                  utterance in one process (the daemon's
#                                  live pattern: model loaded once)
#   agorad-q4_0                    q4_0 import
#   agorad*-steps                  --window steps: a 10.24/15.36 s encoder
#                                  window when the utterance fits with 2 s
#                                  to spare (issue 24 lever 2), e.g.
#                                  agorad-q8_0-unpacked-steps beside
#                                  agorad-q8_0-unpacked
#   wcli-greedy wcli-q8_0-greedy   whisper-cli -bs 1 -nf -mc 0 (greedy, no
#   wcli-q4_0-greedy               temperature fallback, no text context)
#   wcli wcli-q8_0                 whisper-cli defaults (beam 5, best of 5,
#                                  temperature fallback)
#   fw-int8 fw-float32             faster-whisper 1.2.1, beam 1, on the
#                                  CTranslate2 original
#   SYSTEM@VARIANT                 an agorad system on another build
#                                  of the same pinned source (issue 24
#                                  lever 3), made by scripts/whisper.sh
#                                  variant: @llamafile (-DGGML_LLAMAFILE=ON,
#                                  llamafile's tinyBLAS matrix kernels),
#                                  @nollamafile (OFF), @noomp (ggml's own
#                                  thread pool instead of OpenMP); e.g.
#                                  agorad-q8_0-unpacked@noomp
# Runs: tiny.en with language en; base with en and with auto on the English
# clips (+ the Dutch ones for auto), and nl on the Dutch ones.
#
#   MODELS tiny.en base   THREADS 2   OUT bench/out/wer   NICE 10
#   LANGS (base only; default "en auto nl"; auto-nl: auto on Dutch only)
#   PERCLIP 0   ESPEAK_NL 0   ESPEAK_EN 0   AGORAD_BIN (default build/bin/agorad)
#   AGORAD_MAIN_BIN (for the agoradmain systems)
#   EVERY 1: every Nth English clip only (a shorter run on a busy machine)
# OMP_WAIT_POLICY=passive in the environment (all systems get it) keeps
# OpenMP's spin-waiting out of the CPU column on a busy machine: at load 7
# on 2 cores it was most of agorad's CPU, and hid the steps' saving.
# Hypotheses: $OUT/<model>-<lang>-<system>.tsv ("clip<TAB>text<TAB>language");
# the tables: $OUT/wer.md.
# The body is one block, parsed before it runs: editing the file during a
# long run does not change the run.
{
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${AGORAD_SHARED:-$(pwd)/../shared}
MODELS=${MODELS:-tiny.en base}
SYSTEMS=${SYSTEMS:-agorad agorad-q8_0 wcli-greedy wcli wcli-q8_0-greedy wcli-q8_0 fw-int8 fw-float32}
THREADS=${THREADS:-2}
OUT=${OUT:-bench/out/wer}
NICE=${NICE:-10}
PERCLIP=${PERCLIP:-0}
EVERY=${EVERY:-1}
ESPEAK_NL=${ESPEAK_NL:-0}
ESPEAK_EN=${ESPEAK_EN:-0}
REALNL=${REALNL:-0}
REALNL_N=${REALNL_N:-0}
read -r -a AGORAD_ARGS <<<"${AGORAD_ARGS:-}"
[ -z "${AGORAD_PROMPT:-}" ] || AGORAD_ARGS+=(--prompt "$AGORAD_PROMPT")
CACHE=${AGORAD_MODEL_CACHE:-$(pwd)/build/cache/models}
mkdir -p "$OUT"
PY=$(bash bench/peers/setup.sh)
make -s whisper
WCLI=$(pwd)/build/whisper/$(dpkg --print-architecture)/bin/whisper-cli # the same pinned source as agorad (scripts/whisper.sh)
make -s build
[ -f models/ggml-tiny.en.bin ] || make -s models >&2 || { echo "werbench: make models failed: $(cat models/UNAVAILABLE 2>/dev/null)" >&2; exit 1; }
AGORAD=${AGORAD_BIN:-$(pwd)/build/bin/agorad}
VAD=$SHARED/models/for-tests-silero-v6.2.0-ggml.bin
# the build variants the systems name, built once (scripts/whisper.sh variant)
for sys in $SYSTEMS; do
  case $sys in
    *@llamafile) bash scripts/whisper.sh variant llamafile -DGGML_LLAMAFILE=ON ;;
    *@nollamafile) bash scripts/whisper.sh variant nollamafile -DGGML_LLAMAFILE=OFF ;;
    *@noomp) bash scripts/whisper.sh variant noomp -DGGML_OPENMP=OFF ;;
    agorad*@*) echo "werbench: unknown build variant in $sys" >&2; exit 2 ;;
    *@*) echo "werbench: $sys: only agorad systems run on a variant (whisper-cli loads its CPU module from beside itself)" >&2; exit 2 ;;
  esac
done
inroot=$(mktemp -d)
trap 'rm -rf "$inroot"' EXIT
mkdir -p "$inroot"
log() { printf 'werbench: %s\n' "$*" >&2; }
LOAD0=$(cut -d" " -f1-3 /proc/loadavg)
run() { nice -n "$NICE" "$@"; }

en=$(awk -F'\t' 'NR>1 && $3=="en" && $4!="" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort | awk -v n="$EVERY" '(NR - 1) % n == 0')
nl=$(awk -F'\t' 'NR>1 && $3=="nl" {print $1}' "$SHARED/audio/MANIFEST.tsv" | LC_ALL=C sort)
for c in $en $nl; do cp "$SHARED/audio/$c" "$inroot/"; done
MANIFEST=$inroot/MANIFEST.tsv
# the English clips not run (EVERY) are left out of the scoring too
awk -F'\t' -v keep=" $(echo $en) " 'NR == 1 || $3 != "en" || index(keep, " " $1 " ")' "$SHARED/audio/MANIFEST.tsv" >"$MANIFEST"
if [ "$ESPEAK_NL" != 0 ]; then
  i=0
  while IFS= read -r text; do
    i=$((i + 1)); [ "$ESPEAK_NL" = 1 ] || [ "$i" -le "$ESPEAK_NL" ] || break
    c=espeak_nl_$i.wav
    espeak-ng -v nl -w "$inroot/raw.wav" "$text"
    sox "$inroot/raw.wav" -r 16000 -c 1 -b 16 -e signed-integer "$inroot/$c"
    printf '%s\t0\tnl\t%s\t\tespeak-ng\t-\t-\t-\n' "$c" "$text" >>"$MANIFEST"
    nl="$nl $c"
  done <<'SENTENCES'
Zet de lamp in de keuken aan.
Hoe laat is het in Amsterdam?
Doe de voordeur op slot.
Wat voor weer wordt het morgen?
Zet een timer voor tien minuten.
Speel wat muziek in de woonkamer.
SENTENCES
fi
if [ "$REALNL" != 0 ]; then
  case $REALNL in dev) half=1 ;; test) half=0 ;; *) echo "werbench: REALNL=$REALNL: want dev or test" >&2; exit 2 ;; esac
  fg=$SHARED/realdutch/flemishguy
  while IFS='|' read -r id text; do
    c=fg_$id.wav
    sox "$fg/$id.flac" -r 16000 -c 1 -b 16 -e signed-integer "$inroot/$c"
    printf '%s\t0\tnl\t%s\t\tflemishguy\t-\t-\t-\n' "$c" "$text" >>"$MANIFEST"
    nl="$nl $c"
  done < <(LC_ALL=C sort "$fg/metadata.psv" | awk -v h="$half" -v n="$REALNL_N" 'NR % 2 == h {k++; if (n == 0 || k <= n) print}')
fi

espeak_en_voices=(en en-us en-gb-x-rp+f3 en-gb-scotland+m3 en-029 en-us+f2 en-gb-x-gbclan+klatt en-us+m7 en-gb-x-gbcwmd+f4 en+croak)
espeak_en_text() {
  if [ "$ESPEAK_EN" = wake ]; then
    sed -E 's/^(Hey |OK |Okay )?Agora, (.)/\u\2/; s/\bAgora\b/the engineer/g' \
      bench/wakebench/sentences/en_start.txt bench/wakebench/sentences/en_mid.txt
  else
    cat
  fi
}
if [ "$ESPEAK_EN" != 0 ]; then
  i=0
  while IFS= read -r text; do
    i=$((i + 1)); [ "$ESPEAK_EN" = 1 ] || [ "$ESPEAK_EN" = wake ] || [ "$i" -le "$ESPEAK_EN" ] || break
    c=espeak_en_$i.wav
    voice=en; [ "$ESPEAK_EN" = wake ] && voice=${espeak_en_voices[$(( (i - 1) % ${#espeak_en_voices[@]} ))]}
    espeak-ng -v "$voice" -w "$inroot/raw.wav" "$text"
    sox "$inroot/raw.wav" -r 16000 -c 1 -b 16 -e signed-integer "$inroot/$c"
    printf '%s\t0\ten-espeak\t%s\t\tespeak-ng\t-\t-\t-\n' "$c" "$text" >>"$MANIFEST"
    en="$en $c"
  done < <(espeak_en_text <<'SENTENCES'
Agora, the door is damaged.
The crack in the beam is not structural.
What should I write in the report about the crack in the beam?
The crack in the beam at frame four is about two millimetres wide.
Agora, the second valve is leaking.
The left pump shows a crack in the housing.
Agora, listen.
Pressure is normal.
The gutter on the east side is blocked, and the beam at grid C is deflected.
SENTENCES
)
fi

# model FILE for MODEL and SYSTEM: the f16 import, or a quantized one (made
# from the CTranslate2 original on first use).
ggml() {
  local t
  case $2 in
    *q8_0*|*q4_0*) t=${2#*-}; t=${t%-greedy}; t=${t%-steps}; t=${t%-unpacked}
      local q=$CACHE/ggml-$1-$t.bin
      [ -f "$q" ] || "$AGORAD" model import "$CACHE/ct2/$1" --type "$t" --out "$q" >/dev/null
      echo "$q" ;;
    *) echo "$(pwd)/models/ggml-$1.bin" ;;
  esac
}

# decode MODEL LANG SYSTEM CLIP...: hypotheses appended to
# $OUT/MODEL-LANG-SYSTEM.tsv, /usr/bin/time's line (wall user sys rss) to
# its .times: one process for the clips given.
decode() {
  local model=$1 lang=$2 sys=$3; shift 3
  local out=$OUT/$model-$lang-$sys.tsv files=() c
  local time=(run /usr/bin/time -a -o "$out.times" -f '%e %U %S %M')
  for c in "$@"; do files+=("$inroot/$c"); done
  # SYSTEM@VARIANT: the variant's libraries first (they share the sonames;
  # ggml loads its CPU module from beside the libggml it was loaded from)
  case $sys in agorad*@*)
    time=(run env LD_LIBRARY_PATH="$(pwd)/build/whisper/variants/${sys#*@}/lib" "${time[@]:1}")
    sys=${sys%@*} ;;
  esac
  case $sys in
    agorad*)
      local bin=$AGORAD
      case $sys in agoradmain*) bin=${AGORAD_MAIN_BIN:?agoradmain needs AGORAD_MAIN_BIN} ;; esac
      local pack=(); case $sys in *-unpacked|*-unpacked-steps) pack=(--pack=false) ;; esac
      case $sys in *-steps) pack+=(--window steps) ;; *) pack+=(--window full) ;; esac
      "${time[@]}" "$bin" transcribe --model "$(ggml "$model" "$sys")" --vad-model "$VAD" \
        --threads "$THREADS" --lang "${lang%-nl}" "${pack[@]}" ${AGORAD_ARGS[@]+"${AGORAD_ARGS[@]}"} "${files[@]}" >"$out.json" 2>>"$out.err"
      jq -r '[(.file | split("/") | last), .text, .lang, (.lang_p // "" | tostring)] | @tsv' "$out.json" >>"$out" ;;
    wcli*)
      local args=(); case $sys in *greedy) args=(-bs 1 -nf -mc 0) ;; esac
      cp "$(ggml "$model" "$sys")" "$inroot/model.bin"
      rm -f "$inroot"/*.json
      if [ ${#args[@]} -gt 0 ]; then
        "${time[@]}" "$WCLI" -m "$inroot/model.bin" -t "$THREADS" -l "${lang%-nl}" \
          "${args[@]}" -np -oj "${files[@]}" >/dev/null 2>>"$out.err"
      else
        # defaults keep up to 16k tokens of text context from one file to
        # the next in one process: one process per clip keeps clips apart
        "${time[@]}" env PATH="${WCLI%/*}:$PATH" sh -c \
          'm=$1 t=$2 l=$3; shift 3; for f; do whisper-cli -m "$m" -t "$t" -l "$l" -np -oj "$f" || exit 1; done' \
          sh "$inroot/model.bin" "$THREADS" "${lang%-nl}" "${files[@]}" >/dev/null 2>>"$out.err"
      fi
      for c in "$@"; do
        jq -r --arg f "$c" '[$f, ([.transcription[].text] | join(" ") | gsub("^ +| +$"; "")), .result.language] | @tsv' "$inroot/$c.json" >>"$out"
      done ;;
    fw-*)
      "${time[@]}" "$PY" bench/peers/fw_transcribe.py --model "$CACHE/ct2/$model" \
        --compute-type "${sys#fw-}" --threads "$THREADS" --lang "${lang%-nl}" "${files[@]}" >>"$out" 2>>"$out.err" ;;
  esac
}

for model in $MODELS; do
  if [ "$model" = tiny.en ]; then langs="en"; else langs=${LANGS:-en auto nl}; fi
  for lang in $langs; do
    case $lang in en) set -- $en ;; auto) set -- $en $nl ;; nl|auto-nl) set -- $nl ;; esac
    echo "$#" >"$OUT/$model-$lang.n"
    for sys in $SYSTEMS; do
      rm -f "$OUT/$model-$lang-$sys.tsv"*
    done
    if [ "$PERCLIP" = 1 ]; then
      # interleaved: every system on a clip before the next clip, so a
      # change in the machine's load falls on all of them alike
      log "$model $lang: $SYSTEMS, one process per clip ($# clips)"
      for c; do
        for sys in $SYSTEMS; do decode "$model" "$lang" "$sys" "$c"; done
      done
    else
      for sys in $SYSTEMS; do log "$model $lang $sys ($# clips)"; decode "$model" "$lang" "$sys" "$@"; done
    fi
    for sys in $SYSTEMS; do # the processes' times summed (peak RSS: the largest)
      awk '{w += $1; u += $2; s += $3; if ($4 > m) m = $4} END {print w, u, s, m}' \
        "$OUT/$model-$lang-$sys.tsv.times" >"$OUT/$model-$lang-$sys.tsv.time"
    done
  done
done

# --- report ------------------------------------------------------------------
{
  echo "# werbench $(date -u +%FT%TZ): threads=$THREADS, nice $NICE, clip by clip, $( [ "$PERCLIP" = 1 ] && echo "one process per clip" || echo "one process per system"), agorad $AGORAD; load before: $LOAD0, after: $(cut -d" " -f1-3 /proc/loadavg)"
  for model in $MODELS; do
    if [ "$model" = tiny.en ]; then langs="en"; else langs=${LANGS:-en auto nl}; fi
    for lang in $langs; do
      echo; echo "## $model, language $lang"; echo
      args=(); for sys in $SYSTEMS; do args+=("$sys=$OUT/$model-$lang-$sys.tsv"); done
      if [ "$lang" = nl ] || [ "$lang" = auto-nl ]; then
        if [ "$REALNL" != 0 ]; then
          echo "Real Dutch speaker, $REALNL half$( [ "$REALNL_N" != 0 ] && echo ", first $REALNL_N"):"; echo
          go run ./bench/wer -lang nl -prefix fg_ -texts=false -manifest "$MANIFEST" "${args[@]}"
          echo; echo "shared/audio's Dutch clips:"; echo
        fi
        go run ./bench/wer -lang nl -not-prefix fg_ -manifest "$MANIFEST" "${args[@]}"
      else
        go run ./bench/wer -manifest "$MANIFEST" "${args[@]}"
        if [ "$ESPEAK_EN" != 0 ]; then echo; go run ./bench/wer -lang en-espeak -manifest "$MANIFEST" "${args[@]}"; fi
        if [ "$lang" = auto ]; then
          echo
          if [ "$REALNL" != 0 ]; then go run ./bench/wer -lang nl -prefix fg_ -texts=false -manifest "$MANIFEST" "${args[@]}"; echo; fi
          go run ./bench/wer -lang nl -not-prefix fg_ -manifest "$MANIFEST" "${args[@]}"
        fi
      fi
      ref=; [ -f "$OUT/$model-$lang-fw-int8.tsv.time" ] && read -r _ u s _ <"$OUT/$model-$lang-fw-int8.tsv.time" && ref=$(echo "$u + $s" | bc -l)
      n=$(cat "$OUT/$model-$lang.n")
      echo; echo "| system | wall s | CPU s (user+sys) | CPU s / clip ($n clips) | CPU / fw-int8 | peak RSS MiB |"; echo "|---|---|---|---|---|---|"
      for sys in $SYSTEMS; do
        read -r w u s m <"$OUT/$model-$lang-$sys.tsv.time"
        cpu=$(echo "$u + $s" | bc -l)
        printf '| %s | %.1f | %.1f | %.2f | %s | %d |\n' "$sys" "$w" "$cpu" "$(echo "$cpu / $n" | bc -l)" "${ref:+$(printf '%.2f' "$(echo "$cpu / $ref" | bc -l)")}" "$((m / 1024))"
      done
    done
  done
} | tee "$OUT/wer.md"
exit
}

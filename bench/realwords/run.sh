#!/usr/bin/env bash
# run.sh: the real-people table of docs/wake.md "A spotter for any name".
#   bench/realwords/run.sh HEADS REALWORDS AUDIO LIBRISPEECH [WORK]
# HEADS: name=dir,... (make kws-head's OUT for each name); REALWORDS: the
# real recordings of people saying the names (one folder of FLAC or WAV per
# name); AUDIO: the shared real recordings (WAV, MANIFEST.tsv; its
# stp_background_noise.wav is the site noise); LIBRISPEECH: a folder of
# LibriSpeech utterances (FLAC or WAV, any depth), e.g. those in
# resemble-ai/Resemblyzer's audio_data/. WORK (default build/realwords)
# gets the 16 kHz WAV copies and the noises. Prints the markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
HEADS=$1 REAL=$2 AUDIO=$3 LIBRI=$4 WORK=${5:-build/realwords}
mkdir -p "$WORK/real" "$WORK/librispeech" "$WORK/noise"
towav() { # towav SRC_DIR DEST_DIR: every .flac/.wav under SRC as 16 kHz mono WAV in DEST
  find "$1" -type f \( -name '*.flac' -o -name '*.wav' \) | sort | while read -r f; do
    local o; o="$2/$(basename "${f%.*}").wav"
    [ -s "$o" ] || sox "$f" -r 16000 -c 1 -b 16 "$o"
  done
}
for d in "$REAL"/*/; do
  n=$(basename "$d"); mkdir -p "$WORK/real/$n"; towav "$d" "$WORK/real/$n"
done
towav "$LIBRI" "$WORK/librispeech"
# The noises: the site recording, and three of ours made here with a fixed
# seed (sox's and espeak-ng's; none of them in any head's training).
N=$WORK/noise
[ -s "$N/site.wav" ] || sox "$AUDIO/stp_background_noise.wav" -r 16000 -c 1 -b 16 "$N/site.wav"
[ -s "$N/pink.wav" ] || sox -R -n -r 16000 -c 1 -b 16 "$N/pink.wav" synth 30 pinknoise
[ -s "$N/machine.wav" ] || sox -R -n -r 16000 -c 1 -b 16 "$N/machine.wav" synth 30 square 97 synth 30 brownnoise mix
if [ ! -s "$N/babble.wav" ]; then
  i=0
  for v in en-us+m1 en-gb+f2 en-us+m7 en-gb-x-rp+f4 nl+m3; do
    espeak-ng -v "$v" -s 160 -w "$N/b$i.raw.wav" "The report on the north wall came back on Tuesday and we still need the drawings of the second floor before the meeting. Nobody knows where the keys to the basement are, so the visit moves to Friday afternoon."
    sox "$N/b$i.raw.wav" -r 16000 -c 1 -b 16 "$N/b$i.wav" repeat 3 trim 0 30
    i=$((i + 1))
  done
  sox -m "$N"/b[0-9].wav "$N/babble.wav" norm -3
  rm -f "$N"/b[0-9].wav "$N"/b[0-9].raw.wav
fi
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
go build -o build/bin/realwords ./bench/realwords
nice -n 10 build/bin/realwords -heads "$HEADS" -real "$WORK/real" -kws models/kws \
  -speech "$WORK/librispeech" -speech "$AUDIO" \
  -noise site="$N/site.wav" -noise pink="$N/pink.wav" -noise babble="$N/babble.wav" -noise machine="$N/machine.wav"

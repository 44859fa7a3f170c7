#!/usr/bin/env bash
# replybench.sh: spoken replies (issue 7). Runs the daemon in-process against a
# real mosquitto, espeak-ng and the ALSA file plugin as speaker, and prints
#   - reply arrival -> first audio sample handed to PortAudio, p50/p95 over
#     N one-sentence replies, against espeak-ng's own CLI synthesizing the same
#     sentences in the same run (ratio printed; target p95 < 150 ms);
#   - end of speech -> utterance published, p50/p95, on the speech path with
#     a real-time paced microphone and whisper tiny.en: the real weights from
#     `make models` (or AGORAD_MODELS=dir with ggml-tiny.en.bin), else the
#     shared weightless test model (its empty transcripts are substituted
#     after whisper ran, and the count is printed).
#   N            replies (default 100)
#   UTTERANCES   utterances for the speech-path figure (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
make -s shim
export CGO_LDFLAGS="-L$(pwd)/build/lib ${CGO_LDFLAGS:-}"
AGORAD_BENCH_REPLIES=1 AGORAD_BENCH_N="${N:-100}" AGORAD_BENCH_UTTERANCES="${UTTERANCES:-20}" \
AGORAD_BENCH_OUT="$(pwd)/bench/out/replybench.txt" \
  go test -count=1 -timeout 30m -run '^TestReplyLatencyBench$' -v ./cmd/agorad/internal/daemon/ 2>&1 \
  | grep -v -e '^ALSA lib' -e '^Cannot connect' -e 'Jack' -e 'jack'

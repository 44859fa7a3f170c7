#!/usr/bin/env bash
# run.sh: every benchmark, each reporting ratios against a reference measured
# in the same run. Results go to bench/out/. Run on a quiet machine: the
# figures are wall-clock.
#   speechbench.sh  agorad transcribe vs whisper-cli (same pinned whisper.cpp source), RTF and ratio;
#                   long half-silent recording; CPU while listening to silence
#   storebench      append latency p50/p99 per fsync policy
#   drainbench      outbox drain to mosquitto vs mosquitto_pub -q 1
#   replybench.sh   spoken replies: arrival -> first audio vs espeak-ng's CLI;
#                   end of speech -> utterance published
#   specwait        end-of-turn waits on the 68 English clips: turns cut in two per
#                   hangover, dropped speculative whisper runs and their cost
#   convbench       50 spoken turns end to end (paced FIFO microphone, agorad,
#                   mosquitto, agora-bridge, the reference graph at 0 and 500 ms):
#                   p50/p95/max from the end of speech to each stage of the turn
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
export CGO_LDFLAGS="-L$(pwd)/build/lib ${CGO_LDFLAGS:-}"
bash bench/speechbench.sh
go run ./bench/storebench | tee bench/out/storebench.txt
go run ./bench/drainbench -n "${DRAIN_N:-20000}" | tee bench/out/drainbench.txt
bash bench/replybench.sh
go run ./bench/specwait -model models/ggml-tiny.en-q8_0.bin | tee bench/out/specwait.txt
make -s build
go run ./bench/convbench -turns 50 -model models/ggml-tiny.en-q8_0.bin | tee bench/out/convbench-tiny.en.txt
go run ./bench/convbench -turns 50 -model models/ggml-base-q8_0.bin -language auto | tee bench/out/convbench-base.txt

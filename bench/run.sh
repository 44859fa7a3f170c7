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
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
export CGO_LDFLAGS="-L$(pwd)/build/lib ${CGO_LDFLAGS:-}"
bash bench/speechbench.sh
go run ./bench/storebench | tee bench/out/storebench.txt
go run ./bench/drainbench -n "${DRAIN_N:-20000}" | tee bench/out/drainbench.txt
bash bench/replybench.sh

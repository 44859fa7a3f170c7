"""Transcribe files with faster-whisper: the peer of agorad in bench/.

Greedy decoding (beam 1) on CPU, like agorad; one model load for all files.
Writes "file<TAB>text<TAB>language<TAB>probability" lines (file = base
name; the probability faster-whisper gave the language, over all of
whisper's when it detected it) to --out, and the time spent
after the model load to stderr as "transcribe_seconds N".
"""

import argparse
import os
import sys
import time

from faster_whisper import WhisperModel


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="CTranslate2 Whisper model directory")
    ap.add_argument("--compute-type", default="int8", help="int8, float32, ...")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lang", default="en", help="language code, or auto")
    ap.add_argument("--out", default="-")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    model = WhisperModel(a.model, device="cpu", compute_type=a.compute_type, cpu_threads=a.threads)
    out = sys.stdout if a.out == "-" else open(a.out, "w", encoding="utf-8")
    start = time.monotonic()
    for f in a.files:
        segs, info = model.transcribe(f, language=None if a.lang == "auto" else a.lang, beam_size=1)
        text = " ".join(s.text.strip() for s in segs).replace("\t", " ").replace("\n", " ")
        out.write(f"{os.path.basename(f)}\t{text}\t{info.language}\t{info.language_probability:.3f}\n")
    print(f"transcribe_seconds {time.monotonic() - start:.3f}", file=sys.stderr)
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

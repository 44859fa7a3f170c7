# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Candidate preprocessing before whisper (issue 25, item 3).

Applies one method to every WAV of --in and writes the result under --out
(16 kHz mono 16-bit, same names). Each file is its own stream (state reset),
as each clip is its own input to agorad.

  speex     speexdsp's preprocessor (libspeexdsp 1.2.1 through
            bench/noise/speexprep/speexprep.c, --speexprep): denoise only, the
            library's default suppression (-15 dB), AGC off
  speexagc  the same with its AGC on (the library's target, 8000 of 32768)
  rnnoise   RNNoise (pyrnnoise 0.4.5: 48 kHz inside, resampled back)
  noisered  sox noisered 0.21 with a noise profile from the file's first
            0.4 s (the cheap baseline; a device would take it from the
            tracked noise floor)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import wave
from pathlib import Path

RATE = 16000


def read(src: Path) -> bytes:
    with wave.open(str(src)) as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RATE, 1, 2):
            raise ValueError(f"{src}: want 16 kHz mono 16-bit")
        return w.readframes(w.getnframes())


def write(dst: Path, pcm: bytes) -> None:
    with wave.open(str(dst), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm)


def speex(src: Path, dst: Path, prog: str, agc: bool) -> None:
    out = subprocess.run([prog, "1", "1" if agc else "0"], input=read(src), capture_output=True, check=True).stdout
    write(dst, out)


def rnnoise(src: Path, dst: Path) -> None:
    import numpy as np
    from pyrnnoise import RNNoise

    x = np.frombuffer(read(src), dtype="<i2")
    # (denoise_wav of this version fails on its reader; the chunk API works)
    frames = [f for _, f in RNNoise(RATE).denoise_chunk(x, partial=True)]
    y = np.concatenate(frames, axis=-1).reshape(-1)[: len(x)]
    write(dst, np.asarray(y, dtype="<i2").tobytes())


def noisered(src: Path, dst: Path) -> None:
    prof = dst.with_suffix(".prof")
    subprocess.run(["sox", "-D", str(src), "-n", "trim", "0", "0.4", "noiseprof", str(prof)], check=True)
    subprocess.run(["sox", "-D", str(src), "-b", "16", str(dst), "noisered", str(prof), "0.21"], check=True)
    prof.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", required=True, choices=["speex", "speexagc", "rnnoise", "noisered"])
    ap.add_argument("--in", dest="src", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--speexprep", default="build/speexdsp/speexprep", help="bench/noise/speexprep/speexprep.c built")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    for f in sorted(a.src.glob("*.wav")):
        dst = a.out / f.name
        match a.method:
            case "speex":
                speex(f, dst, a.speexprep, False)
            case "speexagc":
                speex(f, dst, a.speexprep, True)
            case "rnnoise":
                rnnoise(f, dst)
            case "noisered":
                noisered(f, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())

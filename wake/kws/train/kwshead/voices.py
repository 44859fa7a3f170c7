# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""The synthetic speakers the recipe can use here, and the split they go to.

A speaker is an engine's voice with espeak-ng's variant (its formant and
voicing settings); each clip draws its own rate and pitch on top. Every
speaker goes wholly to the training or to the development split, so the
threshold is chosen on voices the head never heard."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import train  # wake/kws/train/train.py: espeak-ng's voices and variants

FESTIVAL_DIRS = [Path("/usr/share/festival/voices")]
DEV_SHARE = 5  # one speaker in DEV_SHARE is the development split's


@dataclass(frozen=True)
class Speaker:
    engine: str  # espeak, flite, festival
    voice: str  # what the engine is given (espeak-ng: voice+variant)
    lang: str

    @property
    def split(self) -> str:
        h = int(hashlib.sha256(f"{self.engine}:{self.voice}".encode()).hexdigest()[:8], 16)
        return "dev" if h % DEV_SHARE == 0 else "train"


def festival_voices() -> list[str]:
    """Festival's installed English voices (festvox-* packages)."""
    if not shutil.which("text2wave"):
        return []
    out = []
    for root in FESTIVAL_DIRS:
        for lang in ("english", "us"):
            if (root / lang).is_dir():
                out += sorted(p.name for p in (root / lang).iterdir() if p.is_dir())
    return out


def flite_voices() -> list[str]:
    if not shutil.which("flite"):
        return []
    out = subprocess.run(["flite", "-lv"], capture_output=True, text=True, check=True).stdout
    return sorted(set(out.split(":", 1)[1].split()))


def speakers(lang: str) -> list[Speaker]:
    """Every speaker of lang: espeak-ng's accents times its variants, and
    for English flite's and festival's voices."""
    out = [Speaker("espeak", f"{v}+{var}", lang) for v in train.voices(lang) for var in train.variants()]
    if lang == "en":
        out += [Speaker("flite", v, lang) for v in flite_voices()]
        out += [Speaker("festival", v, lang) for v in festival_voices()]
    return out

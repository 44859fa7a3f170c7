# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Near-miss words for a name: the words of a language's word list (Debian's
wamerican, wdutch) that sound most like it, by edit distance between the
phoneme strings espeak-ng gives them. Found automatically, so any name gets
its own; the training needs them as negatives (else the head learns
"sounds roughly like the name")."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

WORDLISTS = {"en": Path("/usr/share/dict/american-english"), "nl": Path("/usr/share/dict/dutch")}
ESPEAK = {"en": "en-us", "nl": "nl"}
# espeak-ng's stress and syllable marks: not sounds.
MARKS = str.maketrans("", "", "'`,_|:=")


def phonemes(words: list[str], lang: str) -> list[str]:
    """espeak-ng's phoneme string of each word (one call for all; words
    espeak splits in two are asked again one by one)."""
    if not words:
        return []
    out = subprocess.run(
        ["espeak-ng", "-q", "-x", "-v", ESPEAK[lang], "--stdin"],
        input="\n".join(words) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if len(out) == len(words):
        return [p.translate(MARKS) for p in out]
    return [
        subprocess.run(
            ["espeak-ng", "-q", "-x", "-v", ESPEAK[lang], "--", w], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .replace(" ", "")
        .translate(MARKS)
        for w in words
    ]


def distance(a: str, b: str) -> int:
    """Levenshtein distance."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def candidates(name: str, words: list[str]) -> list[str]:
    """Words spelt somewhat like the name (a cheap filter before espeak-ng):
    similar letters, or the same first or last three letters. Not the name
    itself nor words that begin with it (plurals: they hold the name)."""
    n = name.lower()
    out = set()
    for w in words:
        lw = w.lower()
        if not lw.isalpha() or lw.startswith(n) or abs(len(lw) - len(n)) > 3:
            continue
        if lw[:3] == n[:3] or lw[-3:] == n[-3:] or difflib.SequenceMatcher(None, lw, n).ratio() >= 0.6:
            out.add(lw)
    return sorted(out)


def near_misses(name: str, lang: str, count: int = 30, words: list[str] | None = None) -> list[str]:
    """The count words of lang's list nearest the name in sound (ties by
    spelling), nearest first."""
    if words is None:
        path = WORDLISTS[lang]
        if not path.exists():
            raise SystemExit(f"kwshead: no word list {path} for {lang} (scripts/install-deps.sh installs it)")
        words = path.read_text(encoding="utf-8", errors="replace").split()
    cand = candidates(name, words)
    target = phonemes([name.lower()], lang)[0]
    ph = phonemes(cand, lang)
    scored = sorted(
        (distance(p, target) / max(len(target), 1), -difflib.SequenceMatcher(None, w, name.lower()).ratio(), w)
        for w, p in zip(cand, ph, strict=True)
        if p != target  # homophones: no ear tells them apart
    )
    return [w for *_, w in scored[:count]]

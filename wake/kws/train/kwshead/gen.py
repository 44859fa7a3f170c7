# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Plans and synthesises the recipe's clips for a name.

Positives: the name alone, after a lead ("hey", a few carrier words: said
in one go with the name, as people run them together) and before a tail
(a command of carrier words). Negatives: the same shapes with a near-miss
word (near.py) or nothing in the name's place. Each clip has its own
speaker, rate and pitch; half are moved to another vocal tract, room and
microphone (train.speaker), a share is mixed with noise or babble. Where
the name ends is known (the same voice saying the text up to the name).
Writes OUT/wav/*.wav, OUT/clips.tsv (train.py's columns, split = train or
dev) and OUT/near.txt."""

from __future__ import annotations

import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import train

from .near import near_misses
from .speak import FESTIVAL, say
from .voices import Speaker, speakers

RATE = train.RATE
LEADS = {
    "en": ["hey", "okay", "hi", "hello", "yo", "right", "now", "so", "please", "excuse me", "alright"],
    "nl": ["hé", "oké", "hoi", "hallo", "nou", "zeg", "goed", "dus", "even", "ja"],
}
WORDS = {"en": train.WORDS_EN, "nl": train.WORDS_NL}
NOISES = ["white", "pink", "brown", "hum", "babble"]


@dataclass(frozen=True)
class Plan:
    index: int
    kind: str  # pos, neg
    form: str  # alone, lead, tail, noise
    speaker: Speaker
    rate: int
    pitch: int
    pre: str
    mid: str  # the name, a near-miss, or ""
    post: str


def env_int(key: str, default: int) -> int:
    return int(os.environ.get(key, str(default)))


def plan(name: str, langs: list[str], near: dict[str, list[str]], n_pos: int, n_neg: int, seed: int) -> list[Plan]:
    rng = random.Random(seed)
    spk = {lang: speakers(lang) for lang in langs}
    # The other engines' few voices are drawn as often as espeak-ng's many:
    # they are the ones most unlike espeak's formant voices.
    by_engine = {
        lang: {e: [s for s in spk[lang] if s.engine == e] for e in ("espeak", "flite", "festival")} for lang in langs
    }
    share = {"espeak": 0.7, "flite": 0.22, "festival": 0.08}  # festival is slow (HTS: ~0.5 s a phrase)

    def speaker(lang: str) -> Speaker:
        engines = [e for e in share if by_engine[lang][e]]
        e = rng.choices(engines, [share[x] for x in engines])[0]
        return rng.choice(by_engine[lang][e])

    def words(lang: str, lo: int, hi: int) -> str:
        return " ".join(rng.choice(WORDS[lang]) for _ in range(rng.randint(lo, hi)))

    out = []
    for i in range(n_pos + n_neg):
        kind = "pos" if i < n_pos else "neg"
        lang = rng.choice(langs)
        form = rng.choices(["alone", "lead", "tail", "noise"], [0.3, 0.4, 0.3, 0.0 if kind == "pos" else 0.04])[0]
        mid = name
        if kind == "neg":
            mid = rng.choice(near[lang]) if rng.random() < 0.5 else ""
        pre = post = ""
        if form == "lead":
            pre = rng.choice(LEADS[lang]) if rng.random() < 0.6 else words(lang, 1, 4)
            post = words(lang, 2, 6) if rng.random() < 0.5 else ""
        elif form == "tail":
            post = words(lang, 2, 7)
        elif form == "alone" and kind == "neg" and not mid:
            post = words(lang, 1, 6)
        elif form == "noise":
            mid = ""
        out.append(Plan(i, kind, form, speaker(lang), rng.randint(110, 210), rng.randint(20, 80), pre, mid, post))
    return out


def make(p: Plan, wavs: Path, babble: list[np.ndarray]) -> dict[str, object]:
    local = random.Random(p.index * 7919 + 1)
    nrng = np.random.default_rng(p.index + 1)
    tmp = wavs / f"tmp{p.index}"
    gap = lambda: np.zeros(int(local.uniform(0.02, 0.25) * RATE), np.float32)  # noqa: E731
    parts = [np.zeros(int(local.uniform(0.2, 0.8) * RATE), np.float32)]
    start = end = -1
    if p.form == "noise":
        parts.append(np.zeros(int(local.uniform(1, 3) * RATE), np.float32))
    else:
        head = " ".join(t for t in (p.pre, p.mid) if t)
        x = say(p.speaker, head, p.rate, p.pitch, tmp) if head else np.zeros(0, np.float32)
        lead = len(parts[0])
        if p.kind == "pos":
            before = len(say(p.speaker, p.pre, p.rate, p.pitch, tmp)) if p.pre else 0
            start, end = lead + min(before, len(x) - 1), lead + len(x)
        parts.append(x)
        if p.post:
            if head:
                parts.append(gap())
            parts.append(say(p.speaker, p.post, p.rate, p.pitch, tmp))
    parts.append(np.zeros(int(local.uniform(0.4, 1.0) * RATE), np.float32))
    y = np.concatenate(parts).astype(np.float32)
    stretch = 1.0
    if local.random() < 0.5:
        y, stretch = train.speaker(y, local, nrng)
    kind = ""
    if local.random() < 0.4 or p.form == "noise":
        kind = local.choice(NOISES)
        snr = local.uniform(0, 20)
        if kind == "babble":
            nz = np.zeros(len(y), np.float32)
            for _ in range(local.randint(2, 3)):
                b = babble[local.randrange(len(babble))]
                nz += np.resize(b, len(y)) * local.uniform(0.5, 1)
        else:
            nz = train.noise(kind, len(y), nrng)
        if not np.any(nz):  # babble of silent clips: nothing to mix
            kind = ""
        elif p.form == "noise":
            y = nz / (np.max(np.abs(nz)) + 1e-9) * local.uniform(0.05, 0.5)
        else:
            y = y + train.at_snr(y, nz, snr)
    y = y * (local.uniform(0.1, 0.9) / (float(np.max(np.abs(y))) + 1e-9))
    f = f"c{p.index:06d}.wav"
    train.write_wav(wavs / f, y)
    return {
        "file": f,
        "kind": p.kind,
        "lang": p.speaker.lang,
        "voice": f"{p.speaker.engine}:{p.speaker.voice}",
        "split": p.speaker.split,
        "name_start": int(start * stretch) if start >= 0 else -1,
        "name_end": int(end * stretch) if end >= 0 else -1,
        "text": " ".join(t for t in (p.pre, p.mid, p.post) if t) + (f" [{kind}]" if kind else ""),
    }


def gen(out: Path, name: str, langs: list[str]) -> None:
    seed = env_int("KWS_SEED", 1)
    wavs = out / "wav"
    wavs.mkdir(parents=True, exist_ok=True)
    near = {lang: near_misses(name, lang, env_int("KWS_NEAR", 30)) for lang in langs}
    (out / "near.txt").write_text("".join(f"{lang}\t{w}\n" for lang in langs for w in near[lang]), encoding="utf-8")
    plans = plan(name, langs, near, env_int("KWS_POS", 2000), env_int("KWS_NEG", 4000), seed)
    FESTIVAL.root = out / "festival"
    FESTIVAL.root.mkdir(exist_ok=True)
    FESTIVAL.speak(
        {
            (p.speaker.voice, p.rate, t)
            for p in plans
            if p.speaker.engine == "festival"
            for t in (" ".join(x for x in (p.pre, p.mid) if x), p.pre if p.kind == "pos" else "", p.post)
            if t
        }
    )
    # Babble: carrier phrases by training speakers, summed under some clips.
    brng = random.Random(seed + 1)
    pool = [p.speaker for p in plans if p.speaker.split == "train" and p.speaker.engine != "festival"][:40]
    babble = [
        b
        for b in (
            say(s, " ".join(brng.choice(WORDS[s.lang]) for _ in range(8)), brng.randint(130, 190), 50, wavs / f"bab{k}")
            for k, s in enumerate(pool)
        )
        if np.any(b)
    ]
    jobs = env_int("KWS_JOBS", os.cpu_count() or 2)
    with ThreadPoolExecutor(jobs) as ex:
        rows = list(ex.map(lambda p: make(p, wavs, babble), plans))
    cols = list(rows[0])
    with open(out / "clips.tsv", "w", encoding="utf-8") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]).replace("\t", " ") for c in cols) + "\n")
    n = {(r["split"], r["kind"]): 0 for r in rows}
    for r in rows:
        n[(r["split"], r["kind"])] += 1
    print(f"gen: {len(rows)} clips {n}; near-misses {near}", file=sys.stderr)

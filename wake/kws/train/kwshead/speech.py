# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Hours of running speech without the name: negatives for the training
and, apart, the hours that certify the threshold.

The text is English prose that every Debian system carries (the licence
texts of base-files) and sentences of the language's word list (wamerican,
wdutch); every sentence holding the name (or a word containing it) is
left out. Sentences go to the training or the development split by hash,
and so do the speakers (voices.Speaker.split): the hours that set the
threshold share neither a voice nor a sentence with the training's.
espeak-ng and flite speak them (hundreds of times faster than real time),
one paragraph of 15-40 s a file, each with its own rate and pitch; half
are moved to another vocal tract, room and microphone (train.speaker),
some get noise. Writes OUT/speech/*.wav and OUT/speech.tsv (file, split,
lang, voice, seconds, text)."""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import train

from .near import WORDLISTS
from .speak import say
from .voices import Speaker, speakers

PROSE = {"en": sorted(Path("/usr/share/common-licenses").glob("*")), "nl": []}
WORDS_PER_SECOND = 2.5  # espeak-ng at its middle rate, to size the paragraphs


def normal(text: str) -> str:
    return re.sub(r"[^a-z]+", " ", text.lower()).strip()


def holds(sentence: str, name: str) -> bool:
    """Whether the sentence says the name, alone or inside a word."""
    n = normal(name).replace(" ", "")
    return n in normal(sentence).replace(" ", "") or any(n in w for w in normal(sentence).split())


def dev_text(sentence: str) -> bool:
    return int(hashlib.sha256(sentence.encode()).hexdigest()[:8], 16) % 4 == 0


def prose(lang: str) -> list[str]:
    """The prose files' sentences of 4 to 40 words, each once, in order."""
    out, seen = [], set()
    for f in PROSE.get(lang, []):
        if not f.is_file():
            continue
        text = " ".join(f.read_text(encoding="utf-8", errors="replace").split())
        for s in re.split(r"(?<=[.;:!?])\s+", text):
            s = re.sub(r"[^A-Za-z0-9,.;:!?' -]+", " ", s).strip()
            if 4 <= len(s.split()) <= 40 and s not in seen:
                seen.add(s)
                out.append(s)
    return out


def word_sentences(lang: str, rng: random.Random, n: int) -> list[str]:
    """n sentences of 5-14 words drawn from the language's word list."""
    path = WORDLISTS[lang]
    words = [w for w in path.read_text(encoding="utf-8", errors="replace").split() if w.isalpha() and w.islower()]
    words += list(train.WORDS_EN if lang == "en" else train.WORDS_NL)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(5, 14))) + "." for _ in range(n)]


def paragraphs(sentences: list[str], rng: random.Random, seconds: float) -> list[str]:
    """Paragraphs of 15-40 s of speech, drawn from the sentences, that add
    up to about seconds."""
    out, total = [], 0.0
    while total < seconds and sentences:
        want, words, para = rng.uniform(15, 40) * WORDS_PER_SECOND, 0, []
        while words < want:
            s = rng.choice(sentences)
            para.append(s)
            words += len(s.split())
        out.append(" ".join(para))
        total += words / WORDS_PER_SECOND
    return out


def plan(name: str, langs: list[str], hours: dict[str, float], seed: int) -> list[tuple[str, Speaker, int, int, str]]:
    """(split, speaker, rate, pitch, text) for each paragraph."""
    rng = random.Random(seed + 101)
    out = []
    for lang in langs:
        pool = [s for s in prose(lang) + word_sentences(lang, rng, 3000) if not holds(s, name)]
        # festival starts slowly and speaks ~2x real time: left out of the hours.
        spk = [s for s in speakers(lang) if s.engine != "festival"]
        for split in ("train", "dev"):
            sents = [s for s in pool if dev_text(s) == (split == "dev")]
            voices = [s for s in spk if s.split == split]
            flite = [s for s in voices if s.engine == "flite"]
            for text in paragraphs(sents, rng, hours[split] * 3600 / len(langs)):
                sp = rng.choice(flite) if flite and rng.random() < 0.2 else rng.choice(voices)
                out.append((split, sp, rng.randint(110, 210), rng.randint(20, 80), text))
    return out


def make(i: int, item: tuple[str, Speaker, int, int, str], wavs: Path) -> dict[str, object]:
    split, sp, rate, pitch, text = item
    local = random.Random(i * 7907 + 3)
    nrng = np.random.default_rng(i + 7)
    y = say(sp, text, rate, pitch, wavs / f"tmp{i}")
    if len(y) < train.RATE:  # an engine that said (almost) nothing: a second of silence, not a crash
        y = np.zeros(train.RATE, np.float32)
    if local.random() < 0.5:
        y, _ = train.speaker(y, local, nrng)
    kind = ""
    if np.any(y) and local.random() < 0.3:
        kind = local.choice(["white", "pink", "brown", "hum"])
        y = y + train.at_snr(y, train.noise(kind, len(y), nrng), local.uniform(5, 25))
    peak = float(np.max(np.abs(y)))
    y = y * (local.uniform(0.1, 0.9) / (peak + 1e-9))
    f = f"s{i:05d}.wav"
    train.write_wav(wavs / f, y)
    return {
        "file": f,
        "split": split,
        "lang": sp.lang,
        "voice": f"{sp.engine}:{sp.voice}",
        "seconds": f"{len(y) / train.RATE:.2f}",
        "text": text[:60] + (f" [{kind}]" if kind else ""),
    }


def gen_speech(out: Path, name: str, langs: list[str], hours: dict[str, float], seed: int, jobs: int) -> None:
    wavs = out / "speech"
    wavs.mkdir(parents=True, exist_ok=True)
    items = plan(name, langs, hours, seed)
    with ThreadPoolExecutor(jobs) as ex:
        rows = list(ex.map(lambda a: make(*a, wavs), enumerate(items)))
    cols = list(rows[0]) if rows else ["file", "split", "lang", "voice", "seconds", "text"]
    with open(out / "speech.tsv", "w", encoding="utf-8") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]).replace("\t", " ") for c in cols) + "\n")
    got = {s: sum(float(str(r["seconds"])) for r in rows if r["split"] == s) / 3600 for s in ("train", "dev")}
    print(
        f"speech: {len(rows)} paragraphs, {got['train']:.2f} h training, {got['dev']:.2f} h development",
        file=sys.stderr,
    )


def read(out: Path) -> list[dict[str, str]]:
    return train.read_set(out / "speech.tsv") if (out / "speech.tsv").exists() else []


def embed_speech(out: Path, embed_bin: str, kws_dir: str) -> None:
    """Embeds OUT/speech/*.wav into OUT/speech.bin unless it is newer than speech.tsv."""
    tsv, emb = out / "speech.tsv", out / "speech.bin"
    if not tsv.exists() or (emb.exists() and emb.stat().st_mtime >= tsv.stat().st_mtime):
        return
    listing = "".join(f"{out / 'speech' / r['file']}\n" for r in read(out))
    subprocess.run([embed_bin, "-kws", kws_dir, "-out", str(emb)], input=listing, text=True, check=True)


def load(out: Path) -> list[tuple[dict[str, str], np.ndarray, np.ndarray]]:
    """Per paragraph: its row, windows and window ends (all negatives)."""
    rows = read(out)
    if not rows:
        return []
    return [
        (r, *train.windows(e, n)) for r, (e, n) in zip(rows, train.load_set(out / "speech.bin", len(rows)), strict=True)
    ]

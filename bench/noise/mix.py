# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Corpus of the noise benchmark (issue 25): speech mixed with noise.

Writes 16 kHz mono 16-bit WAVs under --out:

  <cond>/<clip>.wav       cond = clean, or <noise><snr> (pink10, babble5, ...)
  MANIFEST.tsv            the clips' transcripts, in shared/audio's format
                          (bench/wer and transcribe/wer read it)
  noiseonly/<noise>.wav   the noise alone, --noise-seconds long, at the level
                          it has in the 10 dB condition of a median clip
  wake/<cond>/<file>.wav  with --wake-corpus: every --wake-every-th English
  wake.tsv                clean positive of bench/wakebench's corpus, mixed
                          (its corpus.tsv rows, file renamed, kind = cond)

Speech: the English clips of shared/audio with a transcript (every --every-th)
and --espeak sentences of our own, each by another espeak-ng English voice.
Noise: pink, brown (both 1/f^a shaped spectra), machine (mains hum at 50 Hz
with harmonics, a low rumble and impulsive hits), recording (the shared
site-noise recording, looped from a random point) and babble (four other
speakers of shared/audio, each at the same active level, summed).

SNR is against the speech's active level: the RMS of the 20 ms frames within
30 dB of the loudest frame (silence and pauses left out, as bench/wakebench's
voiced_rms), against the RMS of the noise over the whole file. A mix that
would clip is scaled down whole (the SNR stays). Everything is derived from
--seed: the same seed gives the same corpus, sample for sample.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import wave
import zlib
from pathlib import Path

import numpy as np

RATE = 16000
NOISES = ("pink", "brown", "machine", "recording", "babble")
RECORDING = "stp_background_noise.wav"
BABBLE_SPEAKERS = 4
# Our own sentences (site-inspection notes), each said by the next voice.
SENTENCES = [
    "The north wall of the second floor has a crack near the window frame.",
    "Check the scaffolding on the east side before the crane starts.",
    "The concrete in column seven needs another day to cure.",
    "Two of the fire doors on level three do not close properly.",
    "Order forty more steel beams for the parking garage.",
    "The electrician will finish the wiring in the kitchen tomorrow.",
    "Water is leaking through the roof above the main staircase.",
    "Measure the gap between the floor tiles in the hallway.",
    "The safety rail on the loading dock is loose and must be fixed.",
    "Take a photo of the damaged pipe under the bathroom sink.",
    "The foundation of the garage was poured on Monday morning.",
    "Ask the plumber to move the drain two inches to the left.",
]
VOICES = ["en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-us+m3", "en+f2", "en-us+f4", "en+klatt3"]


def read_wav(path: Path) -> np.ndarray:
    """16 kHz mono float64 in [-1, 1]; other formats through sox."""
    with wave.open(str(path)) as w:
        ok = w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2
        data = w.readframes(w.getnframes()) if ok else b""
    if not ok:
        out = subprocess.run(
            ["sox", "-D", str(path), "-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", "-"],
            check=True,
            capture_output=True,
        ).stdout
        data = out
    return np.frombuffer(data, dtype="<i2").astype(np.float64) / 32768.0


def write_wav(path: Path, x: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def active_rms(x: np.ndarray, window_db: float = 30.0) -> float:
    """RMS of the 20 ms frames within window_db of the loudest one."""
    n = RATE // 50
    f = x[: len(x) // n * n].reshape(-1, n)
    e = np.mean(f * f, axis=1)
    keep = e >= e.max() * 10 ** (-window_db / 10)
    return float(np.sqrt(np.mean(e[keep])))


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x)))


def rng_for(seed: int, *key: object) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(repr(key).encode())])


def colored(r: np.random.Generator, n: int, alpha: float) -> np.ndarray:
    """Noise with power ∝ 1/f^alpha (1: pink, 2: brown), 20 Hz up."""
    spec = np.fft.rfft(r.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    spec *= np.where(f >= 20, 1 / np.maximum(f, 20) ** (alpha / 2), 0)
    return np.fft.irfft(spec, n)


def machine(r: np.random.Generator, n: int) -> np.ndarray:
    """Mains hum (50 Hz and harmonics, slowly wavering), rumble and hits."""
    t = np.arange(n) / RATE
    x = np.zeros(n)
    for k in range(1, 10):
        drift = 1 + 0.002 * np.sin(2 * np.pi * 0.1 * t + r.uniform(0, 6))
        x += (1 / k) * np.sin(2 * np.pi * 50 * k * t * drift + r.uniform(0, 2 * np.pi))
    x = x / rms(x) + 0.5 * colored(r, n, 2) / max(rms(colored(r, n, 2)), 1e-9)
    # impulsive hits (a hammer, a nail gun): 1.5 a second on average,
    # decaying bursts of broadband noise 15 dB above the hum
    hits = np.zeros(n)
    pos = 0
    while True:
        pos += int(r.exponential(RATE / 1.5))
        if pos >= n:
            break
        ln = int(RATE * r.uniform(0.02, 0.08))
        seg = r.standard_normal(min(ln, n - pos)) * np.exp(-np.arange(min(ln, n - pos)) / (ln / 5))
        hits[pos : pos + len(seg)] += seg * r.uniform(2, 6)
    return x + hits


def loop(x: np.ndarray, n: int, start: int) -> np.ndarray:
    reps = (start + n) // len(x) + 1
    return np.tile(x, reps)[start : start + n]


class Builder:
    def __init__(self, shared: Path, out: Path, seed: int) -> None:
        self.shared, self.out, self.seed = shared, out, seed
        self.manifest = read_tsv(shared / "audio" / "MANIFEST.tsv")
        self.recording = read_wav(shared / "audio" / RECORDING)
        self._babble_pool: dict[str, np.ndarray] = {}

    def speaker_of(self, name: str) -> str:
        return name.split("_")[0]

    def babble(self, r: np.random.Generator, n: int, target: str) -> np.ndarray:
        """Four streams of shared recordings by other sources than target's,
        each a random run of clips at the same active level."""
        if not self._babble_pool:
            for row in self.manifest:
                f = row["file"]
                if f == RECORDING or f.endswith("_norm.wav") or float(row["seconds"] or 0) < 2:
                    continue
                x = read_wav(self.shared / "audio" / f)
                if rms(x) > 0:
                    self._babble_pool[f] = x / active_rms(x)
        pool = sorted(f for f in self._babble_pool if self.speaker_of(f) != self.speaker_of(target))
        out = np.zeros(n)
        for _ in range(BABBLE_SPEAKERS):
            parts, got = [], 0
            while got < n + RATE:
                x = self._babble_pool[pool[r.integers(len(pool))]]
                parts.append(x)
                got += len(x)
            s = np.concatenate(parts)
            start = int(r.integers(0, len(s) - n))
            out += s[start : start + n]
        return out

    def noise(self, kind: str, n: int, target: str) -> np.ndarray:
        r = rng_for(self.seed, kind, target)
        match kind:
            case "pink":
                return colored(r, n, 1)
            case "brown":
                return colored(r, n, 2)
            case "machine":
                return machine(r, n)
            case "recording":
                return loop(self.recording, n, int(r.integers(len(self.recording))))
            case "babble":
                return self.babble(r, n, target)
        raise ValueError(f"unknown noise {kind!r}")

    def mix(self, speech: np.ndarray, kind: str, snr: float, target: str) -> np.ndarray:
        nz = self.noise(kind, len(speech), target)
        y = speech + nz * (active_rms(speech) / 10 ** (snr / 20) / rms(nz))
        peak = np.max(np.abs(y))
        return y * (0.99 / peak) if peak > 0.99 else y


def espeak(text: str, voice: str) -> np.ndarray:
    with tempfile.TemporaryDirectory() as d:
        raw, wav = Path(d) / "raw.wav", Path(d) / "x.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(raw), text], check=True)
        subprocess.run(
            ["sox", "-D", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(wav), "pad", "0.5", "0.5"], check=True
        )
        x = read_wav(wav)
    return x * (10 ** (-20 / 20) / active_rms(x))  # -20 dBFS active level


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--every", type=int, default=1, help="every Nth shared English clip")
    ap.add_argument("--espeak", type=int, default=len(SENTENCES), help="how many of our own sentences")
    ap.add_argument("--noises", default=" ".join(NOISES))
    ap.add_argument("--snrs", default="20 10 5 0")
    ap.add_argument("--noise-seconds", type=float, default=300, help="length of each noise-only file (0: none)")
    ap.add_argument("--wake-corpus", type=Path, help="bench/wakebench corpus dir (its corpus.tsv)")
    ap.add_argument("--wake-every", type=int, default=8)
    ap.add_argument("--wake-conds", default="pink10 pink5 babble10 babble5")
    a = ap.parse_args(argv)
    b = Builder(a.shared, a.out, a.seed)
    noises, snrs = a.noises.split(), [float(s) for s in a.snrs.split()]

    clips: list[tuple[str, np.ndarray]] = []
    rows = []
    en = sorted((r for r in b.manifest if r["language"] == "en" and r["transcript"]), key=lambda r: r["file"])
    for i, row in enumerate(en):
        if i % a.every == 0:
            clips.append((row["file"], read_wav(a.shared / "audio" / row["file"])))
            rows.append(row)
    for i, text in enumerate(SENTENCES[: a.espeak]):
        voice = VOICES[i % len(VOICES)]
        name = f"espeak_en_{i:02d}.wav"
        x = espeak(text, voice)
        clips.append((name, x))
        rows.append(
            {
                **{k: "" for k in rows[0]},
                "file": name,
                "seconds": f"{len(x) / RATE:.3f}",
                "language": "en",
                "transcript": text,
                "source_repo": "espeak-ng",
                "source_path": voice,
            }
        )
    a.out.mkdir(parents=True, exist_ok=True)
    with open(a.out / "MANIFEST.tsv", "w", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)

    levels = []
    for name, x in clips:
        write_wav(a.out / "clean" / name, x)
        levels.append(active_rms(x))
        for kind in noises:
            for snr in snrs:
                write_wav(a.out / f"{kind}{snr:g}" / name, b.mix(x, kind, snr, name))
    print(f"mix: {len(clips)} clips, {len(noises)} noises, {len(snrs)} SNRs", file=sys.stderr)

    if a.noise_seconds > 0:
        n = int(a.noise_seconds * RATE)
        level = float(np.median(levels)) / 10 ** (10 / 20)
        for kind in noises:
            nz = b.noise(kind, n, "noiseonly")
            y = nz * (level / rms(nz))
            write_wav(a.out / "noiseonly" / f"{kind}.wav", y / max(1, np.max(np.abs(y)) / 0.99))
        print(f"mix: noise-only files of {a.noise_seconds:g} s at {20 * np.log10(level):.1f} dBFS RMS", file=sys.stderr)

    if a.wake_corpus:
        src = read_tsv(a.wake_corpus / "corpus.tsv")
        pos = [r for r in src if r["set"] == "pos" and r["lang"] == "en" and r["kind"] == "clean"][:: a.wake_every]
        with open(a.out / "wake.tsv", "w", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(src[0]), delimiter="\t", lineterminator="\n")
            w.writeheader()
            for cond in ["clean", *a.wake_conds.split()]:
                for r in pos:
                    x = read_wav(a.wake_corpus / r["file"])
                    name = Path(r["file"]).name
                    if cond != "clean":
                        kind = cond.rstrip("0123456789")
                        x = b.mix(x, kind, float(cond[len(kind) :]), name)
                    write_wav(a.out / "wake" / cond / name, x)
                    w.writerow({**r, "file": f"wake/{cond}/{name}", "kind": cond})
        print(f"mix: {len(pos)} wake positives, {1 + len(a.wake_conds.split())} conditions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

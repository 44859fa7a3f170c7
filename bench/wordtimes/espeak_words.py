# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Speaks sentences with libespeak-ng and keeps where each word starts.

espeak-ng's word events give each word's start in its own audio exactly,
so the set has a ground truth no recogniser gave. For every sentence of
the input files (one per line) it writes NAME.wav (16 kHz mono 16-bit,
PAD_BEFORE of silence before the speech, as the segmenter's pre-roll, and
PAD_AFTER after) and NAME.json: the text, each word's start and the
speech's end (ms, in the WAV, the padding included). Voices and rates are dealt in turn.

    python3 espeak_words.py --out DIR --lang en|nl SENTENCES.txt...
"""

from __future__ import annotations

import argparse
import array
import ctypes
import json
import subprocess
import wave
from pathlib import Path

PAD_BEFORE_MS = 300
PAD_AFTER_MS = 700
VOICES = {
    "en": [
        "en",
        "en-us",
        "en-gb-x-rp+f3",
        "en-gb-scotland+m3",
        "en-029",
        "en-us+f2",
        "en-gb-x-gbclan+klatt",
        "en-us+m7",
        "en-gb-x-gbcwmd+f4",
        "en+croak",
    ],
    "nl": ["nl", "nl+f3", "nl+m3", "nl+klatt", "nl+f2"],
}
RATES = [140, 175, 200]  # words a minute

AUDIO_OUTPUT_SYNCHRONOUS = 2
EVENT_WORD = 1
CHARS_UTF8 = 1
RATE_PARAMETER = 1


class Event(ctypes.Structure):
    """espeak_EVENT (speak_lib.h), up to the fields read here."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_void_p),
    ]


Callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(Event))


class Speaker:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libespeak-ng.so.1")
        self.rate = self.lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, None, 0)
        if self.rate <= 0:
            raise RuntimeError("libespeak-ng did not initialise")
        self.samples = array.array("h")
        self.events: list[tuple[int, int, int]] = []
        self.cb = Callback(self._collect)  # kept: the library holds the pointer
        self.lib.espeak_SetSynthCallback(self.cb)

    def _collect(self, wav, n, events) -> int:
        if n > 0 and wav:
            self.samples.extend(wav[:n])
        i = 0
        while events[i].type != 0:
            e = events[i]
            if e.type == EVENT_WORD:
                self.events.append((e.text_position, e.length, e.audio_position))
            i += 1
        return 0

    def speak(self, voice: str, rate: int, text: str) -> tuple[array.array, list[dict]]:
        """The speech's samples (at self.rate) and its words with their starts (ms)."""
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(f"espeak-ng has no voice {voice!r}")
        self.lib.espeak_SetParameter(RATE_PARAMETER, rate, 0)
        self.samples, self.events = array.array("h"), []
        b = text.encode()
        self.lib.espeak_Synth(b, len(b) + 1, 0, 0, 0, CHARS_UTF8, None, None)
        self.lib.espeak_Synchronize()
        # text_position counts characters from 1; the sentences are ASCII.
        words = [{"text": text[p - 1 : p - 1 + n], "start_ms": ms} for p, n, ms in self.events]
        return self.samples, [w for w in words if w["text"].strip(" ,.?!")]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lang", choices=sorted(VOICES), required=True)
    ap.add_argument("sentences", type=Path, nargs="+")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    sp = Speaker()
    texts = [t.strip() for f in a.sentences for t in f.read_text().splitlines() if t.strip()]
    voices = VOICES[a.lang]
    for i, text in enumerate(texts):
        voice, rate = voices[i % len(voices)], RATES[i % len(RATES)]
        samples, words = sp.speak(voice, rate, text)
        name = f"{a.lang}_{i:03d}"
        raw = a.out / f"{name}.raw.wav"
        with wave.open(str(raw), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sp.rate)
            w.writeframes(samples.tobytes())
        to16k = ["-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer"]
        pad = ["pad", f"{PAD_BEFORE_MS / 1000}", f"{PAD_AFTER_MS / 1000}"]
        subprocess.run(["sox", "-D", "-R", "-G", str(raw), *to16k, str(a.out / f"{name}.wav"), *pad], check=True)
        raw.unlink()
        for w in words:
            w["start_ms"] += PAD_BEFORE_MS
        speech_end = PAD_BEFORE_MS + len(samples) * 1000 // sp.rate
        ref = {"text": text, "voice": voice, "rate": rate, "speech_end_ms": speech_end, "words": words}
        (a.out / f"{name}.json").write_text(json.dumps(ref) + "\n")
    print(f"{len(texts)} sentences in {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

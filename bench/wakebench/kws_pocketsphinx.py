# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""PocketSphinx's keyword search over the wake benchmark's corpus (issue 21).

A lever measured and not kept (docs/wake.md, "A name whisper wrote nothing
for"): PocketSphinx's US English acoustic model is trained on recordings of
many speakers, where agorad's keyword spotter hears only synthetic voices.
Each file is searched whole for the name (four pronunciations) with a
threshold low enough to report every candidate with its score; the table
then counts, per threshold, the positives found per language, position and
engine, the detections in the babble, and the recordings and near-miss
files with any.

    python3 -m venv build/ps-venv
    build/ps-venv/bin/pip install --require-hashes -r bench/wakebench/requirements-pocketsphinx.txt
    build/ps-venv/bin/python bench/wakebench/kws_pocketsphinx.py bench/out/wake/corpus
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import wave
from collections import Counter
from pathlib import Path

from pocketsphinx import Config, Decoder, get_model_path

# The name as the US English model's phones can say it: the dictionary's own
# entry (AE G ER AH) and the English and Dutch ways of saying it.
PRONUNCIATIONS = ["AH G AO R AH", "AA G AO R AH", "AE G ER AH", "AA G OW R AA"]
# Scores are the keyphrase's path over the best phone-loop path, in the
# decoder's log units (base 1.0001, shifted by 10 bits), as its kws
# threshold compares them; KWS_MAX is what the search subtracts.
LOG_BASE, SHIFT, KWS_MAX = 1.0001, 10, 1500
THRESHOLDS = [-400, -300, -200, -100]


def kws_threshold(score: float) -> float:
    """The `kws_threshold` setting that corresponds to a score."""
    return math.exp(score * (1 << SHIFT) * math.log(LOG_BASE))


def decoder(tmp: Path) -> Decoder:
    model = Path(get_model_path()) / "en-us"
    lines = [
        line
        for line in (model / "cmudict-en-us.dict").read_text().splitlines()
        if not line.startswith(("agora ", "agora("))
    ]
    lines += [f"agora{'' if i == 0 else f'({i + 1})'} {p}" for i, p in enumerate(PRONUNCIATIONS)]
    (tmp / "dict").write_text("\n".join(lines) + "\n")
    (tmp / "kws").write_text("agora /1e-50/\n")
    cfg = Config(hmm=str(model / "en-us"), dict=str(tmp / "dict"), kws=str(tmp / "kws"), loglevel="ERROR")
    return Decoder(cfg)


def scores(dec: Decoder, path: Path) -> list[float]:
    """The score of every candidate the search reports in a file."""
    with wave.open(str(path), "rb") as w:
        data = w.readframes(w.getnframes())
    dec.start_utt()
    dec.process_raw(data, full_utt=True)
    dec.end_utt()
    out = []
    for seg in dec.seg() or []:
        # The Python binding hands the log score back exponentiated.
        out.append(math.log(seg.prob) / math.log(LOG_BASE) + KWS_MAX if seg.prob > 0 else -math.inf)
    return out


def category(row: dict[str, str]) -> str:
    if row["set"] == "neg":
        return row["kind"]
    engine = row["voice"].split(":")[0] if ":" in row["voice"] else "espeak"
    return f"{row['lang']} {row['position']} {row['kind']} {engine}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    args = ap.parse_args()
    with (args.corpus / "corpus.tsv").open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    with tempfile.TemporaryDirectory() as tmp:
        dec = decoder(Path(tmp))
        found = [scores(dec, args.corpus / r["file"]) for r in rows]
    columns = [
        ("en start", "en start clean espeak"),
        ("en mid", "en mid clean espeak"),
        ("nl start", "nl start clean espeak"),
        ("nl mid", "nl mid clean espeak"),
        ("en mid flite", "en mid clean flite"),
        ("en mid festival", "en mid clean festival"),
    ]
    total = Counter(category(r) for r in rows)
    head = ["kws_threshold (about)", *(c for c, _ in columns), "babble detections", "recordings", "near-miss files"]
    print("| " + " | ".join(head) + " |")
    print("|---" * len(head) + "|")
    for th in THRESHOLDS:
        hit: Counter[str] = Counter()
        babble = 0
        for r, s in zip(rows, found, strict=True):
            n = sum(x >= th for x in s)
            if r["kind"] == "babble":
                babble += n
            elif n:
                hit[category(r)] += 1
        cells = [f"{hit[k] * 100 // total[k]} %" if total[k] else "none" for _, k in columns]
        print(
            f"| {kws_threshold(th):.0e} | "
            + " | ".join(cells)
            + f" | {babble} | {hit['clip']} of {total['clip']} | {hit['nearmiss']} of {total['nearmiss']} |"
        )
    print(f"\n{len(rows)} files; babble {total['babble']} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

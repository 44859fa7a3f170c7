# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Scores word times against espeak-ng's (espeak_words.py's NAME.json).

Reads the JSON lines `agorad transcribe` wrote for a set (the keyword
spotter on, so each utterance carries its words) and prints one markdown
row per run: how many of whisper's words match the spoken ones (same text,
in order), how far their starts are from where espeak-ng said them (median,
90th percentile, share within 150 ms), how many words have no length, and
how many start after the speech ended. Then, where the keyword spotter
heard the name and the word after it was matched: how long after that
word's start the spotter's end came, where espeak-ng said it and on the
run's word clock (what wake.Rules.MatchHeard's spotLag stands for).

    python3 score.py SETDIR RUN.jsonl [RUN.jsonl ...]
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

WORD = re.compile(r"[^\w']+", re.UNICODE)
NAME = "agora"


def norm(w: str) -> str:
    return WORD.sub("", w.lower())


def score(setdir: Path, run: Path) -> dict:
    per: dict[str, list[dict]] = defaultdict(list)
    for line in run.read_text().splitlines():
        if line.startswith("{"):
            u = json.loads(line)
            per[Path(u["file"]).stem].append(u)
    errs: list[int] = []
    true_lag: list[int] = []
    clock_lag: list[int] = []
    words = zero = late = 0
    for name, utts in per.items():
        ref = json.loads((setdir / f"{name}.json").read_text())
        said = [(norm(w["text"]), w["start_ms"]) for w in ref["words"]]
        end = ref["speech_end_ms"]
        heard = [
            (norm(w["text"]), u["pad_start_ms"] + w["start_ms"], u["pad_start_ms"] + w["end_ms"], u)
            for u in utts
            for w in u.get("words") or []
        ]
        words += len(heard)
        zero += sum(1 for _, s, e, _ in heard if e <= s)
        late += sum(1 for _, s, _, _ in heard if s >= end)
        m = difflib.SequenceMatcher(a=[w for w, _ in said], b=[w[0] for w in heard], autojunk=False)
        matched = {}
        for a, b, n in m.get_matching_blocks():
            for k in range(n):
                matched[a + k] = heard[b + k]
                errs.append(abs(heard[b + k][1] - said[a + k][1]))
        names = [i for i, (w, _) in enumerate(said) if w == NAME]
        if names and names[0] + 1 in matched:
            _, start, _, u = matched[names[0] + 1]
            spot = u.get("spot") or {}
            if spot.get("heard"):
                spot_end = u["pad_start_ms"] + spot["end_ms"]
                true_lag.append(spot_end - said[names[0] + 1][1])
                clock_lag.append(spot_end - start)
    errs.sort()

    def q(p: float, xs: list[int] | None = None) -> int:
        xs = errs if xs is None else sorted(xs)
        return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else -1

    return {
        "words": words,
        "matched": len(errs),
        "median_ms": q(0.5),
        "p90_ms": q(0.9),
        "within150": sum(e <= 150 for e in errs) / len(errs) if errs else 0.0,
        "zero_length": zero,
        "late": late,
        "spotted": len(true_lag),
        "lag_true_ms": q(0.5, true_lag),
        "lag_clock_ms": (q(0.25, clock_lag), q(0.5, clock_lag), q(0.75, clock_lag)),
    }


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    setdir = Path(sys.argv[1])
    print(
        "| run | words matched | start error median / p90 | within 150 ms | no length | after the speech "
        "| name spotted, next word matched | spotter's end after the next word's start: said / clock quartiles |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for run in sys.argv[2:]:
        s = score(setdir, Path(run))
        print(
            f"| {Path(run).stem} | {s['matched']} of {s['words']} | {s['median_ms']} / {s['p90_ms']} ms "
            f"| {100 * s['within150']:.1f} % | {s['zero_length']} | {s['late']} | {s['spotted']} "
            f"| {s['lag_true_ms']} / {'-'.join(str(x) for x in s['lag_clock_ms'])} ms |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Scores one run of the wake-phrase benchmark (issue 21).

Reads the corpus (corpus.tsv) and the JSON lines `agorad transcribe` wrote
for it, and prints a markdown table row set: detection per language,
position and noise; false wakes per hour of negatives and on the
near-misses; word error rate of the question after the name; the
spotter's time against whisper's.

    python3 score.py CORPUS_DIR RUN.jsonl --label NAME [--langs en,nl] [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import wave
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

WORD = re.compile(r"[\w']+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def edits(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def seconds(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


def load_runs(path: Path) -> dict[str, list[dict]]:
    by_file: dict[str, list[dict]] = defaultdict(list)
    with path.open() as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                d = json.loads(line)
                by_file[Path(d["file"]).name].append(d)
    return by_file


def read_rows(corpus: Path, langs: set[str]) -> list[dict[str, str]]:
    """The corpus rows scored: positives of the model's languages and every
    negative (a device with the English model still hears Dutch)."""
    with (corpus / "corpus.tsv").open() as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["set"] == "neg" or r["lang"] in langs]


def score(
    rows: list[dict[str, str]],
    runs: dict[str, list[dict]],
    duration: Callable[[str], float],
    key: str = "wake",
    threshold: float = 0.0,
) -> dict:
    """Scores the verdicts in runs (by file name) against rows.

    duration gives a negative file's length in seconds. key is the verdict
    scored ("wake", or "text_wake": whisper's text alone); with threshold,
    an utterance whose spotter score is below it is judged on whisper's
    text alone. Returns detection cells [hits, n] keyed (lang, position,
    clean|noise), false wakes by negative kind and their hours, near-miss
    wakes, the question's word errors, and the spotter's and whisper's
    time.
    """
    det: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    rem_err = rem_len = 0
    kind_seconds: dict[str, float] = defaultdict(float)
    false: dict[str, int] = defaultdict(int)
    nearmiss_files: list[str] = []
    missing = 0
    spot_ms = whisper_ms = 0
    utts = 0
    for r in rows:
        res = runs.get(Path(r["file"]).name, [])
        if not res:
            missing += 1  # the VAD found no utterance: a miss for a positive
        for u in res:
            utts += 1
            whisper_ms += u.get("processing_ms", 0)
            if key == "wake":
                spot_ms += (u.get("spot") or {}).get("ms", 0)
        if threshold:
            # Below the threshold the spotter did not hear the name: the
            # verdict is whisper's text alone.
            res = [
                {**u, "wake": u.get("text_wake")} if (u.get("spot") or {}).get("score", 1) < threshold else u
                for u in res
            ]
        wakes = [{**u, "wake": u[key]} for u in res if u.get(key)]
        if r["set"] == "pos":
            want = "listen" if r["position"] == "listen" else "feedback"
            ok = any(u["wake"]["action"] == want for u in wakes)
            noise = "noise" if r["kind"].startswith("noise") else "clean"
            cell = det[(r["lang"], r["position"], noise)]
            cell[0] += ok
            cell[1] += 1
            if ok and r["position"] != "listen":
                got = next(u["wake"]["remainder"] for u in wakes if u["wake"]["action"] == want)
                ref = words(r["remainder"])
                rem_err += edits(ref, words(got))
                rem_len += len(ref)
        else:
            secs = duration(r["file"])
            kind_seconds[r["kind"]] += secs
            false[r["kind"]] += len(wakes)
            if wakes and r["kind"] == "nearmiss":
                nearmiss_files.append(f"{r['file']}: {wakes[0]['text']!r}")
    hours = sum(kind_seconds.values()) / 3600
    total_false = sum(false.values())
    return {
        "det": dict(det),
        "missing": missing,
        "utterances": utts,
        "neg_hours": hours,
        "false": dict(false),
        "false_per_hour": total_false / max(hours, 1e-9),
        "neg_hours_by_kind": {k: v / 3600 for k, v in sorted(kind_seconds.items())},
        "nearmiss": nearmiss_files,
        "remainder_wer": 100 * rem_err / max(rem_len, 1),
        "remainder_words": rem_len,
        "spot_ms": spot_ms,
        "whisper_ms": whisper_ms,
    }


def report(label: str, langs: set[str], sc: dict) -> dict:
    """Prints sc as the benchmark's markdown and returns its JSON form."""
    det = sc["det"]
    out = {"label": label, "missing": sc["missing"], "utterances": sc["utterances"]}
    print(f"### {label}\n")
    print("| lang | position | clean | 10 dB noise |\n|---|---|---|---|")
    for lang in sorted(langs):
        for pos in ("start", "mid", "listen"):
            c, n = det.get((lang, pos, "clean"), [0, 0]), det.get((lang, pos, "noise"), [0, 0])
            if c[1] + n[1] == 0:
                continue
            pc = f"{c[0]}/{c[1]} ({100 * c[0] / max(c[1], 1):.0f} %)"
            pn = f"{n[0]}/{n[1]} ({100 * n[0] / max(n[1], 1):.0f} %)"
            print(f"| {lang} | {pos} | {pc} | {pn} |")
            out[f"{lang}-{pos}"] = [c, n]
    false = sc["false"]
    total_false = sum(false.values())
    print(
        f"\nnegatives: {sc['neg_hours']:.2f} h, false wakes {total_false} "
        f"({sc['false_per_hour']:.2f}/h): " + ", ".join(f"{k} {v}" for k, v in sorted(false.items()))
    )
    if sc["nearmiss"]:
        print("near-miss wakes: " + "; ".join(sc["nearmiss"][:10]))
    print(
        f"question after the name: WER {sc['remainder_wer']:.1f} % "
        f"over {sc['remainder_words']} words of detected positives"
    )
    if sc["whisper_ms"]:
        print(
            f"spotter {sc['spot_ms']} ms against whisper {sc['whisper_ms']} ms over {sc['utterances']} utterances "
            f"({100 * sc['spot_ms'] / sc['whisper_ms']:.1f} % of whisper's wall time)"
        )
    if sc["missing"]:
        print(f"{sc['missing']} files without an utterance (the VAD heard nothing)")
    for k in (
        "neg_hours",
        "false",
        "false_per_hour",
        "neg_hours_by_kind",
        "nearmiss",
        "remainder_wer",
        "spot_ms",
        "whisper_ms",
    ):
        out[k] = sc[k]
    print()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("run", type=Path)
    ap.add_argument("--label", required=True)
    ap.add_argument("--langs", default="en,nl", help="languages of the positives scored")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--files", type=Path, help="the files the run was given (default: those with output)")
    ap.add_argument(
        "--key", default="wake", help="the verdict scored: wake, or text_wake (whisper's text alone, in a spotter run)"
    )
    ap.add_argument(
        "--threshold",
        type=float,
        default=0.0,
        help="score the spotter as if its threshold were this (at least the run's): below it, whisper's text decides",
    )
    a = ap.parse_args()
    langs = set(a.langs.split(","))
    runs = load_runs(a.run)
    rows = read_rows(a.corpus, langs)
    ran = {Path(p).name for p in a.files.read_text().split()} if a.files else set(runs)
    rows = [r for r in rows if Path(r["file"]).name in ran]
    sc = score(rows, runs, lambda f: seconds(a.corpus / f), a.key, a.threshold)
    out = report(a.label, langs, sc)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

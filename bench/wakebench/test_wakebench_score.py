# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""score.py: the wake benchmark's figures from a corpus and a run's verdicts."""

from __future__ import annotations

import importlib.util
import json
import sys
import wave
from pathlib import Path

import pytest

# Loaded under a name of its own: bench/wordtimes has a score.py too, and
# pytest runs both directories in one process.
_spec = importlib.util.spec_from_file_location("wakebench_score", Path(__file__).resolve().parent / "score.py")
assert _spec and _spec.loader
score = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(score)

COLS = ("file", "set", "lang", "position", "kind", "remainder")


def row(file: str, set_: str, lang: str = "en", position: str = "", kind: str = "clean", remainder: str = "") -> dict:
    return dict(zip(COLS, (file, set_, lang, position, kind, remainder), strict=True))


def wake(action: str, remainder: str = "") -> dict:
    return {"action": action, "remainder": remainder}


def utt(file: str, w: dict | None, text: str = "", spot: float | None = None, text_wake: dict | None = None) -> dict:
    u: dict = {"file": file, "text": text, "wake": w, "text_wake": text_wake, "processing_ms": 100}
    if spot is not None:
        u["spot"] = {"score": spot, "ms": 5}
    return u


ROWS = [
    row("p1.wav", "pos", position="start", remainder="what is the fire rating"),
    row("p2.wav", "pos", position="mid", kind="noise10-site", remainder="log it"),
    row("p3.wav", "pos", position="listen"),
    row("p4.wav", "pos", position="listen"),
    row("p5.wav", "pos", lang="nl", position="start", remainder="wat is dit"),
    row("n1.wav", "neg", kind="babble"),
    row("n2.wav", "neg", kind="nearmiss"),
]
RUNS = {
    "p1.wav": [utt("p1.wav", wake("feedback", "What is fire rating?"), spot=0.99)],
    "p2.wav": [utt("p2.wav", None, spot=0.2)],
    "p3.wav": [utt("p3.wav", wake("listen"), spot=0.5, text_wake=wake("listen"))],
    "p4.wav": [utt("p4.wav", wake("feedback", "listen"), spot=0.99)],  # the wrong action: a miss
    # p5: no utterance at all (the VAD heard nothing)
    "n1.wav": [utt("n1.wav", wake("feedback", "x")), utt("n1.wav", wake("feedback", "y"))],
    "n2.wav": [utt("n2.wav", wake("feedback"), text="Angora wool")],
}
SECONDS = {"n1.wav": 1800.0, "n2.wav": 1800.0}


@pytest.mark.parametrize(
    ("cell", "want"),
    [
        (("en", "start", "clean"), [1, 1]),
        (("en", "mid", "noise"), [0, 1]),
        (("en", "listen", "clean"), [1, 2]),
        (("nl", "start", "clean"), [0, 1]),
    ],
)
def test_detection_cells(cell: tuple[str, str, str], want: list[int]) -> None:
    sc = score.score(ROWS, RUNS, SECONDS.__getitem__)
    assert sc["det"][cell] == want


def test_negatives_missing_and_question() -> None:
    sc = score.score(ROWS, RUNS, SECONDS.__getitem__)
    assert sc["false"] == {"babble": 2, "nearmiss": 1}
    assert sc["neg_hours"] == pytest.approx(1.0)
    assert sc["false_per_hour"] == pytest.approx(3.0)
    assert sc["nearmiss"] == ["n2.wav: 'Angora wool'"]
    assert sc["missing"] == 1
    # "what is the fire rating" against "What is fire rating?": one word dropped of 5.
    assert sc["remainder_words"] == 5
    assert sc["remainder_wer"] == pytest.approx(20.0)
    assert (sc["spot_ms"], sc["whisper_ms"], sc["utterances"]) == (20, 700, 7)


def test_threshold_leaves_low_scores_to_the_text() -> None:
    # At 0.9, p3's spot (0.5) is judged on whisper's text, which also heard
    # listen; p1 (0.99) keeps the spotter's verdict.
    sc = score.score(ROWS, RUNS, SECONDS.__getitem__, threshold=0.9)
    assert sc["det"][("en", "listen", "clean")] == [1, 2]
    assert sc["det"][("en", "start", "clean")] == [1, 1]
    # At 0.995 p1's spot is below it too and whisper's text heard nothing.
    sc = score.score(ROWS, RUNS, SECONDS.__getitem__, threshold=0.995)
    assert sc["det"][("en", "start", "clean")] == [0, 1]
    # The negatives without a score keep their wakes.
    assert sc["false"]["babble"] == 2


def test_text_wake_key() -> None:
    sc = score.score(ROWS, RUNS, SECONDS.__getitem__, key="text_wake")
    assert sc["det"][("en", "listen", "clean")] == [1, 2]
    assert sc["det"][("en", "start", "clean")] == [0, 1]
    assert sc["false"] == {"babble": 0, "nearmiss": 0}
    assert sc["spot_ms"] == 0  # the spotter's time counts only for its verdict


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with (corpus / "corpus.tsv").open("w") as f:
        f.write("\t".join(COLS) + "\n")
        for r in ROWS:
            f.write("\t".join(r[c] for c in COLS) + "\n")
    for name in ("n1.wav", "n2.wav"):
        with wave.open(str(corpus / name), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(b"\0\0" * 16000 * 9)  # 9 s each
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(u) + "\n" for us in RUNS.values() for u in us) + "not json\n")
    out = tmp_path / "out.json"
    monkeypatch.setattr(
        sys, "argv", ["score.py", str(corpus), str(run), "--label", "t", "--langs", "en", "--json", str(out)]
    )
    assert score.main() == 0
    got = json.loads(out.read_text())
    # English positives only (--langs en); p5 is Dutch, so nothing is missing.
    assert got["missing"] == 0
    assert got["en-listen"] == [[1, 2], [0, 0]]
    assert got["false_per_hour"] == pytest.approx(3 / (18 / 3600))
    printed = capsys.readouterr().out
    assert "| en | start | 1/1 (100 %) | 0/0 (0 %) |" in printed
    assert "near-miss wakes: n2.wav: 'Angora wool'" in printed

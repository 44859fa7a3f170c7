# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
import json
from pathlib import Path

from score import score


def write(path: Path, obj) -> None:
    path.write_text(json.dumps(obj) + "\n")


def test_score(tmp_path: Path) -> None:
    words = [{"text": "The", "start_ms": 300}, {"text": "door", "start_ms": 500}, {"text": "opens.", "start_ms": 800}]
    write(tmp_path / "en_000.json", {"text": "The door opens.", "speech_end_ms": 1200, "words": words})
    # Whisper wrote "a door opens": "door" 100 ms late, "opens" 300 ms late
    # and without length, and a word after the speech.
    heard = [
        {"text": "a", "start_ms": 0, "end_ms": 100},
        {"text": "door", "start_ms": 400, "end_ms": 600},
        {"text": "opens.", "start_ms": 900, "end_ms": 900},
        {"text": "you", "start_ms": 1300, "end_ms": 1400},
    ]
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"file": "set/en_000.wav", "pad_start_ms": 200, "words": heard}) + "\n")
    s = score(tmp_path, run)
    assert s["words"] == 4
    assert s["matched"] == 2
    assert s["median_ms"] == 300
    assert s["p90_ms"] == 300
    assert s["within150"] == 0.5
    assert s["zero_length"] == 1
    assert s["late"] == 1


def test_spotter_lag(tmp_path: Path) -> None:
    words = [{"text": "Agora,", "start_ms": 300}, {"text": "open", "start_ms": 900}, {"text": "it", "start_ms": 1200}]
    write(tmp_path / "en_001.json", {"text": "Agora, open it.", "speech_end_ms": 1500, "words": words})
    # The spotter's end at 1100 ms: 200 ms after "open" was said, 500 ms
    # after whisper's clock has it start.
    heard = [
        {"text": "A", "start_ms": 0, "end_ms": 300},
        {"text": "Gora,", "start_ms": 300, "end_ms": 500},
        {"text": "open", "start_ms": 500, "end_ms": 800},
        {"text": "it.", "start_ms": 800, "end_ms": 1000},
    ]
    u = {"file": "en_001.wav", "pad_start_ms": 100, "words": heard, "spot": {"heard": True, "end_ms": 1000}}
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps(u) + "\n")
    s = score(tmp_path, run)
    assert s["spotted"] == 1
    assert s["lag_true_ms"] == 200
    assert s["lag_clock_ms"] == (500, 500, 500)
    u["spot"]["heard"] = False
    run.write_text(json.dumps(u) + "\n")
    assert score(tmp_path, run)["spotted"] == 0

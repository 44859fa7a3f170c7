# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""live.py: the shipped configuration with the language set, and the wake actions read from the daemon's log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import live

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("lang", ["en", "nl", "auto"])
def test_config_sets_language(lang: str) -> None:
    out = live.config(ROOT / "configs" / "agorad.yaml", lang)
    block = out.split("\ntranscribe:\n", 1)[1].split("\nsegment:", 1)[0]
    assert f"\n  language: {lang}\n" in "\n" + block
    # Nothing else changed.
    assert out.replace(f"  language: {lang}\n", "", 1).count("\n") == out.count("\n") - 1


def test_config_without_language(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("mode: listen\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"no transcribe\.language"):
        live.config(p, "en")


def test_wakes_from_log() -> None:
    log = "\n".join(
        [
            'time=t level=INFO msg="keyword spotter ready" threshold=0.995',
            'time=t level=INFO msg=utterance mode=listen stored=1 sent=0 wake="" chars=43 rtf=0.2',
            "time=t level=INFO msg=utterance mode=feedback stored=0 sent=1 wake=feedback chars=34 rtf=0.5",
            "time=t level=INFO msg=utterance mode=listen stored=0 sent=0 wake=listen chars=7 rtf=0.5",
        ]
    )
    assert live.wakes(log) == ["", "feedback", "listen"]

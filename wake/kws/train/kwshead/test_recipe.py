# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""The recipe end to end on a tiny configuration: it synthesises, embeds
with the daemon's front end, fits and writes a head whose threshold was
chosen on the development speakers, with the per-split report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[4]
KWS = ROOT / "models" / "kws"


@pytest.mark.skipif(not (KWS / "embedding_model.tflite").exists(), reason="no spotter front end (make models)")
@pytest.mark.skipif(not shutil.which("go") and not Path("/usr/local/go/bin/go").exists(), reason="no Go toolchain")
@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng is not installed (scripts/install-deps.sh)")
def test_tiny_recipe(tmp_path: Path) -> None:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    embed = tmp_path / "kws-embed"
    subprocess.run([go, "build", "-o", str(embed), "./wake/kws/train/embed"], cwd=ROOT, check=True)
    env = {
        **os.environ,
        "KWS_POS": "40",
        "KWS_NEG": "80",
        "KWS_MEMBERS": "16:1",
        "KWS_EPOCHS": "2",
        "KWS_NEAR": "5",
        "KWS_SPEECH_HOURS": "0.03",
        "KWS_SPEECH_DEV_HOURS": "0.03",
    }
    out = tmp_path / "out"
    train_dir = ROOT / "wake" / "kws" / "train"
    for args in (
        ["gen", str(out), "jarvis", "en"],
        ["speech", str(out), "jarvis", "en"],
        ["embed", str(out), str(embed), str(KWS)],
        ["fit", str(out)],
    ):
        subprocess.run([sys.executable, "-m", "kwshead", *args], cwd=train_dir, env=env, check=True)
    head = json.loads((out / "head.json").read_text())
    assert head["name"] == "jarvis" and head["format"] == "agorad-kws-head/1"
    assert 0.5 <= head["threshold"] < 1
    report = (out / "report.txt").read_text()
    assert "dev en: recall" in report and "train en: recall" in report
    assert "dev running speech:" in report and "train running speech:" in report
    assert len((out / "near.txt").read_text().splitlines()) == 5

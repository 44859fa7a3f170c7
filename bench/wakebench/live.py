# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""The wake benchmark's verdicts through the daemon's own live path (issue 45).

`agorad transcribe` segments a whole file and judges each utterance; the
daemon on a microphone does more before whisper and the spotter see
anything: the wearer gate (its lookahead, the frames quieter than the
wearer silenced, the words dropped after whisper), the segmenter on the
gated stream, speculative runs inside the end-of-turn wait, and the router.
This runs the daemon itself (`agorad run --input FILE`: the same capture
loop as the microphone's, fed 100 ms chunks) on each corpus file, with the
shipped configuration but for the model and language, and reads the wake
action of every utterance from its log. It writes one JSON line per
utterance in `agorad transcribe`'s shape (file, wake), so score.py scores
it unchanged; the remainder is not in the daemon's log, so the question's
WER of a live run means nothing.

    python3 bench/wakebench/live.py CORPUS FILE... --model models/ggml-tiny.en-q8_0.bin --lang en > live.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UTTERANCE = re.compile(r"\bmsg=utterance\b.*?\bwake=(\S*)")


def config(base: Path, lang: str) -> str:
    """The shipped configuration with transcribe.language set to lang."""
    text = base.read_text(encoding="utf-8")
    out, n = re.subn(r"(?m)^(transcribe:\n(?:[ \t#].*\n|\n)*?  language:) *\S+", rf"\1 {lang}", text)
    if n != 1:
        raise SystemExit(f"live.py: no transcribe.language in {base}")
    return out


def wakes(log: str) -> list[str]:
    """The wake action of each utterance the daemon routed ("" for none), in order."""
    return [m.group(1).strip('"') for m in UTTERANCE.finditer(log)]


def run_file(agorad: Path, cfg: Path, model: str, wav: Path, timeout: float) -> tuple[list[str], str]:
    with tempfile.TemporaryDirectory(prefix="wakelive-") as d:
        cmd = [
            str(agorad),
            "run",
            "-c",
            str(cfg),
            "--input",
            str(wav),
            "--model",
            model,
            "--state-dir",
            d,
            "--socket",
            f"{d}/ctl.sock",
            "--broker",
            "tcp://127.0.0.1:9",  # discard: nothing listens; the outbox keeps what was sent
            "--drain-timeout",
            "1ms",
        ]
        env = {"OMP_WAIT_POLICY": "passive", "PATH": "/usr/bin:/bin"}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        log = p.stdout + p.stderr
        # Nothing listens at the broker, so the outbox never drains: exit 3
        # after the file, everything transcribed and stored.
        if p.returncode != 0 and not (p.returncode == 3 and "outbox not drained" in log):
            raise RuntimeError(f"agorad run on {wav} exited {p.returncode}: {log[-2000:]}")
        return wakes(log), log


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path, help="corpus WAV files")
    ap.add_argument("--model", required=True, help="whisper model file")
    ap.add_argument("--lang", required=True, choices=("en", "nl", "auto"))
    ap.add_argument("--agorad", type=Path, default=ROOT / "build" / "bin" / "agorad")
    ap.add_argument("--config", type=Path, default=ROOT / "configs" / "agorad.yaml")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one file may take")
    ap.add_argument("--logs", type=Path, help="directory for each file's daemon log")
    a = ap.parse_args(argv)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as cfg:
        cfg.write(config(a.config, a.lang))
        cfg.flush()
        for wav in a.files:
            actions, log = run_file(a.agorad, Path(cfg.name), a.model, wav, a.timeout)
            if a.logs:
                a.logs.mkdir(parents=True, exist_ok=True)
                (a.logs / (wav.stem + ".log")).write_text(log, encoding="utf-8")
            for act in actions:
                wake = {"action": act, "remainder": ""} if act else None
                print(json.dumps({"file": str(wav), "wake": wake, "text": ""}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

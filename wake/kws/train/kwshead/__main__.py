# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Command line of the recipe (see __init__)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import train

from . import __doc__ as usage
from .fit import fit
from .gen import gen
from .speech import embed_speech, gen_speech


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(usage, file=sys.stderr)
        return 2
    cmd, out = argv[0], Path(argv[1])
    if cmd == "gen" and len(argv) == 4:
        out.mkdir(parents=True, exist_ok=True)
        langs = [x for x in argv[3].split(",") if x]
        meta = {"name": argv[2], "langs": langs, "seed": int(os.environ.get("KWS_SEED", "1"))}
        (out / "meta.json").write_text(json.dumps(meta) + "\n")
        gen(out, argv[2], langs)
    elif cmd == "speech" and len(argv) == 4:
        # Running speech without the name: training negatives, and apart
        # the development hours that certify the threshold (speech.py).
        hours = {
            "train": float(os.environ.get("KWS_SPEECH_HOURS", "4")),
            "dev": float(os.environ.get("KWS_SPEECH_DEV_HOURS", "3")),
        }
        seed = int(os.environ.get("KWS_SEED", "1"))
        langs = [x for x in argv[3].split(",") if x]
        gen_speech(out, argv[2], langs, hours, seed, int(os.environ.get("KWS_JOBS", str(os.cpu_count() or 2))))
    elif cmd == "embed" and len(argv) == 4:
        train.embed(out, argv[2], argv[3])
        embed_speech(out, argv[2], argv[3])
    elif cmd == "fit":
        fit(out)
    elif cmd == "gate":
        train.gate(out, out / "head.json", out / "gate.json")
    else:
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

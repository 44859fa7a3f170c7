# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""kwshead: the keyword spotter's recipe for any name, from its text alone.

    python -m kwshead gen   OUT NAME LANGS   plan and synthesise the clips (train and dev speakers apart)
    python -m kwshead speech OUT NAME LANGS  hours of running speech without the name (train and dev apart)
    python -m kwshead embed OUT EMBED KWS    embed them with the daemon's front end
    python -m kwshead fit   OUT              fit the head, choose its threshold on the dev split
    python -m kwshead gate  OUT              teach the gate the head's logit

OUT then holds head.json (and gate.json) for kws.OpenDir, and report.txt.
Everything is drawn from a fixed seed (KWS_SEED, default 1). Run from
wake/kws/train (the package reuses train.py's synthesis and network).
"""

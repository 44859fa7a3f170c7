# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""The running-speech negatives: the name is never in them, their text
splits by sentence, and false accepts are counted per event."""

from __future__ import annotations

import random

import pytest

np = pytest.importorskip("numpy")

from kwshead.fit import EVENT, events  # noqa: E402
from kwshead.speech import dev_text, holds, paragraphs  # noqa: E402


@pytest.mark.parametrize(
    ("sentence", "name", "want"),
    [
        ("Any computer program may be run.", "computer", True),
        ("The microcomputers were sold.", "computer", True),
        ("COMPUTERS, printers.", "computer", True),
        ("We compute the commuter's fare.", "computer", False),
        ("Hey Jar Vis, wake up.", "jarvis", True),
        ("Alexis met Alex.", "alexa", False),
        ("Alex and Bo: said across words, it sounds like the name.", "alexa", True),
    ],
)
def test_holds_the_name(sentence: str, name: str, want: bool) -> None:
    assert holds(sentence, name) is want


def test_text_split_is_fixed_and_shared() -> None:
    sents = [f"sentence number {i} of the licence." for i in range(400)]
    dev = [s for s in sents if dev_text(s)]
    assert dev == [s for s in sents if dev_text(s)]
    assert 60 < len(dev) < 140  # one in four


def test_paragraphs_add_up_to_the_hours() -> None:
    sents = ["one two three four five six seven eight nine ten."] * 5
    paras = paragraphs(sents, random.Random(1), 600)
    words = sum(len(p.split()) for p in paras)
    assert 600 <= words / 2.5 < 600 + 45  # at most one paragraph over
    assert all(15 * 2.5 <= len(p.split()) < 40 * 2.5 + 10 for p in paras)


class Const:
    """A network whose score is the window's first feature."""

    def forward(self, x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        return [], x[:, 0]


def test_events_are_block_maxima() -> None:
    hop = 1280  # 80 ms
    n = 60  # 4.8 s: blocks of 1.5 s = 19 windows -> 4 blocks
    x = np.zeros((n, 2), np.float32)
    x[3, 0], x[5, 0], x[40, 0] = 0.9, 0.95, 0.99  # one event twice in the first block, one in the third
    ends = np.arange(n) * hop
    ev = events(Const(), [({"seconds": "4.8"}, x, ends)])  # type: ignore[arg-type]
    assert round(EVENT * 16000 / hop) == 19
    assert list(ev) == pytest.approx([0.95, 0.0, 0.99, 0.0])
    assert int(np.sum(ev >= 0.9)) == 2

# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Near-miss words: found by sound, never the name or a word holding it."""

from __future__ import annotations

import shutil

import pytest

from kwshead.near import candidates, distance, near_misses


@pytest.mark.parametrize(("a", "b", "want"), [("", "", 0), ("abc", "abc", 0), ("kitten", "sitting", 3), ("", "ab", 2)])
def test_distance(a: str, b: str, want: int) -> None:
    assert distance(a, b) == want


def test_candidates_leave_out_the_name_and_words_holding_it() -> None:
    words = ["computer", "Computers", "computerise", "commuter", "banana", "compute", "pewter", "co-op"]
    got = candidates("Computer", words)
    assert "commuter" in got and "compute" in got
    assert not {"computer", "computers", "computerise", "banana", "co-op"} & set(got)


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng is not installed (scripts/install-deps.sh)")
def test_near_misses_rank_by_sound() -> None:
    words = ["commuter", "computed", "banana", "compote", "cuter", "jarvis", "compulsory"]
    got = near_misses("computer", "en", count=3, words=words)
    assert got[0] == "commuter"  # one phoneme off
    assert "banana" not in got and len(got) == 3

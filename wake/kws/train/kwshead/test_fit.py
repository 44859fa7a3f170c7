# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""The threshold rule and the speakers' split."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

from kwshead.fit import threshold  # noqa: E402
from kwshead.voices import Speaker  # noqa: E402


def test_threshold_lets_no_negative_through_under_an_hour() -> None:
    neg = np.array([0.2, 0.97, 0.6, 0.9])
    t = threshold(neg, neg_hours=0.8, fa_per_hour=0.5)
    assert t > 0.97 and t < 0.9701


def test_threshold_allows_its_share_over_hours() -> None:
    neg = np.array([0.99, 0.95, 0.9, 0.7])
    assert 0.95 < threshold(neg, neg_hours=2.0, fa_per_hour=0.5) < 0.9501  # one of them may pass


def test_threshold_floor() -> None:
    assert threshold(np.array([0.1]), neg_hours=1, fa_per_hour=0.5) == 0.5


def test_split_is_fixed_per_speaker() -> None:
    sp = [Speaker("espeak", f"en+v{i}", "en") for i in range(200)]
    splits = [s.split for s in sp]
    assert splits == [Speaker(s.engine, s.voice, s.lang).split for s in sp]
    assert 20 < splits.count("dev") < 80  # one in five

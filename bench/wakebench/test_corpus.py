# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""The --small corpus: its TSV, its audio format, remainders and the noise10 SNR."""

from __future__ import annotations

import array
import csv
import math
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus

SHARED = Path(__file__).resolve().parents[3] / "shared"

needs_tools = pytest.mark.skipif(
    not (shutil.which("espeak-ng") and shutil.which("sox") and (SHARED / "audio" / "MANIFEST.tsv").is_file()),
    reason="needs espeak-ng, sox and ../shared/audio",
)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    out = tmp_path_factory.mktemp("corpus")
    assert corpus.main(["--out", str(out), "--small", "--shared", str(SHARED), "--seed", "7"]) == 0
    with (out / "corpus.tsv").open(encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header == list(corpus.COLUMNS)
        f.seek(0)
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return out, rows


def read(path: Path) -> array.array:
    with wave.open(str(path), "rb") as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2), path
        return array.array("h", w.readframes(w.getnframes()))


@needs_tools
def test_rows_and_files(small: tuple[Path, list[dict[str, str]]]) -> None:
    out, rows = small
    allowed = {
        "set": {"pos", "neg"},
        "lang": {"en", "nl"},
        "position": {"start", "mid", "listen", "none"},
        "kind": {"clean", "noise10", "nearmiss", "clip", "babble"},
    }
    for r in rows:
        assert None not in r and all(v is not None for v in r.values()), r
        for col, ok in allowed.items():
            assert r[col] in ok, (col, r)
        assert (r["set"] == "neg") == (r["position"] == "none"), r
        assert len(read(out / r["file"])) > 16000 // 2, r["file"]
    kinds = {(r["set"], r["lang"], r["position"], r["kind"]) for r in rows}
    for lang in ("en", "nl"):
        for pos in ("start", "mid", "listen"):
            for kind in ("clean", "noise10"):
                assert ("pos", lang, pos, kind) in kinds
        assert ("neg", lang, "none", "nearmiss") in kinds
    assert {r["kind"] for r in rows if r["set"] == "neg"} >= {"clip", "babble", "nearmiss"}


@needs_tools
def test_remainder_and_name(small: tuple[Path, list[dict[str, str]]]) -> None:
    _, rows = small
    for r in rows:
        if r["set"] == "pos":
            assert corpus.NAME_RE.search(r["text"]), r
            assert r["text"].endswith(r["remainder"]), r
            assert (r["remainder"] == "") == (r["position"] == "listen"), r
        else:
            assert r["remainder"] == "", r
            assert not corpus.NAME_RE.search(r["text"]), r


@needs_tools
def test_noise10_snr(small: tuple[Path, list[dict[str, str]]]) -> None:
    out, rows = small
    noisy = [r for r in rows if r["kind"] == "noise10"]
    assert noisy
    for r in noisy:
        clean = read(out / r["file"].replace("_noise10.wav", "_clean.wav"))
        mixed = read(out / r["file"])
        assert len(clean) == len(mixed)
        noise = [m - c for m, c in zip(mixed, clean, strict=True)]
        snr = 20 * math.log10(corpus.voiced_rms(clean) / corpus.rms(noise))
        assert abs(snr - 10) <= 1.5, (r["file"], snr)


@needs_tools
def test_deterministic(small: tuple[Path, list[dict[str, str]]], tmp_path: Path) -> None:
    out, _ = small
    assert corpus.main(["--out", str(tmp_path), "--small", "--shared", str(SHARED), "--seed", "7"]) == 0
    assert (tmp_path / "corpus.tsv").read_bytes() == (out / "corpus.tsv").read_bytes()
    first = next(p for p in sorted(out.glob("pos/*_noise10.wav")))
    assert (tmp_path / first.relative_to(out)).read_bytes() == first.read_bytes()


def test_remainder_rules() -> None:
    cases = [
        ("Agora, what is the maximum span for this beam?", "start", "what is the maximum span for this beam?"),
        ("Hey Agora, is this beam safe?", "start", "is this beam safe?"),
        ("I think we should ask Agora about the insulation.", "mid", "about the insulation."),
        ("Kun je Agora even vragen of de balk past?", "mid", "even vragen of de balk past?"),
        ("Agora, luister.", "listen", ""),
    ]
    for text, pos, want in cases:
        assert corpus.remainder(text, pos) == want
        if pos != "listen":
            corpus.check_position(text, pos)
    with pytest.raises(ValueError):
        corpus.check_position("Agora, is this safe?", "mid")
    with pytest.raises(ValueError):
        corpus.remainder("What do you think, Agora?", "mid")


def test_sentence_files() -> None:
    for lang in ("en", "nl"):
        for pos, least in (("start", 40), ("mid", 40), ("listen", 6)):
            sents = corpus.read_lines(f"{lang}_{pos}.txt")
            assert len(sents) >= least, (lang, pos)
            assert len(set(sents)) == len(sents), (lang, pos)
            for s in sents:
                corpus.remainder(s, pos)
                if pos != "listen":
                    corpus.check_position(s, pos)
        for s in corpus.read_lines(f"nearmiss_{lang}.txt"):
            assert not corpus.NAME_RE.search(s), s


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="needs espeak-ng (its voice list)")
def test_engine_decks(tmp_path: Path) -> None:
    """Kokoro speaks both languages, the other engines English only; espeak-ng's decks keep their seeds."""
    b = corpus.Builder(tmp_path, 21, False, SHARED, ["flite", "kokoro"])
    plain = corpus.Builder(tmp_path, 21, False, SHARED)
    try:
        cases = [("en", ["espeak", "flite", "kokoro"]), ("nl", ["espeak", "kokoro"])]
        for lang, want in cases:
            decks = b.decks("deck", lang)
            assert [d.engine for d, _ in decks] == want, lang
            for d, _ in decks:
                sp = d.deal()
                assert sp.lang == lang or d.engine == "espeak", (lang, sp)
            mine = b.decks("deck", lang)[0][0].deal()
            assert mine == plain.decks("deck", lang)[0][0].deal(), lang
    finally:
        b.pool.shutdown()
        plain.pool.shutdown()


def test_kokoro_cmd() -> None:
    sp = corpus.Speaker("jm_kumo+jf_alpha", "", 176, 50, "kokoro", "nl")
    cmd, stdin = corpus.engine_cmd("Agora, luister.", sp, "/tmp/x.wav")
    assert stdin == "Agora, luister."
    assert cmd[1].endswith("kokoro_say.py")
    args = dict(zip(cmd[2::2], cmd[3::2], strict=True))
    assert args == {"--lang": "nl", "--voice": "jm_kumo+jf_alpha", "--speed": "1.10", "--out": "/tmp/x.wav"}
    assert sp.spec == "kokoro:jm_kumo+jf_alpha"


@pytest.mark.parametrize(
    ("args", "stdin", "want"),
    [
        ([], "Agora", "--lang, --voice and --out are required without --batch"),
        (["--lang", "nl", "--voice", "jf_alpha"], "Agora", "--lang, --voice and --out are required without --batch"),
        (["--batch"], '{"lang": "en"}\n', "line 1 of the batch"),
        (["--batch"], "not json\n", "line 1 of the batch"),
    ],
)
def test_kokoro_say_refuses(args: list[str], stdin: str, want: str) -> None:
    """Bad arguments and bad batch lines are named, before Kokoro is loaded."""
    say = Path(__file__).resolve().parent / "kokoro_say.py"
    res = subprocess.run([sys.executable, str(say), *args], input=stdin, capture_output=True, text=True)
    assert res.returncode != 0
    assert want in res.stderr


TRAIN = Path(__file__).resolve().parents[2] / "wake" / "kws" / "train" / "train.py"


def _train_lists() -> dict[str, list[str]]:
    """NEAR_EN, NEAR_NL, LEAD_EN and LEAD_NL of the spotter's training, read from its source."""
    import ast

    tree = ast.parse(TRAIN.read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in {"NEAR_EN", "NEAR_NL", "LEAD_EN", "LEAD_NL"}:
                out[name] = [str(v) for v in ast.literal_eval(node.value)]
    return out


def _words(s: str) -> list[str]:
    return [w.lower() for w in corpus.re.findall(r"[\w']+", s)]


def test_test_split_apart() -> None:
    """The frozen test split shares no sentence, lead-in before the name or near-miss word with training or tuning."""
    lists = _train_lists()
    reject = {
        "angora",
        "agra",
        "ahora",
        "agoras",
        "agorae",
        "agorafobie",
        "agorafobisch",
        "agoraphobia",
        "agoraphobic",
        "pythagoras",
        "ago ra",
    }
    for lang in ("en", "nl"):
        lead = [_words(x) for x in lists[f"LEAD_{lang.upper()}"]]
        for pos in ("start", "mid", "listen"):
            test = corpus.read_lines(f"{lang}_{pos}.txt", "test")
            assert len(test) >= 4, (lang, pos)
            assert not set(test) & set(corpus.read_lines(f"{lang}_{pos}.txt")), (lang, pos)
            for s in test:
                corpus.remainder(s, pos)
                if pos != "listen":
                    corpus.check_position(s, pos)
                ws = _words(s)
                before = ws[: ws.index("agora")]
                for ld in lead:
                    assert before[-len(ld) :] != ld or not before, (s, ld)
        near = set(corpus.read_lines(f"nearmiss_{lang}.txt", "test"))
        assert len(near) >= 10 and not near & set(corpus.read_lines(f"nearmiss_{lang}.txt"))
        banned = {w for x in lists[f"NEAR_{lang.upper()}"] if len(_words(x)) == 1 for w in _words(x)} | reject
        for s in near:
            assert not corpus.NAME_RE.search(s), s
            assert not set(_words(s)) & banned, s


def test_test_split_voices(tmp_path: Path) -> None:
    """The test split speaks with voices the spotter never trained on (festival's ked and slt), from its own seed."""
    b = corpus.Builder(tmp_path, corpus.TEST_SEED, False, SHARED, split="test")
    try:
        decks = b.decks("deck", "en")
        assert [(d.engine, sorted(d.voices)) for d, _ in decks] == [("festival", ["ked", "slt"])]
        assert b.decks("deck", "nl") == []
        cmd, _ = corpus.engine_cmd("Agora.", corpus.Speaker("ked", "", 160, 50, "festival"), "/tmp/x.wav")
        assert "(voice_ked_diphone)" in cmd
        kal, _ = corpus.engine_cmd("Agora.", corpus.Speaker("kal", "", 160, 50, "festival"), "/tmp/x.wav")
        assert not any(a.startswith("(voice_") for a in kal)  # the development corpus is unchanged
    finally:
        b.pool.shutdown()

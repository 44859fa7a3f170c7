"""Compare importcheck (libwhisper, imported ggml) with ct2tokens.py
(CTranslate2) outputs: identical token sequences, and WER of each against
the reference transcripts of shared/audio/MANIFEST.tsv (lowercase,
apostrophes deleted, punctuation to spaces, no number normalisation, as in
issue 15's table).

    python compare.py GGML.tsv CT2.tsv MANIFEST.tsv
"""

import re
import sys


def words(text: str) -> list[str]:
    text = text.lower().replace("'", "").replace("\u2019", "")
    return re.sub(r"[^\w\s]", " ", text).split()


def edits(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def load(path: str) -> dict[str, list[str]]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            out[parts[0].rsplit("/", 1)[-1]] = parts[1:]
    return out


def main() -> None:
    ggml, ct2 = load(sys.argv[1]), load(sys.argv[2])
    refs = {}
    with open(sys.argv[3], encoding="utf-8") as f:
        next(f)
        for line in f:
            p = line.rstrip("\n").split("\t")
            refs[p[0]] = p[3]
    clips = [c for c in ggml if c in ct2]
    same = [c for c in clips if ggml[c][2] == ct2[c][2]]
    n_ref = e_g = e_c = 0
    for c in clips:
        ref = words(refs.get(c, ""))
        n_ref += len(ref)
        e_g += edits(ref, words(ggml[c][1]))
        e_c += edits(ref, words(ct2[c][1]))
    print(f"clips {len(clips)}  identical token sequences {len(same)}  reference words {n_ref}")
    print(f"WER libwhisper+import {100 * e_g / max(n_ref, 1):.1f} %  CTranslate2 {100 * e_c / max(n_ref, 1):.1f} %")
    for c in clips:
        if c not in same:
            print(f"  differs: {c}\n    ggml: {ggml[c][1]}\n    ct2:  {ct2[c][1]}")


if __name__ == "__main__":
    main()

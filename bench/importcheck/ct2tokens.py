"""Greedy tokens of CTranslate2 (faster-whisper) on the clips of a list.

The reference side of bench/importcheck: same decoding choices as
importcheck/main.go (greedy, temperature 0, no fallback, no previous text,
no prompt, no extra suppression), one line per clip:
FILE<TAB>LANG<TAB>TEXT<TAB>TOKEN IDS.

    python ct2tokens.py CT2_MODEL_DIR < list.tsv
"""

import sys

from faster_whisper import WhisperModel


def main() -> None:
    model = WhisperModel(sys.argv[1], device="cpu", compute_type="float32", cpu_threads=2)
    eot = model.hf_tokenizer.token_to_id("<|endoftext|>")
    for line in sys.stdin:
        path, lang = line.rstrip("\n").split("\t")
        segments, info = model.transcribe(
            path,
            language=None if lang == "auto" else lang,
            beam_size=1,
            best_of=1,
            temperature=0.0,
            condition_on_previous_text=False,
            suppress_tokens=[],
            vad_filter=False,
        )
        segs = list(segments)
        text = "".join(s.text for s in segs).strip()
        ids = [t for s in segs for t in s.tokens if t < eot]
        print(f"{path}\t{info.language}\t{text}\t{' '.join(map(str, ids))}", flush=True)


if __name__ == "__main__":
    main()

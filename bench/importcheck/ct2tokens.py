"""Greedy tokens of CTranslate2 (faster-whisper) on the clips of a list.

The reference side of bench/importcheck: same decoding choices as
importcheck/main.go (greedy, temperature 0, no fallback, no previous text,
no prompt, no extra suppression), one line per clip:
FILE<TAB>LANG<TAB>TEXT<TAB>TOKEN IDS.

    python ct2tokens.py CT2_MODEL_DIR < list.tsv

With --mel DIR it saves each clip's log-mel features (faster-whisper's
extractor, padded to 30 s) to DIR/<clip>.mel and decodes them by plain
argmax (no suppression, no timestamp rules) from <|startoftranscript|>
[language <|transcribe|>] <|notimestamps|>, as importcheck -mel does.
"""

import os
import sys

import ctranslate2
import numpy as np
from faster_whisper import WhisperModel, decode_audio


def raw(model_dir: str, mel_dir: str) -> None:
    fw = WhisperModel(model_dir, device="cpu", compute_type="float32", cpu_threads=2)
    model = fw.model
    tok = fw.hf_tokenizer
    os.makedirs(mel_dir, exist_ok=True)
    for line in sys.stdin:
        path, lang = line.rstrip("\n").split("\t")
        audio = decode_audio(path, sampling_rate=16000)
        feats = fw.feature_extractor(audio)[:, :3000]
        feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1]))).astype(np.float32)
        base = os.path.splitext(os.path.basename(path))[0]
        feats.tofile(os.path.join(mel_dir, base + ".mel"))
        prompt = ["<|startoftranscript|>"]
        if model.is_multilingual:
            prompt += [f"<|{lang}|>", "<|transcribe|>"]
        prompt.append("<|notimestamps|>")
        res = model.generate(
            ctranslate2.StorageView.from_array(feats[None]),
            [[tok.token_to_id(t) for t in prompt]],
            beam_size=1,
            suppress_blank=False,
            suppress_tokens=[],
            max_length=200 + len(prompt),
            return_no_speech_prob=False,
        )
        ids = [t for t in res[0].sequences_ids[0] if t < tok.token_to_id("<|endoftext|>")]
        print(f"{path}\t{lang}\t\t{' '.join(map(str, ids))}", flush=True)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[2] == "--mel":
        raw(sys.argv[1], sys.argv[3])
        return
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

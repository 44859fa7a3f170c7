# Copyright The agorad Authors. Licensed under the Apache License, Version 2.0.
"""Fits the head on the training speakers' windows, stops early on the
development speakers', and chooses the threshold there.

The threshold is the lowest at which the development split's ordinary
negatives (carrier sentences and noise, by speakers the head never heard)
and its hours of running speech (speech.py: voices and sentences the
training never had) wake the head at most KWS_FA_PER_HOUR times an hour
(default 0.5: with under two hours of them, none may). In running speech
each EVENT seconds count as one chance to wake (bench/realwords counts
at most one false accept per 1.5 s). The training's running speech
(every KWS_SPEECH_STRIDE-th window) is among its negatives. The near-miss words (near.txt) are
negatives of the training, but not of this rule: the target is false
accepts in ordinary speech, and a word one sound off the name ("commuter")
would otherwise set the threshold alone; the report gives how many of
them pass. The head is the mean of KWS_MEMBERS networks
(hidden units: seed), each stopped at its best development epoch."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import train

from . import speech

Data = list[tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]]
Speech = list[tuple[dict[str, str], np.ndarray, np.ndarray]]
EVENT = 1.5  # seconds: at most one false accept an event, as bench/realwords counts them


def members() -> list[tuple[int, int]]:
    spec = os.environ.get("KWS_MEMBERS", "64:1,64:2")
    return [(int(h), int(s)) for h, s in (m.split(":") for m in spec.split(",") if m)]


def stack(data: Data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labelled windows (ignored ones out) and their weights: the
    positives weigh train.POS_WEIGHT of the negatives in all."""
    xs = np.concatenate([d[1][d[2] >= 0] for d in data])
    ys = np.concatenate([d[2][d[2] >= 0] for d in data]).astype(np.float32)
    npos, nneg = max(int(ys.sum()), 1), int(len(ys) - ys.sum())
    w = np.where(ys == 1, train.POS_WEIGHT * nneg / npos, 1.0).astype(np.float32)
    return xs, ys, w / w.mean()


def clip_max(mlp: train.MLP, data: Data) -> np.ndarray:
    x = np.concatenate([d[1] for d in data])
    s = np.concatenate([mlp.forward(x[i : i + 8192])[1] for i in range(0, len(x), 8192)])
    out, k = np.zeros(len(data)), 0
    for j, d in enumerate(data):
        n = len(d[1])
        out[j] = float(s[k : k + n].max()) if n else 0.0
        k += n
    return out


def seconds(d: tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray]) -> float:
    return float(d[3][-1]) / train.RATE if len(d[3]) else 0.0


def threshold(neg_scores: np.ndarray, neg_hours: float, fa_per_hour: float) -> float:
    """The lowest threshold at which at most fa_per_hour*neg_hours of the
    negatives score at or over it."""
    allowed = int(fa_per_hour * neg_hours)
    top = np.sort(neg_scores)[::-1]
    t = float(top[allowed]) + 1e-6 if allowed < len(top) else 0.5
    return float(min(max(t, 0.5), 1 - 1e-7))


def is_near(row: dict[str, str], near: set[str]) -> bool:
    """A negative clip with a near-miss word in the name's place."""
    return row["kind"] == "neg" and bool(near & set(row.get("text", "").lower().split()))


def scores(mlp: train.MLP, x: np.ndarray) -> np.ndarray:
    return np.concatenate([mlp.forward(x[i : i + 8192])[1] for i in range(0, len(x), 8192)]) if len(x) else np.zeros(0)


def events(mlp: train.MLP, paras: Speech) -> np.ndarray:
    """The best score of each EVENT seconds of each paragraph: a
    threshold under k of them wakes the head at most k times there (an
    event across two blocks counts twice: on the safe side)."""
    out = []
    for _, x, ends in paras:
        if not len(x):
            continue
        s = scores(mlp, x)
        hop = float(np.median(np.diff(ends))) if len(ends) > 1 else 1280.0
        block = max(1, round(EVENT * train.RATE / hop))
        pad = (-len(s)) % block
        out.append(np.pad(s, (0, pad)).reshape(-1, block).max(1))
    return np.concatenate(out) if out else np.zeros(0)


def speech_hours(paras: Speech) -> float:
    return sum(float(r["seconds"]) for r, _, _ in paras) / 3600


def dev_recall(mlp: train.MLP, dev: Data, fa_per_hour: float, near: set[str], paras: Speech) -> tuple[float, float]:
    """Recall of the development positives at the threshold that their
    ordinary negatives and running speech (paras) set."""
    s = clip_max(mlp, dev)
    pos = np.array([d[0]["kind"] == "pos" for d in dev])
    ordinary = np.array([d[0]["kind"] == "neg" and not is_near(d[0], near) for d in dev])
    hours = sum(seconds(d) for d, o in zip(dev, ordinary, strict=True) if o) / 3600 + speech_hours(paras)
    t = threshold(np.concatenate([s[ordinary], events(mlp, paras)]), hours, fa_per_hour)
    return float(np.mean(s[pos] >= t)), t


def fit_one(
    xs: np.ndarray,
    ys: np.ndarray,
    w: np.ndarray,
    dev: Data,
    hidden: int,
    seed: int,
    fa: float,
    near: set[str],
    paras: Speech,
) -> train.MLP:
    """Adam with input noise (train.NOISE_SD), a step every batch; each
    epoch scored on the development split, the best kept."""
    rng = np.random.default_rng(seed)
    m = train.MLP([train.WINDOWS * train.FEATURES, hidden, hidden, 1], rng)
    params = m.w + m.b
    mom = [np.zeros_like(p) for p in params]
    vel = [np.zeros_like(p) for p in params]
    epochs, patience = int(os.environ.get("KWS_EPOCHS", "8")), int(os.environ.get("KWS_PATIENCE", "2"))
    best, best_state, since, t = (-1.0, 0.0), None, 0, 0
    for ep in range(epochs):
        lr = 1e-3 * (0.5 if ep >= epochs // 2 else 1.0)
        order = rng.permutation(len(xs))
        for s in range(0, len(xs), 512):
            bi = order[s : s + 512]
            xb = xs[bi] + train.NOISE_SD * rng.standard_normal((len(bi), xs.shape[1]), dtype=np.float32)
            acts, p = m.forward(xb)
            g = (w[bi] * (p - ys[bi]))[:, None].astype(np.float32) / len(bi)
            gw, gb = [], []
            for k in range(len(m.w) - 1, -1, -1):
                gw.insert(0, g.T @ acts[k] + 1e-4 * m.w[k])
                gb.insert(0, g.sum(0))
                if k:
                    g = (g @ m.w[k]) * (acts[k] > 0)
            t += 1
            for j, gr in enumerate(gw + gb):
                mom[j] = 0.9 * mom[j] + 0.1 * gr
                vel[j] = 0.999 * vel[j] + 0.001 * gr * gr
                params[j] -= lr * (mom[j] / (1 - 0.9**t)) / (np.sqrt(vel[j] / (1 - 0.999**t)) + 1e-8)
        rec, thr = dev_recall(m, dev, fa, near, paras)
        print(f"fit: {hidden}:{seed} epoch {ep + 1}: dev recall {rec:.3f} at {thr:.4f}", file=sys.stderr)
        if (rec, -thr) > (best[0], -best[1]):
            best, best_state, since = (rec, thr), ([x.copy() for x in m.w], [x.copy() for x in m.b]), 0
        else:
            since += 1
            if since >= patience:
                break
    assert best_state is not None
    m.w, m.b = best_state
    return m


def report(mlp: train.MLP, data: Data, thr: float, near: set[str], paras: Speech) -> list[str]:
    s = clip_max(mlp, data)
    lines = []
    for split in ("train", "dev"):
        sel = [p for p in paras if p[0]["split"] == split]
        if sel:
            n, h = int(np.sum(events(mlp, sel) >= thr)), speech_hours(sel)
            lines.append(f"{split} running speech: {n} false accepts in {h:.2f} h ({n / max(h, 1e-9):.2f}/h)")
    for split in ("train", "dev"):
        for lang in sorted({d[0]["lang"] for d in data}):
            sel = [(d, v) for d, v in zip(data, s, strict=True) if d[0]["split"] == split and d[0]["lang"] == lang]
            pos = [v for d, v in sel if d[0]["kind"] == "pos"]
            neg = [(d, v) for d, v in sel if d[0]["kind"] == "neg" and not is_near(d[0], near)]
            nm = [v for d, v in sel if is_near(d[0], near)]
            hours = sum(seconds(d) for d, _ in neg) / 3600
            fa = sum(v >= thr for _, v in neg)
            lines.append(
                f"{split} {lang}: recall {sum(v >= thr for v in pos)}/{len(pos)} "
                f"({np.mean(np.array(pos) >= thr):.1%}); ordinary negatives over {fa}/{len(neg)} "
                f"({hours:.2f} h, {fa / max(hours, 1e-9):.2f}/h); "
                f"near-miss clips over {sum(v >= thr for v in nm)}/{len(nm)}"
            )
    return lines


def fit(out: Path) -> None:
    t0 = time.time()
    data = train.dataset(out)
    tr = [d for d in data if d[0]["split"] == "train"]
    dev = [d for d in data if d[0]["split"] == "dev"]
    paras = speech.load(out)
    stride = int(os.environ.get("KWS_SPEECH_STRIDE", "2"))  # neighbouring windows are near copies
    if stride > 0:  # KWS_SPEECH_STRIDE=0: no running speech in the training (the lever off)
        tr += [
            (r, x[::stride], np.zeros(len(x[::stride]), np.int8), e[::stride])
            for r, x, e in paras
            if r["split"] == "train"
        ]
    dev_paras = [p for p in paras if p[0]["split"] == "dev"]
    xs, ys, w = stack(tr)
    fa = float(os.environ.get("KWS_FA_PER_HOUR", "0.5"))
    near_file = out / "near.txt"
    near = (
        {ln.split("\t")[1].lower() for ln in near_file.read_text().splitlines() if "\t" in ln}
        if near_file.exists()
        else set()
    )
    print(
        f"fit: {len(tr)} training clips and paragraphs ({len(xs)} windows), {len(dev)} development clips, "
        f"{speech_hours(dev_paras):.2f} h of development speech",
        file=sys.stderr,
    )
    nets = [fit_one(xs, ys, w, dev, h, seed, fa, near, dev_paras) for h, seed in members()]
    mlp = train.MLP.mean(nets)
    rec, thr = dev_recall(mlp, dev, fa, near, dev_paras)
    lines = report(mlp, data, thr, near, paras)
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    name = meta.get("name", "name")
    trained = (
        f"kwshead recipe for {name!r} ({','.join(meta.get('langs', []))}), seed {meta.get('seed')}: "
        f"{len(tr)} training clips and paragraphs of running speech, "
        f"mean of {len(nets)} networks ({os.environ.get('KWS_MEMBERS', '64:1,64:2')}), "
        f"threshold {thr:.6f} chosen on the development speakers at {fa} false accepts an hour; " + "; ".join(lines)
    )
    train.write_head(out / "head.json", mlp, thr, trained, {})
    head = json.loads((out / "head.json").read_text())
    head["name"] = name.lower()
    (out / "head.json").write_text(json.dumps(head, separators=(",", ":")) + "\n")
    text = f"threshold {thr:.6f} (dev recall {rec:.1%}); fit took {time.time() - t0:.0f} s\n" + "\n".join(lines) + "\n"
    (out / "report.txt").write_text(text)
    print("fit: " + text, file=sys.stderr)

"""Environment generator program (a template: the Data engineer copies this file into an environment as
``generator.py`` with its CONFIG filled in).

Usage:  python generator.py --out DIR --seed S [--n-train N] [--n-test N]

Writes DIR/public/ (description.md, train.csv, test.csv, sample_submission.csv, media files) and DIR/private/
(answers.csv, grade.json). Self-contained: numpy, pandas and (for images) Pillow. The same CONFIG and seed give
byte-identical files. Structural parameters (which features carry signal, their weights, the class vocabularies'
use) are drawn first from the seed, so ``--n-train`` changes only how many rows are drawn: a full-scale twin of
the same task.
"""

import argparse
import json
import os

import numpy as np
import pandas as pd

CONFIG = None  # replaced by the Data engineer with the environment's configuration


# ----------------------------------------------------------------------------------------------- helpers
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def standardize(z):
    sd = z.std(axis=0)
    sd[sd == 0] = 1.0
    return (z - z.mean(axis=0)) / sd


def quotas(priors, n, min_count):
    """Exact class counts summing to n, each at least min_count."""
    priors = np.asarray(priors, dtype=float)
    priors = priors / priors.sum()
    q = np.maximum(np.floor(priors * n).astype(int), min_count)
    while q.sum() > n:
        q[np.argmax(q)] -= 1
    order = np.argsort(-(priors * n - np.floor(priors * n)), kind="stable")
    i = 0
    while q.sum() < n:
        q[order[i % len(q)]] += 1
        i += 1
    return q


def make_ids(cfg, n, rng):
    style = cfg.get("id_style", "int")
    if style == "int":
        start = int(cfg.get("id_start", 1000))
        return [str(v) for v in (start + rng.choice(n * 9, size=n, replace=False))]
    if style == "hex":
        length = int(cfg.get("id_length", 10))
        ids, seen = [], set()
        while len(ids) < n:
            v = "".join(rng.choice(list("0123456789abcdef"), size=length))
            if v not in seen:
                seen.add(v)
                ids.append(v)
        return ids
    prefix = cfg.get("id_prefix", "r")
    width = len(str(n * 9))
    nums = rng.choice(n * 9, size=n, replace=False)
    return [f"{prefix}{int(v):0{width}d}" for v in nums]


def pick_by_quota(y, q, rng):
    """Indices: q[k] random rows of class k (raises if the pool is short)."""
    out = []
    for k, count in enumerate(q):
        rows = np.flatnonzero(y == k)
        if len(rows) < count:
            raise RuntimeError("pool too small")
        out.append(rng.choice(rows, size=count, replace=False))
    idx = np.concatenate(out) if out else np.array([], dtype=int)
    return rng.permutation(idx)


# ----------------------------------------------------------------------------------------------- tabular
class TabularModel:
    """Latent heads z = Σ w·g(u) + categorical effects + interactions + code effect (+ time trend)."""

    def __init__(self, cfg, heads, rng):
        tab = cfg["tabular"]
        self.numeric = tab["numeric"]
        self.categorical = tab["categorical"]
        self.code = tab.get("code")
        p = len(self.numeric)
        self.p, self.heads = p, heads
        n_active = min(p, int(rng.integers(3, 7)) + int(tab.get("active_share", 0.6) * 4))
        active = np.zeros(p, dtype=bool)
        active[rng.choice(p, size=n_active, replace=False)] = True
        self.W = rng.normal(size=(heads, p)) * active * (0.5 + rng.random(p))
        self.shapes = rng.choice(["linear", "linear", "linear", "quad", "sin", "step"], size=p)
        self.steps = rng.normal(scale=0.5, size=p)
        self.loadings = rng.normal(scale=0.6, size=(p, 2))
        n_inter = min(int(tab.get("interactions", 2)), max(0, p - 1))
        self.inter = [(int(a), int(b), rng.normal(size=heads) * 0.8)
                      for a, b in (rng.choice(p, size=2, replace=False) for _ in range(n_inter))]
        self.cat_fx = [rng.normal(size=(heads, len(c["levels"]))) * c.get("weight", 0.7) for c in self.categorical]
        self.cat_probs = []
        for c in self.categorical:
            r = 1.0 / np.arange(1, len(c["levels"]) + 1) ** c.get("zipf", 0.6)
            self.cat_probs.append(r / r.sum())
        if self.code:
            self.code_fx = rng.normal(size=heads) * 1.2
            self.code_letter = int(rng.integers(len(self.code["alphabet"])))
        self.shift_dirs = rng.normal(size=p) * (rng.random(p) < 0.5)
        self.trend = rng.normal(size=heads) * 1.2

    def g(self, j, u):
        s = self.shapes[j]
        if s == "quad":
            return (u ** 2 - 1.0) / 1.4
        if s == "sin":
            return np.sin(2.0 * u) * 1.3
        if s == "step":
            return np.where(u > self.steps[j], 1.0, -1.0)
        return u

    def draw(self, n, rng, shift=0.0, t=None):
        u = rng.normal(size=(n, self.p)) + rng.normal(size=(n, 2)) @ self.loadings.T
        u = u / np.sqrt(1.0 + (self.loadings ** 2).sum(axis=1))
        if shift:
            u = u + shift * self.shift_dirs
        z = np.zeros((n, self.heads))
        for j in range(self.p):
            z += np.outer(self.g(j, u[:, j]), self.W[:, j])
        for a, b, w in self.inter:
            z += np.outer(u[:, a] * u[:, b], w)
        cats = []
        for c, fx, pr in zip(self.categorical, self.cat_fx, self.cat_probs):
            lv = rng.choice(len(c["levels"]), size=n, p=pr)
            cats.append(lv)
            z += fx[:, lv].T
        codes = None
        if self.code:
            L, alpha = int(self.code["length"]), self.code["alphabet"]
            letters = rng.integers(len(alpha), size=(n, L))
            count = (letters == self.code_letter).sum(axis=1)
            z += np.outer((count - L / len(alpha)) / np.sqrt(L / len(alpha)), self.code_fx)
            codes = ["".join(alpha[i] for i in row) for row in letters]
        if t is not None:
            z += np.outer(t - 0.5, self.trend) * 2.0
        return u, cats, codes, z

    def frame(self, u, cats, codes, ids, cfg):
        data = {cfg["id_column"]: ids}
        for j, f in enumerate(self.numeric):
            v = f["mean"] + f["sd"] * u[:, j]
            kind = f.get("kind", "float")
            if kind == "count":
                v = np.floor(np.maximum(0.0, f["mean"] * np.exp(0.55 * u[:, j])))
                v = v.astype(int)
            elif kind == "int":
                v = np.rint(v).astype(int)
            elif kind == "share":
                v = np.round(np.clip(v, 0.0, 1.0), 4)
            else:
                v = np.round(v, 4)
            data[f["name"]] = v
        for c, lv in zip(self.categorical, cats):
            data[c["name"]] = [c["levels"][i] for i in lv]
        if codes is not None:
            data[self.code["name"]] = codes
        return pd.DataFrame(data)


def make_labels(cfg, z, rng):
    """Class indices (n,) or label matrix (n, L) or target values (n, T) from latent heads."""
    task = cfg["task_type"]
    s = float(cfg["signal"])
    zs = standardize(z)
    if task == "binary":
        return (rng.random(len(z)) < sigmoid(s * 3.0 * zs[:, 0])).astype(int)
    if task == "multiclass":
        logits = s * 2.5 * zs
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        c = p.cumsum(axis=1)
        return np.minimum((rng.random((len(z), 1)) > c).sum(axis=1), z.shape[1] - 1)
    if task == "ordinal":
        latent = s * zs[:, 0] + rng.logistic(size=len(z)) * 0.6
        pr = np.asarray(cfg["class_priors"], dtype=float)
        cuts = np.quantile(latent, np.cumsum(pr)[:-1] / pr.sum())
        return np.searchsorted(cuts, latent)
    if task == "multilabel":
        priors = np.asarray(cfg["class_priors"])
        shared = zs[:, :1]
        logit = s * 2.5 * (0.6 * shared + 0.8 * zs)
        b = -np.quantile(logit, 1 - priors, axis=0).diagonal() if logit.ndim == 2 else 0
        y = (rng.random(logit.shape) < sigmoid(logit + b + 0.0)).astype(int)
        for child, parent in cfg.get("implies", []):
            y[:, child] = y[:, child] * y[:, parent]
        return y
    noise = rng.normal(size=z.shape) * float(cfg.get("noise", 0.5))
    return s * zs + noise


def flip_labels(y, n_classes, rate, rng):
    if rate <= 0:
        return y
    flip = rng.random(len(y)) < rate
    y = y.copy()
    y[flip] = rng.integers(n_classes, size=int(flip.sum()))
    return y


def regression_values(cfg, raw):
    out = {}
    for j, t in enumerate(cfg["targets_meta"]):
        v = raw[:, j] / max(raw[:, j].std(), 1e-9)
        if cfg.get("nonnegative"):
            vals = t["scale"] * np.exp(0.45 * v)
        else:
            vals = t["mean"] + t["sd"] * v
        out[t["name"]] = np.round(vals, 5)
    return out


def build_tabular(cfg, n_train, n_test, model_rng, data_rng):
    task = cfg["task_type"]
    K = len(cfg["classes"]) if cfg.get("classes") else 0
    if task == "multilabel":
        K = len(cfg["target_columns"])
    heads = {"binary": 1, "ordinal": 1, "multiclass": K, "multilabel": K}.get(task, len(cfg["target_columns"]))
    model = TabularModel(cfg, heads, model_rng)
    temporal = cfg.get("temporal")
    splits = []
    if task == "multiclass" and K > 8:
        return build_prototypes(cfg, model, K, n_train, n_test, model_rng, data_rng)
    for part, n, shift in (("train", n_train, 0.0), ("test", n_test, float(cfg.get("shift", 0.0)))):
        lo, hi = (0.0, 0.78) if part == "train" else (0.78, 1.0)
        pool_n = max(4 * n, 400)
        for _ in range(40):
            t = np.sort(data_rng.uniform(lo, hi, size=pool_n)) if temporal else None
            u, cats, codes, z = model.draw(pool_n, data_rng, shift=shift, t=t)
            y = make_labels(cfg, z, data_rng)
            if task in ("binary", "multiclass", "ordinal"):
                y = flip_labels(y, max(K, 2), float(cfg.get("label_noise", 0.0)), data_rng)
                q = quotas(cfg["class_priors"], n, 3 if part == "train" else 2)
                try:
                    idx = pick_by_quota(y, q, data_rng)
                    break
                except RuntimeError:
                    pool_n *= 2
                    continue
            idx = data_rng.choice(pool_n, size=n, replace=False)
            if task == "multilabel" and (y[idx].sum(axis=0) < 3).any():
                continue
            break
        else:
            raise RuntimeError(f"could not draw {n} {part} rows with the class quotas")
        if temporal:
            idx = np.sort(idx)
        frame = model.frame(u[idx], [c[idx] for c in cats], [codes[i] for i in idx] if codes else None,
                            [""] * len(idx), cfg)
        if temporal:
            start = pd.Timestamp(temporal["start"])
            secs = (t[idx] * temporal["days"] * 86400).astype(np.int64)
            stamps = start + pd.to_timedelta(secs, unit="s")
            frame.insert(1, temporal["column"], stamps.strftime("%Y-%m-%d %H:%M:%S"))
        splits.append((frame, y[idx]))
    return splits


def build_prototypes(cfg, model, K, n_train, n_test, model_rng, data_rng):
    """Many classes (species-like): each class has a prototype over a subset of the features; rows scatter
    around their class prototype."""
    proto = model_rng.normal(size=(K, model.p)) * (model_rng.random(model.p) < 0.6)
    sep = 0.55 * float(cfg["signal"])
    splits = []
    for part, n in (("train", n_train), ("test", n_test)):
        q = quotas(cfg["class_priors"], n, 3 if part == "train" else 2)
        y = data_rng.permutation(np.repeat(np.arange(K), q))
        u = proto[y] * sep + data_rng.normal(size=(n, model.p))
        cats = [data_rng.choice(len(c["levels"]), size=n, p=pr) for c, pr in zip(model.categorical, model.cat_probs)]
        y = flip_labels(y, K, float(cfg.get("label_noise", 0.0)), data_rng)
        frame = model.frame(u, cats, None, [""] * n, cfg)
        if model.code:
            frame = frame.drop(columns=[model.code["name"]], errors="ignore")
        splits.append((frame, y))
    return splits


# ----------------------------------------------------------------------------------------------- text
def zipf_choice(words, size, rng, a=1.1):
    w = 1.0 / np.arange(1, len(words) + 1) ** a
    return [words[i] for i in rng.choice(len(words), size=size, p=w / w.sum())]


def misspell(word, rng):
    if len(word) < 4:
        return word
    i = int(rng.integers(1, len(word) - 2))
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def sentence_case(words):
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def topic_text(y, cfg, rng, n_words):
    tx = cfg["text"]
    classes = cfg["text"]["class_order"]
    vocab = tx["vocab"]
    p_sig, p_conf = float(tx["p_signal"]), float(tx["p_confuse"])
    words = []
    for _ in range(n_words):
        r = rng.random()
        if r < p_sig:
            words.append(zipf_choice(vocab[classes[y]], 1, rng)[0])
        elif r < p_sig + p_conf:
            other = classes[int(rng.integers(len(classes)))]
            words.append(zipf_choice(vocab[other], 1, rng)[0])
        else:
            words.append(zipf_choice(tx["filler"], 1, rng, 0.9)[0])
    return words


def style_text(y, cfg, rng, n_words):
    tx = cfg["text"]
    st = tx["styles"][y]
    words = []
    for _ in range(n_words):
        if rng.random() < st["p_style"]:
            words.append(zipf_choice(st["words"], 1, rng, 0.7)[0])
        else:
            words.append(zipf_choice(tx["filler"], 1, rng, 0.9)[0])
        if rng.random() < st["p_comma"]:
            words[-1] += ","
        elif rng.random() < st["p_semicolon"]:
            words[-1] += ";"
    return sentence_case(words).rstrip(",;") + st["end"]


def quality_text(score, cfg, rng):
    tx = cfg["text"]
    K = len(cfg["classes"])
    level = score / max(K - 1, 1)
    n_words = int(max(20, rng.normal(tx["base_len"] + tx["len_per_level"] * score, tx["base_len"] * 0.35)))
    s = float(cfg["signal"])
    p_adv = 0.01 + 0.07 * level * s
    p_basic = max(0.01, 0.10 - 0.07 * level * s)
    p_typo = max(0.0, 0.07 - 0.06 * level * s)
    words = []
    for _ in range(n_words):
        r = rng.random()
        if r < p_adv:
            w = zipf_choice(tx["advanced"], 1, rng, 0.6)[0]
        elif r < p_adv + p_basic:
            w = zipf_choice(tx["basic"], 1, rng, 0.6)[0]
        elif r < p_adv + p_basic + 0.12:
            w = zipf_choice(tx["topic"], 1, rng)[0]
        else:
            w = zipf_choice(tx["filler"], 1, rng, 0.9)[0]
        if rng.random() < p_typo:
            w = misspell(w, rng)
        words.append(w)
    n_par = 1 + score // 2
    cuts = np.linspace(0, len(words), n_par + 1).astype(int)
    paras = [sentence_case(words[a:b]) + "." for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    return "\n\n".join(paras)


def multilabel_text(labels, cfg, rng, n_words):
    tx = cfg["text"]
    words = zipf_choice(tx["filler"], n_words, rng, 0.9)
    names = cfg["target_columns"]
    s = float(cfg["signal"])
    for j, on in enumerate(labels):
        kw = tx["vocab"][names[j]]
        k = (1 + rng.poisson(0.8 * s)) if on else (1 if rng.random() < tx["p_decoy"] else 0)
        for _ in range(k):
            words.insert(int(rng.integers(len(words) + 1)), zipf_choice(kw, 1, rng)[0])
    return sentence_case(words) + "."


def build_text(cfg, n_train, n_test, model_rng, data_rng):
    task = cfg["task_type"]
    tx = cfg["text"]
    K = len(cfg["target_columns"]) if task == "multilabel" else (len(cfg["classes"]) if cfg.get("classes") else 0)
    tab = cfg.get("tabular") or {}
    has_numeric = bool(tab.get("numeric"))
    delta = model_rng.normal(size=len(tab["numeric"])) * 0.8 if has_numeric else None
    splits = []
    for part, n in (("train", n_train), ("test", n_test)):
        if task == "multilabel":
            heads = K
            zs = data_rng.normal(size=(n * 4, 1)) * 0.9 + data_rng.normal(size=(n * 4, heads))
            for _ in range(60):
                b = -np.quantile(zs, 1 - np.asarray(cfg["class_priors"]), axis=0).diagonal()
                y_all = (zs + b > 0).astype(int)
                for child, parent in cfg.get("implies", []):
                    y_all[:, child] *= y_all[:, parent]
                idx = data_rng.choice(len(zs), size=n, replace=False)
                y = y_all[idx]
                if (y.sum(axis=0) >= 3).all():
                    break
            texts = [multilabel_text(row, cfg, data_rng,
                                     int(max(6, data_rng.normal(tx["mean_len"], tx["mean_len"] / 3)))) for row in y]
        else:
            q = quotas(cfg["class_priors"], n, 3 if part == "train" else 2)
            y = data_rng.permutation(np.repeat(np.arange(len(q)), q))
            y = flip_labels(y, max(K, 2), float(cfg.get("label_noise", 0.0)), data_rng)
            texts = []
            for yi in y:
                n_words = int(max(5, data_rng.normal(tx["mean_len"], tx["mean_len"] / 3)))
                if tx["style"] == "style":
                    texts.append(style_text(int(yi), cfg, data_rng, n_words))
                elif tx["style"] == "quality":
                    texts.append(quality_text(int(yi), cfg, data_rng))
                else:
                    texts.append(sentence_case(topic_text(int(yi), cfg, data_rng, n_words)) + ".")
        data = {cfg["id_column"]: [""] * n}
        if tx.get("title_col"):
            titles = []
            for i in range(n):
                if task != "multilabel" and tx["style"] == "topic" and data_rng.random() < 0.5:
                    titles.append(sentence_case(topic_text(int(y[i]), cfg, data_rng, int(data_rng.integers(3, 7)))))
                else:
                    titles.append(sentence_case(zipf_choice(tx["filler"], int(data_rng.integers(3, 7)), data_rng)))
            data[tx["title_col"]] = titles
        data[tx["text_col"]] = texts
        frame = pd.DataFrame(data)
        if has_numeric:
            yy = y if y.ndim == 1 else y[:, 0]
            for j, f in enumerate(tab["numeric"]):
                u = data_rng.normal(size=n) + delta[j] * (yy - yy.mean()) * float(cfg["signal"]) * 0.6
                if f.get("kind") == "count":
                    frame[f["name"]] = np.floor(np.maximum(0, f["mean"] * np.exp(0.5 * u))).astype(int)
                elif f.get("kind") == "int":
                    frame[f["name"]] = np.rint(f["mean"] + f["sd"] * u).astype(int)
                else:
                    frame[f["name"]] = np.round(f["mean"] + f["sd"] * u, 3)
        splits.append((frame, y))
    return splits


# ----------------------------------------------------------------------------------------------- images
def shape_mask(shape, size, rng):
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    cy, cx = rng.uniform(size * 0.2, size * 0.8, size=2)
    r = rng.uniform(size * 0.08, size * 0.2)
    if shape == "bar":
        h, w = rng.uniform(size * 0.25, size * 0.6), rng.uniform(1.2, 2.8)
        return ((np.abs(yy - cy) < h / 2) & (np.abs(xx - cx) < w / 2)).astype(float)
    if shape == "ellipse":
        return (((yy - cy) / (r * 0.6)) ** 2 + ((xx - cx) / (r * 1.8)) ** 2 < 1).astype(float)
    if shape == "ring":
        d = np.hypot(yy - cy, xx - cx)
        return ((d < r) & (d > r * 0.55)).astype(float)
    if shape == "diagonal":
        d = np.abs((yy - cy) - (xx - cx) * rng.choice([-1.0, 1.0]))
        return ((d < 1.2) & (np.hypot(yy - cy, xx - cx) < size * 0.35)).astype(float)
    if shape == "cross":
        return (((np.abs(yy - cy) < 1.0) & (np.abs(xx - cx) < r * 1.5)) |
                ((np.abs(xx - cx) < 1.0) & (np.abs(yy - cy) < r * 1.5))).astype(float)
    if shape == "blob":
        return np.exp(-(((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * (r * 0.8) ** 2)))
    return (np.hypot(yy - cy, xx - cx) < r).astype(float)  # disc


def render_image(label, cfg, rng):
    im = cfg["image"]
    size = int(im["size"])
    base = np.asarray(im["palette"][0], dtype=float)
    obj = np.asarray(im["palette"][1], dtype=float)
    coarse = rng.normal(size=(4, 4, 3)) * im["texture"]
    rep = int(np.ceil(size / 4))
    bg = np.kron(coarse, np.ones((rep, rep, 1)))[:size, :size]
    img = base + bg + rng.normal(size=(size, size, 3)) * im["pixel_noise"]
    if label == 1:
        alpha = float(cfg["signal"]) * rng.uniform(0.25, 0.9)
        m = shape_mask(im["shape"], size, rng)[..., None]
        img = img * (1 - alpha * m) + obj * alpha * m
    elif rng.random() < im["p_distractor"]:
        alpha = rng.uniform(0.2, 0.7)
        m = shape_mask(im["distractor"], size, rng)[..., None]
        img = img * (1 - alpha * m) + obj * alpha * m
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


# ----------------------------------------------------------------------------------------------- signals
def render_audio(label, cfg, rng):
    au = cfg["audio"]
    sr, n = int(au["sample_rate"]), int(au["length"])
    t = np.arange(n) / sr
    kind = au["noise"]
    x = rng.normal(size=n) * 0.3
    if kind == "ship":
        for _ in range(3):
            x += rng.uniform(0.2, 0.6) * np.sin(2 * np.pi * rng.uniform(15, 60) * t + rng.uniform(0, 6.3))
    elif kind == "hum":
        x += 0.5 * np.sin(2 * np.pi * 50 * t) + 0.2 * np.sin(2 * np.pi * 100 * t + rng.uniform(0, 6.3))
    elif kind == "rain":
        x += (rng.random(n) < 0.01) * rng.normal(size=n) * 2.0
    else:
        x = np.convolve(x, np.ones(5) / 5, mode="same") * 2.0
    x += np.cumsum(rng.normal(size=n)) * 0.01

    def event(f0, f1, amp):
        dur = rng.uniform(0.3, 0.8) * min(1.0, n / sr / 2)
        m = int(dur * sr)
        start = int(rng.integers(0, max(1, n - m)))
        tt = np.arange(m) / sr
        if au["sweep"] == "pulse":
            sig = np.sin(2 * np.pi * f0 * tt) * (np.sin(2 * np.pi * 8 * tt) > 0.6)
        else:
            k = (f1 - f0) / max(dur, 1e-3)
            sig = np.sin(2 * np.pi * (f0 * tt + 0.5 * k * tt ** 2))
        x[start:start + m] += amp * sig * np.hanning(m)

    lo, hi = au["band"]
    sweep = au["sweep"]
    f0, f1 = {"up": (lo, hi), "down": (hi, lo), "flat": ((lo + hi) / 2, (lo + hi) / 2)}.get(sweep, (lo, lo))
    if label == 1:
        event(f0, f1, float(cfg["signal"]) * rng.uniform(0.35, 1.0))
    elif rng.random() < au["p_distractor"]:
        event(f1 * 1.6, f0 * 1.6, rng.uniform(0.3, 0.9))
    return x.astype(np.float32)


def render_series(level, group_offset, cfg, rng):
    se = cfg["series"]
    n = int(se["length"])
    step = float(se["step"]) * float(cfg["signal"])
    # telegraph flicker: segments between switches alternate between the level and a neighbouring level
    seg = np.cumsum(rng.random(n) < se["p_switch"])
    signs = rng.choice([-1.0, 1.0], size=int(seg[-1]) + 1)
    state = np.where(seg % 2 == 1, signs[seg], 0.0)
    lv = np.maximum(0.0, level + state)
    sigma = se["noise"] * np.sqrt(1.0 + 0.6 * lv)
    drift = group_offset + np.cumsum(rng.normal(size=n)) * se["walk"]
    return (lv * step + drift + rng.normal(size=n) * sigma).astype(np.float32)


def build_media(cfg, n_train, n_test, model_rng, data_rng):
    mod = cfg["modality"]
    media_col = cfg["media_column"]
    group_col = cfg.get("group_column")
    n_groups = int(cfg.get("n_groups", 0))
    offsets = model_rng.normal(size=n_groups * 2) * cfg.get("series", {}).get("group_sd", 0.0) if group_col else None
    splits, files = [], []
    for part, n in (("train", n_train), ("test", n_test)):
        q = quotas(cfg["class_priors"], n, 3 if part == "train" else 2)
        y = data_rng.permutation(np.repeat(np.arange(len(q)), q))
        y = flip_labels(y, len(q), float(cfg.get("label_noise", 0.0)), data_rng)
        frame = pd.DataFrame({cfg["id_column"]: [""] * n})
        arrays = []
        groups = None
        if group_col:
            shift = int(n_groups * float(cfg.get("shift", 0.0))) if part == "test" else 0
            groups = data_rng.integers(0, n_groups, size=n) + shift
        for i in range(n):
            if mod == "image":
                arrays.append(render_image(int(y[i]), cfg, data_rng))
            elif mod == "audio":
                arrays.append(render_audio(int(y[i]), cfg, data_rng))
            else:
                arrays.append(render_series(int(y[i]), offsets[groups[i]], cfg, data_rng))
        frame[media_col] = [""] * n
        if group_col:
            frame[group_col] = groups
        splits.append((frame, y))
        files.append(arrays)
    return splits, files


# ----------------------------------------------------------------------------------------------- writing
def write_png(path, array):
    from PIL import Image  # only for image environments

    Image.fromarray(array).save(path, format="PNG", optimize=False, compress_level=6)


def write_media(pub: str, cfg: dict, media: tuple, train: pd.DataFrame, test: pd.DataFrame) -> None:
    """Each row's media file under ``public/train`` or ``public/test``; the media column gets its relative path."""
    ext = ".png" if cfg["modality"] == "image" else ".npy"
    for part, frame, arrays in (("train", train, media[0]), ("test", test, media[1])):
        os.makedirs(os.path.join(pub, part), exist_ok=True)
        rel = [f"{part}/{i}{ext}" for i in frame[cfg["id_column"]]]
        frame[cfg["media_column"]] = rel
        for r, arr in zip(rel, arrays):
            if cfg["modality"] == "image":
                write_png(os.path.join(pub, r), arr)
            else:
                np.save(os.path.join(pub, r), arr)


def add_missing(cfg: dict, frames: tuple, model_rng, data_rng) -> None:
    """Blank a share of the feature values (never the id, media, group, time or targets), per column."""
    rate = float(cfg.get("missing_rate", 0.0))
    if rate <= 0:
        return
    skip = {cfg["id_column"], cfg.get("media_column"), cfg.get("group_column"),
            (cfg.get("temporal") or {}).get("column")}
    for frame in frames:
        for col in [c for c in frame.columns if c not in skip]:
            col_rate = rate * (0.5 + model_rng.random())
            mask = data_rng.random(len(frame)) < col_rate
            if frame[col].dtype.kind in "iu":
                frame[col] = frame[col].astype("Int64").astype(object)
            frame.loc[mask, col] = np.nan


def target_frame(cfg: dict, y) -> pd.DataFrame:
    """The target columns of ``y`` as train.csv holds them."""
    task, targets = cfg["task_type"], cfg["target_columns"]
    if task in ("regression", "multi_target_regression"):
        return pd.DataFrame(regression_values(cfg, y))
    if task == "multilabel":
        return pd.DataFrame({t: y[:, j] for j, t in enumerate(targets)})
    return pd.DataFrame({targets[0]: [cfg["classes"][int(k)] for k in y]})


def answers_and_sample(cfg: dict, test_ids, train_targets: pd.DataFrame, test_targets: pd.DataFrame):
    """(answers.csv, sample_submission.csv): the test targets in the prediction columns, and a constant guess."""
    idc, grade, task = cfg["id_column"], cfg["grade"], cfg["task_type"]
    targets, pred_cols = cfg["target_columns"], grade["prediction_columns"]
    answers = pd.DataFrame({idc: test_ids})
    if grade["metric"] == "log_loss":
        for j, c in enumerate(pred_cols):
            answers[c] = (test_targets[targets[0]].to_numpy() == cfg["classes"][j]).astype(int)
    else:
        for c in pred_cols:
            answers[c] = test_targets[c].to_numpy()
    sample = pd.DataFrame({idc: test_ids})
    for c in pred_cols:
        if grade["metric"] == "log_loss":
            sample[c] = round(1.0 / len(pred_cols), 6)
        elif task == "multilabel" or grade["metric"] in ("roc_auc", "mean_columnwise_roc_auc"):
            sample[c] = 0.5
        elif task in ("regression", "multi_target_regression"):
            sample[c] = round(float(pd.to_numeric(train_targets[c]).median()), 4)
        else:
            sample[c] = train_targets[targets[0]].value_counts().index[0]
    return answers, sample


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--n-test", type=int, default=None)
    args = ap.parse_args(argv)
    if CONFIG is None:
        raise SystemExit("this is the generator template: the Data engineer writes its CONFIG in")
    cfg = CONFIG
    n_train = args.n_train or int(cfg["n_train"])
    n_test = args.n_test or int(cfg["n_test"])
    model_rng = np.random.default_rng([args.seed, 1])
    data_rng = np.random.default_rng([args.seed, 2])
    id_rng = np.random.default_rng([args.seed, 3])
    pub, priv = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    os.makedirs(pub, exist_ok=True)
    os.makedirs(priv, exist_ok=True)
    media = None
    if cfg["modality"] == "tabular":
        splits = build_tabular(cfg, n_train, n_test, model_rng, data_rng)
    elif cfg["modality"] == "text":
        splits = build_text(cfg, n_train, n_test, model_rng, data_rng)
    else:
        splits, media = build_media(cfg, n_train, n_test, model_rng, data_rng)
    ids = make_ids(cfg, n_train + n_test, id_rng)
    idc = cfg["id_column"]
    (train, y_tr), (test, y_te) = splits
    train[idc] = ids[:n_train]
    test[idc] = ids[n_train:]
    hide_id = cfg.get("id_in_test") is False  # the id only in the sample submission: test rows counted from 1
    if hide_id:
        test[idc] = np.arange(1, n_test + 1)
    if media is not None:
        write_media(pub, cfg, media, train, test)
    add_missing(cfg, (train, test), model_rng, data_rng)
    train_targets, test_targets = target_frame(cfg, y_tr), target_frame(cfg, y_te)
    train = pd.concat([train.reset_index(drop=True), train_targets], axis=1)
    answers, sample = answers_and_sample(cfg, test[idc].to_numpy(), train_targets, test_targets)
    if hide_id:
        train, test = train.drop(columns=[idc]), test.drop(columns=[idc])
    train.to_csv(os.path.join(pub, "train.csv"), index=False)
    test.to_csv(os.path.join(pub, "test.csv"), index=False)
    sample.to_csv(os.path.join(pub, "sample_submission.csv"), index=False)
    answers.to_csv(os.path.join(priv, "answers.csv"), index=False)
    with open(os.path.join(pub, "description.md"), "w", encoding="utf-8") as f:
        f.write(cfg["description"])
    with open(os.path.join(priv, "grade.json"), "w", encoding="utf-8") as f:
        json.dump(cfg["grade"], f, indent=2, sort_keys=True)
    print(json.dumps({"n_train": len(train), "n_test": len(test), "columns": list(train.columns)}))


if __name__ == "__main__":
    main()

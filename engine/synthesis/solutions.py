"""Reference solutions as readable code templates.

Every solution is a standalone script run in a workspace that holds only an environment's ``public/`` files:
``python solution.py [SEED] [OUT]`` writes ``OUT`` (default ``submission.csv``). The code is generic — nothing
names a column of a particular task:

- the id is the column shared by ``test.csv`` and ``sample_submission.csv`` (else the sample submission's first
  column, whose rows then follow ``test.csv``'s order);
- the targets are the ``train.csv`` columns absent from ``test.csv`` (named as in the sample submission when only
  the case differs, as ``label`` and ``Label``);
- what to predict comes from ``sample_submission.csv``: one column per class (probabilities), a probability per
  target (its sample values are fractional), a label, or a value;
- the modality comes from the files: columns of ``.png`` / ``.npy`` paths are media, long strings are text,
  parseable strings are dates, other strings are categories.

The decisions a solution makes are its *strategy*: ``model`` (constant, linear, boosted, blend), ``text``
(none, words, words+chars), ``bag`` (train on a seed-dependent 90 % subsample, so RNG seeds differ). The
verifier's ladder uses three of them; the scripted agent reuses :func:`render_solution` with other strategies.

The target transform (fit ``log1p`` of a value target, predict ``expm1``) follows the metric, never a word of the
description: a runner that knows the grading spec (the verifier's ladder) renders ``TARGET_TRANSFORM`` from
:func:`target_transform`; a script without it (the
scripted agent's, which sees only public files) reads the metric off the one fixed line every description of ours
ends with, ``Submissions are scored with **<metric>**`` -- ``log1p`` for a log-scale metric, none otherwise and
where no such line is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import SandboxSettings
from ..grading.metrics import METRICS

if TYPE_CHECKING:
    from ..envs.layout import GradeSpec

PRELUDE = '''\
import sys
import warnings

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")
SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 0
OUT = sys.argv[2] if len(sys.argv) > 2 else "submission.csv"
rng = np.random.default_rng(SEED)

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
sample = pd.read_csv("sample_submission.csv")
ID = next((c for c in sample.columns if c in test.columns), sample.columns[0])
if ID not in test.columns:  # the id only in the sample submission (digit-recognizer): test rows in its order
    test.insert(0, ID, sample[ID].to_numpy())
PRED = [c for c in sample.columns if c != ID]
train = train.rename(columns={c: p for p in PRED for c in train.columns if c != p and c.lower() == p.lower()})
TARGETS = [c for c in train.columns if c not in test.columns]
FEATURES = [c for c in test.columns if c != ID]


def is_str(s):
    return not pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def integral(s):
    v = pd.to_numeric(s, errors="coerce")
    return v.notna().all() and (v == v.round()).all()


# what to predict: one probability per class, a probability per target, a label, or a value
if PRED != TARGETS:
    MODE = "proba"
elif all(integral(train[t]) and train[t].nunique() <= 20 for t in TARGETS):
    MODE = "label" if all(integral(sample[c]) or is_str(sample[c]) for c in PRED) else "score"
elif is_str(train[TARGETS[0]]):
    MODE = "label"
else:
    MODE = "value"
'''

KINDS = '''
# column kinds, read from the data
def is_media(s):
    return is_str(s) and s.astype(str).str.contains(r"\\.(png|npy)$").all()


MEDIA = [c for c in FEATURES if is_media(test[c])]
TEXT = [c for c in FEATURES if c not in MEDIA and is_str(test[c])
        and test[c].astype(str).str.count(" ").mean() >= 3]
DATES = []
for c in FEATURES:
    if c in MEDIA or c in TEXT or not is_str(test[c]):
        continue
    parsed = pd.to_datetime(test[c].head(20), errors="coerce", format="mixed")
    if parsed.notna().all():
        DATES.append(c)
CATS = [c for c in FEATURES if is_str(test[c]) and c not in MEDIA + TEXT + DATES]
NUMS = [c for c in FEATURES if c not in MEDIA + TEXT + DATES + CATS]
both = pd.concat([train[FEATURES], test[FEATURES]], ignore_index=True)
n_tr = len(train)
'''

TABULAR_FEATURES = '''
# tabular features: numbers, dates, categories (one-hot when few levels, frequency and characters when many)
blocks = [both[NUMS].apply(pd.to_numeric, errors="coerce")]
for c in DATES:
    d = pd.to_datetime(both[c], errors="coerce", format="mixed")
    blocks.append(pd.DataFrame({c + "_days": (d - d.min()).dt.total_seconds() / 86400, c + "_hour": d.dt.hour,
                                c + "_dow": d.dt.dayofweek, c + "_month": d.dt.month}))
for c in CATS:
    s = both[c].fillna("NA").astype(str)
    if s.nunique() <= 30:
        blocks.append(pd.get_dummies(s, prefix=c, dtype=float))
    else:
        blocks.append(pd.DataFrame({c + "_freq": s.map(s.value_counts()) / len(s)}))
        if STRATEGY_CHARS and s.str.len().nunique() == 1:
            chars = np.array([list(v) for v in s])
            for letter in sorted(set(chars.ravel())):
                blocks.append(pd.DataFrame({f"{c}_n{letter}": (chars == letter).sum(axis=1)}))
X = pd.concat(blocks, axis=1) if blocks else pd.DataFrame(index=both.index)
'''

MEDIA_FEATURES = '''
# media features: images (PNG) and 1-D signals (.npy)
def load(path):
    if path.endswith(".png"):
        from PIL import Image
        return np.asarray(Image.open(path), dtype=float) / 255.0
    return np.load(path).astype(float)


def image_features(a, rich):
    g = a.mean(axis=2) if a.ndim == 3 else a
    h, w = g.shape
    small = g[: h - h % 8, : w - w % 8].reshape(8, (h - h % 8) // 8, 8, (w - w % 8) // 8).mean(axis=(1, 3))
    f = list(small.ravel())
    if rich:
        dev = np.abs(g - np.median(g)) / (g.std() + 1e-6)
        gy, gx = np.abs(np.diff(g, axis=0)), np.abs(np.diff(g, axis=1))
        f += [dev.max(), (dev > 1.5).mean(), (dev > 2.5).mean(), gy.mean(), gx.mean(), gy.max(), gx.max(),
              gy.mean() / (gx.mean() + 1e-6), dev.max(axis=0).std(), dev.max(axis=1).std()]
        if a.ndim == 3:
            f += list(a.reshape(-1, a.shape[2]).std(axis=0)) + list(np.percentile(a.reshape(-1, a.shape[2]), 95, axis=0))
    return f


def signal_features(x, rich):
    f = [x.mean(), x.std(), x.min(), x.max(), *np.percentile(x, [5, 25, 50, 75, 95]), np.abs(np.diff(x)).mean()]
    if rich:
        n = len(x)
        frame = 256 if n >= 1024 else max(16, n // 4)
        frames = np.lib.stride_tricks.sliding_window_view(x - x.mean(), frame)[:: frame // 2]
        spec = np.abs(np.fft.rfft(frames * np.hanning(frame), axis=1)) ** 2
        edges = np.unique(np.geomspace(1, spec.shape[1], 12).astype(int))
        bands = np.stack([spec[:, a:b].sum(axis=1) for a, b in zip(edges[:-1], edges[1:])], axis=1)
        lb = np.log1p(bands)
        f += list(lb.mean(axis=0)) + list(lb.max(axis=0) - np.median(lb, axis=0)) + list(lb.std(axis=0))
        peak = spec.argmax(axis=1)
        f += [np.corrcoef(np.arange(len(peak)), peak)[0, 1] if peak.std() > 0 else 0.0]
        resid = x - np.convolve(x, np.ones(9) / 9, mode="same")
        f += [resid.std(), np.diff(x).std(), np.median(x)]
    return f


for c in MEDIA:
    rows = []
    for p in both[c].astype(str):
        a = load(p)
        rows.append(image_features(a, STRATEGY_RICH) if a.ndim >= 2 else signal_features(a, STRATEGY_RICH))
    M = pd.DataFrame(np.nan_to_num(np.asarray(rows, dtype=float)), columns=[f"{c}_m{i}" for i in range(len(rows[0]))])
    if STRATEGY_RICH:
        # centre each media feature within groups of a small-integer column (recording, batch, site ...)
        for g in [n for n in NUMS if integral(both[n].dropna()) and 1 < both[n].nunique() <= max(2, len(both) // 10)]:
            cols = [f"{c}_m{i}" for i in (0, 6)]
            M[[k + "_in_" + g for k in cols]] = M[cols] - M[cols].groupby(both[g].to_numpy()).transform("median").to_numpy()
    X = pd.concat([X, M], axis=1)
'''

TEXT_FEATURES = '''
# text features: TF-IDF of words (and character n-grams), plus length and punctuation counts
import re

from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

T_parts = []
for c in TEXT:
    s = both[c].fillna("").astype(str)
    T_parts.append(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=20000).fit_transform(s))
    if STRATEGY_TEXT == "words+chars":
        T_parts.append(TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), min_df=2, sublinear_tf=True,
                                       max_features=20000).fit_transform(s))
    X[c + "_chars"] = s.str.len()
    X[c + "_words"] = s.str.split().str.len()
    for mark, name in ((",", "comma"), (";", "semi"), ("!", "excl"), ("?", "quest"), ("\\n", "para")):
        X[f"{c}_{name}"] = s.str.count(re.escape(mark))
TXT = sparse.hstack(T_parts).tocsr() if T_parts else None
'''

#: the metric names (and their aliases) whose scale is logarithmic: a value target is fitted as log1p there (their
#: library entries are non-negative regression metrics: RMSLE and its column-wise mean)
LOG_METRICS = tuple(sorted({n for m in METRICS.values() if m.regression and m.non_negative
                            for n in (m.name, *m.aliases)}))


def target_transform(spec: "GradeSpec") -> str:
    """How our own programs (the reference ladder, the population) fit a value target: ``"log1p"`` where the
    grading spec's metric is on the log scale, else ``"none"``. Decided by the metric -- the proxy metric for an
    environment graded by its own evaluator -- never by words of a description."""
    name = spec.proxy_metric if spec.external else spec.metric
    return "log1p" if name in LOG_METRICS else "none"

TRANSFORM = f'''
# the target transform: log1p where the metric is on the log scale, else none. A runner that knows the grading
# spec sets TARGET_TRANSFORM; without it, the metric is the one description.md names on its fixed line
# "Submissions are scored with **<metric>**" (no such line: none). Never from other words of the description.
if "TARGET_TRANSFORM" not in globals():
    import os as _os
    import re as _re

    _text = open("description.md", encoding="utf-8").read() if _os.path.isfile("description.md") else ""
    _named = _re.search(r"^Submissions are scored with [*][*]([^*]+)[*][*]", _text, _re.M)
    TARGET_TRANSFORM = "log1p" if _named and _named.group(1).strip().lower() in {LOG_METRICS!r} else "none"
log_target = TARGET_TRANSFORM == "log1p" and MODE == "value"
'''

MODEL = '''
# model
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

X = X.astype(float)
keep = rng.permutation(n_tr)[: max(10, int(0.9 * n_tr))] if STRATEGY_BAG else np.arange(n_tr)
X_med = X.fillna(X.iloc[:n_tr].median()).fillna(0.0)
Z = StandardScaler().fit(X_med.iloc[:n_tr]).transform(X_med)
Z = np.clip(np.nan_to_num(Z), -8, 8)
if TXT is not None:
    from scipy import sparse
    ZL = sparse.hstack([sparse.csr_matrix(Z * 0.3), TXT]).tocsr()
else:
    ZL = Z


_dense = []


def dense_for_trees():
    """Numbers for the trees: the tabular/media features plus a 30-dimensional SVD of the text (computed once)."""
    if not _dense:
        if TXT is None:
            _dense.append(X.to_numpy())
        else:
            from sklearn.decomposition import TruncatedSVD
            k = min(30, TXT.shape[1] - 1, n_tr - 1)
            svd = TruncatedSVD(n_components=k, random_state=SEED).fit_transform(TXT)
            _dense.append(np.hstack([X.to_numpy(), svd]))
    return _dense[0]


def fit_predict(y, kind):
    """Predictions on test rows for one target: class-probability matrix (with classes) or values."""
    ytr = y[keep]
    outs = []
    if STRATEGY_MODEL == "constant":
        if kind == "class":
            classes, counts = np.unique(ytr, return_counts=True)
            return np.tile(counts / counts.sum(), (len(test), 1)), classes
        return np.full(len(test), np.median(ytr) if not log_target else np.expm1(np.median(np.log1p(ytr))))
    if STRATEGY_MODEL in ("linear", "blend"):
        if kind == "class":
            m = LogisticRegression(C=0.5, max_iter=3000).fit(ZL[:n_tr][keep], ytr)
            outs.append((m.predict_proba(ZL[n_tr:]), m.classes_))
        else:
            t = np.log1p(np.maximum(ytr, 0)) if log_target else ytr
            p = Ridge(alpha=3.0).fit(ZL[:n_tr][keep], t).predict(ZL[n_tr:])
            outs.append((np.expm1(p) if log_target else p, None))
    many_classes = kind == "class" and len(np.unique(ytr)) > 8
    if STRATEGY_MODEL == "boosted" or (STRATEGY_MODEL == "blend" and not many_classes):
        D = dense_for_trees()
        args = dict(max_iter=120, learning_rate=0.07, max_leaf_nodes=15, min_samples_leaf=5, early_stopping=False,
                    l2_regularization=1.0, random_state=SEED)
        if kind == "class":
            m = HistGradientBoostingClassifier(**args).fit(D[:n_tr][keep], ytr)
            outs.append((m.predict_proba(D[n_tr:]), m.classes_))
        else:
            t = np.log1p(np.maximum(ytr, 0)) if log_target else ytr
            p = HistGradientBoostingRegressor(**args).fit(D[:n_tr][keep], t).predict(D[n_tr:])
            outs.append((np.expm1(p) if log_target else p, None))
    if kind != "class":
        return np.mean([o[0] for o in outs], axis=0)
    classes = np.unique(ytr)
    P = np.zeros((len(test), len(classes)))
    for proba, cls in outs:
        for j, c in enumerate(cls):
            P[:, np.searchsorted(classes, c)] += proba[:, j] / len(outs)
    return P, classes


sub = pd.DataFrame({ID: test[ID]})
if MODE == "proba":
    y = train[TARGETS[0]].astype(str).to_numpy()
    P, classes = fit_predict(y, "class")
    for c in PRED:
        sub[c] = P[:, list(classes).index(str(c))] if str(c) in list(classes) else 1e-3
    sub[PRED] = sub[PRED].clip(1e-4, 1).div(sub[PRED].sum(axis=1), axis=0)
elif MODE == "score":
    for c in PRED:
        y = train[c].astype(int).to_numpy()
        P, classes = fit_predict(y, "class")
        sub[c] = P[:, -1] if len(classes) > 1 and classes[-1] == y.max() else 0.0
elif MODE == "label":
    for c in PRED:
        y = train[c].astype(str).to_numpy()
        P, classes = fit_predict(y, "class")
        labels = classes[P.argmax(axis=1)]
        sub[c] = labels.astype(int) if integral(train[c]) else labels
else:
    for c in PRED:
        sub[c] = fit_predict(pd.to_numeric(train[c]).to_numpy(dtype=float), "value")
sub.to_csv(OUT, index=False)
print(f"wrote {OUT}: {len(sub)} rows, mode {MODE}, model {STRATEGY_MODEL}")
'''


CONSTANT = '''
# constant model: the training prior (or median) for every test row — it needs no features at all
keep = rng.permutation(len(train))[: max(10, int(0.9 * len(train)))] if STRATEGY_BAG else np.arange(len(train))
tr = train.iloc[keep]
sub = pd.DataFrame({ID: test[ID]})
if MODE == "proba":
    freq = tr[TARGETS[0]].astype(str).value_counts(normalize=True)
    for c in PRED:
        sub[c] = float(freq.get(str(c), 1e-3))
    sub[PRED] = sub[PRED].div(sub[PRED].sum(axis=1), axis=0)
elif MODE == "score":
    for c in PRED:
        sub[c] = float(tr[c].astype(int).mean())
elif MODE == "label":
    for c in PRED:
        sub[c] = tr[c].value_counts().index[0]
else:
    for c in PRED:
        y = pd.to_numeric(tr[c]).to_numpy(dtype=float)
        sub[c] = float(np.expm1(np.median(np.log1p(np.maximum(y, 0))))) if log_target else float(np.median(y))
sub.to_csv(OUT, index=False)
print(f"wrote {OUT}: {len(sub)} rows, mode {MODE}, model constant")
'''


@dataclass(frozen=True)
class Strategy:
    """The choices a solution makes (what a policy picks when it fills the template)."""

    model: str = "blend"  #: constant | linear | boosted | blend
    text: str = "words+chars"  #: words | words+chars
    rich: bool = True  #: richer media features (spectral bands, object statistics, group-centring)
    chars: bool = True  #: split fixed-length string codes into character counts
    bag: bool = True  #: fit on a seed-dependent 90% subsample (so RNG seeds differ)

    def header(self) -> str:
        return (f"STRATEGY_MODEL = {self.model!r}\nSTRATEGY_TEXT = {self.text!r}\nSTRATEGY_RICH = {self.rich!r}\n"
                f"STRATEGY_CHARS = {self.chars!r}\nSTRATEGY_BAG = {self.bag!r}\n")


def render_solution(strategy: Strategy | None = None, target_transform: str | None = None) -> str:
    """A complete, standalone solution script for any environment, following ``strategy``. ``target_transform``
    (``"log1p"`` | ``"none"``: :func:`target_transform` of the grading spec) is set by a runner that knows it;
    None leaves the script to read the metric off description.md's fixed scoring line."""
    s = strategy or Strategy()
    if target_transform not in (None, "log1p", "none"):
        raise ValueError(f"unknown target transform {target_transform!r}; expected log1p or none")
    doc = (f'"""Reference solution ({s.model}): python solution.py [SEED] [OUT]. Generic: the id, targets, '
           f'task and modality are read from the files."""\n')
    head = doc + s.header() + (f"TARGET_TRANSFORM = {target_transform!r}\n" if target_transform else "")
    if s.model == "constant":
        return head + PRELUDE + TRANSFORM + CONSTANT
    return head + PRELUDE + TRANSFORM + KINDS + TABULAR_FEATURES + MEDIA_FEATURES + TEXT_FEATURES + MODEL


#: modules the reference solutions and generators use: preloaded by the sandbox's warm worker during synthesis
WARM_IMPORTS = ["numpy", "pandas", "sklearn", "scipy.sparse", "sklearn.ensemble", "sklearn.linear_model",
                "sklearn.feature_extraction.text", "sklearn.decomposition", "sklearn.preprocessing", "sklearn.tree",
                "PIL.Image", "PIL.PngImagePlugin"]


def with_solution_imports(settings: SandboxSettings) -> SandboxSettings:
    """The sandbox settings with the reference solutions' imports added to what a warm worker imports."""
    extra = [m for m in WARM_IMPORTS if m not in settings.warm_imports]
    return settings.model_copy(update={"warm_imports": [*settings.warm_imports, *extra]})


#: the verifier's reference ladder, weakest first
LADDER: dict[str, Strategy] = {
    "trivial": Strategy(model="constant", text="words", rich=False, chars=False),
    "simple": Strategy(model="linear", text="words", rich=False, chars=False),
    "strong": Strategy(model="blend", text="words+chars", rich=True, chars=True),
}


#: runs several solutions × seeds in one interpreter (imports paid once), each isolated in a fresh namespace
RUNNER = '''\
import json, runpy, sys, time, traceback

plan = json.load(open("_ladder.json"))
results = []
for item in plan:
    start = time.perf_counter()
    sys.argv = [item["file"], str(item["seed"]), item["out"]]
    status, error = "ok", ""
    try:
        runpy.run_path(item["file"], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            status, error = "error", f"exit {exc.code}"
    except BaseException:
        status, error = "error", traceback.format_exc()[-3000:]
    results.append({**item, "status": status, "error": error, "wall_s": time.perf_counter() - start})
json.dump(results, open("_ladder_result.json", "w"))
print(json.dumps([(r["name"], r["seed"], r["status"], round(r["wall_s"], 3)) for r in results]))
'''

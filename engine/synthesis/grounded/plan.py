"""The grounded Designer's plan: a chosen dataset mapped onto the seed's structure — the CONFIG of the generator
template (``templates/grounded.py``).

The dataset is loaded and prepared exactly as its generator will (:func:`engine.synthesis.grounded.template`: rows
without a target and duplicate rows out), the columns chosen (documented ones first; derived and noise columns for a
shortfall), a column that alone gives the target away dropped (a tree on it alone scores ≥ :data:`LEAK_SCORE`),
sizes drawn, and a trial run (:func:`trial`): the program's own micro sample at two seeds, a plain model against a
constant, so a source whose target these rows cannot learn (or learn perfectly) is passed over before the sandbox
is ever asked.

A dataset that does not fit is refused with a named reason (:class:`Refused`, one of :data:`REASONS`), never an
exception: real data bring any column name (``self``, ``class``, ``1990``, ``x.y``, unicode, duplicates) and any
values (all missing, constant, mixed types, infinities, huge integers, dates as text, a single class), and the
names are data throughout — looked up, sanitized once into the task's names (the mapping kept in the plan:
:func:`name_map`), never passed as identifiers or keyword arguments.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from ...errors import GradingError, SynthesisError
from ...grading.metrics import get_metric
from ...grading.score import score_submission
from ...realdata import ColumnProfile, DatasetRef, Entry, load, reserved, sanitize
from ...realdata.prose import function_pair_share
from ..blueprint import Blueprint
from ..fidelity import EXACT_CLASSES, class_band
from ...envs.layout import GradeSpec
from ..grader import grade_spec
from . import template
from .fit import MAX_CLASSES, TargetOption, _doc, _needs, derivable, feature_pools

#: a single column that recovers the target this well (balanced accuracy, R²) is left out (the verifier's leakage
#: probe rejects at 0.97 on the test rows)
LEAK_SCORE = 0.93
#: the trial's bar: a plain model beats the constant by this share of the metric's scale (the verifier asks 0.03
#: of its strong reference, with a bootstrap interval above 0)
TRIAL_GAP = 0.05

#: why a dataset and target make no plan (the names a refusal, the catalog sweep and docs/synthesis.md use)
REASONS = {
    "target": "its target column does not give the seed's kind of target (levels, shares or bands it needs)",
    "features": "too few usable feature columns of the kinds the seed needs",
    "rare-class": "a class holds fewer than 8 usable rows",
    "rows": "too few usable rows (with a target, not duplicated) for a micro task",
    "leaky": "in every draw a column alone gave the target away",
    "not-learnable": "a plain model does not beat the constant on the program's own micro sample",
    "saturated": "a plain model scores near the metric's best on the program's own micro sample",
    "trial-failed": "the trial could not run on the micro sample (a class too rare to split, a model that fails)",
}


@dataclass(frozen=True)
class Refused:
    """A dataset and target that make no plan: one of :data:`REASONS` and a line that says what was found."""

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"unknown refusal reason {self.reason!r}")

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


#: names a task column never takes as they are: Python's keywords and ``self`` (code that passes a name as a
#: keyword argument, ``DataFrame.assign(**{name: ...})`` or ``Bunch(**{name: ...})``, breaks on ``self``; an agent's
#: ``row.class`` on a keyword). The name gets ``_col``; the source's own name stays in the description.
RESERVED_NAMES = frozenset({*keyword.kwlist, "self"})


def task_name(name: str, taken: set[str] | None = None) -> str:
    """The task's name for a source's column (or class, or derived column): :func:`~engine.realdata.sanitize`d
    once (``^[A-Za-z_][A-Za-z0-9_]{0,39}$``: dots, spaces and unicode become ``_``, a leading digit gets ``x``), a
    reserved name (:data:`RESERVED_NAMES`) suffixed, then numbered if ``taken`` has it."""
    out = sanitize(str(name))
    if out in RESERVED_NAMES or out.lower() == "self":
        out = out[:36] + "_col"
    return sanitize(out, taken) if taken is not None else out


def _as_text(values: Any) -> Any:
    return template().as_text(values)


def _class_label(value: Any, taken: set[str]) -> str:
    return task_name(str(value), taken)


def target_spec(option: TargetOption, frame: Any, blueprint: Blueprint, rng: np.random.Generator,
                names: set[str]) -> tuple[dict[str, Any], list[Any] | None, str] | Refused:
    """The program's target spec, the classes and a phrase for the title; refused when the data do not allow it."""
    import pandas as pd  # heavy

    task, k = blueprint.task_type, blueprint.n_classes
    col = option.columns[0]
    if option.how == "numeric":
        tnames = [task_name(c, names) for c in option.columns]
        phrase = " and ".join(tnames)
        if len(tnames) == 1 and option.meaning != option.columns[0] and len(option.meaning) <= 60:
            phrase = f"{tnames[0]} ({option.meaning.rstrip('.')})"
        return {"how": "numeric", "from": list(option.columns), "names": tnames}, None, phrase
    if option.how == "labels":
        if option.spec.get("tokens"):
            values = _as_text(frame[col]).dropna()
            sep = ","
            tokens = pd.Series([t.strip() for v in values for t in str(v).split(sep) if t.strip()])
            counts = tokens.value_counts()
            share = counts / max(1, len(values))
            keep = [t for t in counts.index if 0.05 <= share[t] <= 0.7][:k]
            if len(keep) != k or share.get(keep[0], 0) >= 0.99:
                return Refused("target", f"{len(keep)} labels listed in {col!r} hold 5-70% of rows; the seed "
                                         f"needs {k}")
            labels = [{"name": task_name(t.lower(), names), "from": col, "token": t, "sep": sep} for t in keep]
        else:
            if len(option.columns) < k:
                return Refused("target", f"{len(option.columns)} flag columns; the seed needs {k}")
            chosen = [option.columns[i] for i in sorted(rng.choice(len(option.columns), size=k, replace=False))]
            labels = []
            for c in chosen:
                vals = _as_text(frame[c]).dropna().value_counts()
                if len(vals) < 2:
                    return Refused("target", f"the flag column {c!r} holds {len(vals)} value(s) in the rows")
                labels.append({"name": task_name(c, names), "from": c, "positive": str(vals.index[-1])})
        return {"how": "labels", "labels": labels}, [0, 1], f"{k} flags of {col}"
    name = task_name(col, names)
    if option.how == "bins":
        x = template().numeric(frame[col]).dropna()
        if option.threshold is not None:
            q = float(rng.choice([0.5, 0.6, 0.7, 0.75]))
            cut = float(x.quantile(q))
            if not (0.1 <= float((x > cut).mean()) <= 0.6):
                return Refused("target", f"{float((x > cut).mean()):.0%} of {col!r} lies above its "
                                         f"{q:.0%} quantile (10-60% needed)")
            name = task_name(f"{col}_high", names)
            return ({"how": "bins", "from": col, "name": name, "cuts": [cut]}, [0, 1],
                    f"whether {col} is above {cut:.4g}")
        cuts = sorted({float(v) for v in x.quantile(np.linspace(0, 1, k + 1)[1:-1])})
        if len(cuts) != k - 1:
            return Refused("target", f"{col!r} cannot be cut into {k} equal-count bands (ties)")
        name = task_name(f"{col}_band", names)
        bands: list[Any] = list(range(1, k + 1)) if task == "ordinal" else [f"band_{i}" for i in range(1, k + 1)]
        return {"how": "bins", "from": col, "name": name, "cuts": cuts}, bands, f"the {k}-band level of {col}"
    values = _as_text(frame[col]).dropna()
    counts = values.value_counts()
    if task == "binary":
        if option.spec.get("one_vs_rest"):
            shares = counts / counts.sum()
            fit = [v for v in shares.index if 0.15 <= shares[v] <= 0.5]
            if not fit:
                return Refused("target", f"no level of {col!r} holds 15-50% of its rows")
            pos = str(fit[int(rng.integers(len(fit)))])
            tname = task_name(f"is_{pos.lower()}", names)
            return ({"how": "levels", "from": col, "name": tname, "values": [[], [pos]], "rest": 0}, [0, 1],
                    f"whether {col} is {pos}")
        levels = sorted(counts.index, key=lambda v: (-counts[v], str(v)))[:2]
        if len(levels) < 2:
            return Refused("target", f"{col!r} holds {len(levels)} level(s) in the rows; two are needed")
        pos = levels[1]  # the rarer level is the positive class
        return ({"how": "levels", "from": col, "name": name, "values": [[str(levels[0])], [str(pos)]]}, [0, 1],
                f"whether {col} is {pos}")
    lo, hi = class_band(k)
    m = min(len(counts), hi, MAX_CLASSES) if k > EXACT_CLASSES else k
    if len(counts) < max(lo, m) or m > MAX_CLASSES:
        return Refused("target", f"{col!r} holds {len(counts)} levels; the seed needs {max(lo, m)}"
                                 + (f" to {MAX_CLASSES}" if m > MAX_CLASSES else ""))
    keep = sorted(counts.index[:m], key=str)
    if counts[keep].min() < 8:
        return Refused("rare-class", f"a level of {col!r} among its {m} most frequent holds "
                                     f"{int(counts[keep].min())} rows")
    if task == "ordinal":
        nums = pd.to_numeric(pd.Series(keep), errors="coerce")
        if nums.isna().any():
            return Refused("target", f"the levels of {col!r} are not numbers, so they have no order")
        keep = [v for _, v in sorted(zip(nums, keep))]
        classes: list[Any] = list(range(1, len(keep) + 1))
    else:
        label_names: set[str] = set()
        nums = pd.to_numeric(pd.Series(keep), errors="coerce")
        if nums.notna().all() and (nums == nums.round()).all() and nums.nunique() == len(keep):
            classes = [int(v) for v in nums]
        else:  # labels (levels "1" and "1.0" are two levels, not one number twice)
            classes = [_class_label(v, label_names) for v in keep]
    return ({"how": "levels", "from": col, "name": name, "values": [[str(v)] for v in keep]}, classes,
            f"{col}" + ("" if m == len(counts) else f" (its {m} most frequent levels)"))


def _pick_columns(pool: list[ColumnProfile], n: int, entry: Entry, rng: np.random.Generator) -> list[ColumnProfile]:
    """``n`` columns of a pool: documented ones and complete ones first, ties broken by the RNG."""
    keyed = sorted(pool, key=lambda c: (not _doc(entry, c.name), round(c.missing, 1), float(rng.random())))
    return keyed[:n]


def _derived(real: list[ColumnProfile], n: int, rng: np.random.Generator,
             names: set[str]) -> list[dict[str, Any]]:
    """``n`` derived numeric columns from the real ones (logs of skewed counts, squares, ratios, products,
    differences), then noise columns for what is left."""
    out: list[dict[str, Any]] = []
    pool = [c for c in real if c.kind == "numeric"]
    ideas: list[dict[str, Any]] = []
    for c in pool:
        if c.nonnegative:
            ideas.append({"derive": "log1p", "of": [c.name], "what": f"natural log of 1 + `{{0}}`"})
        ideas.append({"derive": "square", "of": [c.name], "what": "square of `{0}`"})
    for i, a in enumerate(pool):
        for b in pool[i + 1:]:
            ideas.append({"derive": "ratio", "of": [a.name, b.name], "what": "`{0}` divided by `{1}`"})
            ideas.append({"derive": "product", "of": [a.name, b.name], "what": "`{0}` times `{1}`"})
            ideas.append({"derive": "difference", "of": [a.name, b.name], "what": "`{0}` minus `{1}`"})
    for j in rng.permutation(len(ideas))[:n]:
        idea = dict(ideas[int(j)])
        base = "_".join(sanitize(x) for x in idea["of"])[:28]
        idea["name"] = task_name(f"{idea['derive']}_{base}", names)
        idea["kind"] = "numeric"
        out.append(idea)
    for i in range(n - len(out)):
        out.append({"derive": "noise", "name": task_name(f"noise_{i + 1}", names), "kind": "numeric",
                    "what": "random noise (standard normal), unrelated to the target"})
    return out


def columns_for(entry: Entry, blueprint: Blueprint, option: TargetOption, rng: np.random.Generator,
                names: set[str], drop: Sequence[str] = ()) -> list[dict[str, Any]] | Refused:
    """The feature columns of the plan (real ones under sanitized names, then derived ones), or why there are too
    few."""
    pools = feature_pools(entry, [*option.columns, *drop])
    needs = _needs(blueprint)
    cols: list[dict[str, Any]] = []
    want, lo, hi = needs["text"]
    texts = _pick_columns(pools["text"], min(want, hi), entry, rng) if want else []
    if len(texts) < lo:
        return Refused("features", f"{len(texts)} prose column(s); the seed needs {lo}")
    for c in texts:
        cols.append({"name": task_name(c.name, names), "from": c.name, "kind": "text"})
    want, lo, hi = needs["numeric"]
    real = _pick_columns(pools["numeric"], min(want, len(pools["numeric"])), entry, rng)
    extra = derivable(len(real), want) if len(real) < want else 0
    if len(real) + extra < lo:
        return Refused("features", f"{len(real)} numeric column(s) and {extra} derivable; the seed needs {lo}")
    for c in real:
        cols.append({"name": task_name(c.name, names), "from": c.name,
                     "kind": "numeric" if c.kind == "numeric" else "binary"})
    want_c, lo_c, hi_c = needs["categorical"]
    cats = _pick_columns(pools["categorical"], min(want_c, len(pools["categorical"])), entry, rng)
    for c in cats:
        cols.append({"name": task_name(c.name, names), "from": c.name, "kind": "category"})
    short = max(0, lo_c - len(cats)) if want_c else 0
    numeric_real = [c for c in real if c.kind == "numeric"]
    if short > len(numeric_real):
        return Refused("features", f"{len(cats)} category column(s) and {len(numeric_real)} to band; the seed "
                                   f"needs {lo_c}")
    for c in numeric_real[:short]:
        cols.append({"derive": "bins", "of": [c.name], "name": task_name(f"{c.name}_band", names), "kind": "category",
                     "what": "`{0}` in three bands (low, middle, high: its terciles)"})
    cols += _derived(real, extra, rng, names)
    return cols


def _fill_bins(cols: list[dict[str, Any]], frame: Any) -> None:
    for c in cols:
        if c.get("derive") == "bins":
            x = template().numeric(frame[c["of"][0]]).dropna()
            cuts = sorted({float(v) for v in x.quantile([1 / 3, 2 / 3])})
            c["cuts"], c["labels"] = cuts, ["low", "middle", "high"][: len(cuts) + 1]


def leaky_columns(cfg: dict[str, Any], frame: Any, prepared: Any = None) -> list[str]:
    """Source columns of features that alone recover the target (a depth-3 tree on the one column, on half the
    usable rows, scored on the other half)."""
    from sklearn.metrics import balanced_accuracy_score, r2_score  # heavy
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    feats, y, cls = prepared if prepared is not None else template().prepare(cfg, frame)
    n = min(len(feats), 2000)
    idx = np.random.default_rng(0).permutation(len(feats))[:n]
    half = n // 2
    tr, te = idx[:half], idx[half:]
    leaks = []
    for col in cfg["columns"]:
        if col["kind"] == "text" or col.get("derive") == "noise":
            continue
        values = feats[col["name"]]
        if values.dtype == object:
            codes = {v: i for i, v in enumerate(sorted({str(v) for v in values}))}
            x = values.astype(str).map(codes).to_numpy(dtype=float)[:, None]
        else:
            x = template().numeric(values).fillna(-1e9).to_numpy()[:, None]
        scores = []
        if cls is not None:
            yy = np.asarray(cls)
            pred = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x[tr], yy[tr]).predict(x[te])
            scores.append(balanced_accuracy_score(yy[te], pred))
        elif cfg["task_type"] != "multilabel":
            for t in y.columns:
                yy = y[t].to_numpy(dtype=float)
                pred = DecisionTreeRegressor(max_depth=3, random_state=0).fit(x[tr], yy[tr]).predict(x[te])
                scores.append(r2_score(yy[te], pred))
        if scores and max(scores) >= LEAK_SCORE:
            leaks.append(col["from"] if "from" in col else col["of"][0])  # a source name may be ""
    return leaks


def _features(cfg: dict[str, Any]) -> Any:
    """A plain preprocessing of the plan's columns: TF-IDF for text, one-hot for categories, scaled numbers."""
    from sklearn.compose import ColumnTransformer  # heavy: only while designing
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    # a step's name is an identifier to scikit-learn (``Bunch(**names)``): numbered, never the column's own name
    parts: list[Any] = [(f"text{i}", TfidfVectorizer(min_df=2, sublinear_tf=True), c["name"])
                        for i, c in enumerate(c for c in cfg["columns"] if c["kind"] == "text")]
    cats = [c["name"] for c in cfg["columns"] if c["kind"] == "category"]
    nums = [c["name"] for c in cfg["columns"] if c["kind"] in ("numeric", "binary")]
    if cats:
        parts.append(("cat", make_pipeline(SimpleImputer(strategy="constant", fill_value="NA"),
                                           OneHotEncoder(handle_unknown="ignore")), cats))
    if nums:
        parts.append(("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), nums))
    return ColumnTransformer(parts)


def _inputs(cfg: dict[str, Any], frame: Any) -> Any:
    out = frame[[c["name"] for c in cfg["columns"]]].copy()
    for c in cfg["columns"]:
        if c["kind"] == "text":
            out[c["name"]] = out[c["name"]].fillna("").astype(str)
        elif c["kind"] == "category":
            out[c["name"]] = out[c["name"]].astype(object)
    return out


def _predict(cfg: dict[str, Any], spec: GradeSpec, train: Any, test: Any) -> Any:
    """A plain model's submission for the test rows, in the grade spec's format."""
    import pandas as pd  # heavy
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline

    metric = get_metric(spec.metric)
    Xtr, Xte = _inputs(cfg, train), _inputs(cfg, test)
    ids = test[spec.id_column].to_numpy() if spec.id_column in test.columns else np.arange(1, len(test) + 1)
    sub = pd.DataFrame({spec.id_column: ids})
    task = cfg["task_type"]
    if task in ("regression", "multi_target_regression"):
        for t in spec.prediction_columns:
            y = train[t].to_numpy(dtype=float)
            logged = metric.non_negative
            model = make_pipeline(_features(cfg), Ridge(alpha=1.0)).fit(Xtr, np.log1p(y) if logged else y)
            pred = model.predict(Xte)
            sub[t] = np.clip(np.expm1(np.minimum(pred, 700.0)), 0, None) if logged else pred  # no overflow
        return sub
    if task == "multilabel":
        for t in spec.prediction_columns:
            model = make_pipeline(_features(cfg), LogisticRegression(max_iter=500)).fit(Xtr, train[t].astype(int))
            sub[t] = model.predict_proba(Xte)[:, 1]
        return sub
    t = spec.target_columns[0]
    model = make_pipeline(_features(cfg), LogisticRegression(max_iter=500)).fit(Xtr, train[t].astype(str))
    labels = [str(c) for c in model.classes_]
    proba = model.predict_proba(Xte)
    if metric.prediction == "proba":  # every class's column at once (20+ columns inserted one by one are slow)
        cols = list(spec.prediction_columns)
        mat = np.column_stack([proba[:, labels.index(str(c))] if str(c) in labels else np.zeros(len(sub))
                               for c in cols])
        sub = pd.concat([sub, pd.DataFrame(np.clip(mat, 1e-6, 1), columns=cols, index=sub.index)], axis=1)
    elif metric.prediction == "value":
        sub[t] = proba[:, labels.index("1")] if "1" in labels else 0.0
    else:
        guess = np.asarray(labels, dtype=object)[proba.argmax(axis=1)]
        kinds = {type(v) for v in train[t].dropna()}
        sub[t] = [int(g) if kinds <= {int, np.int64} else g for g in guess]
    return sub


def trial(cfg: dict[str, Any], frame: Any, seeds: Sequence[int] = (101, 202),
          prepared: Any = None) -> dict[str, Any]:
    """What a plain model scores on the program's own micro sample, by the task's metric, against the sample
    submission (the constant the verifier's ladder starts from), at ``seeds``: ``ok`` when it beats the constant
    by :data:`TRIAL_GAP` of the metric's scale on every seed and is not near the metric's best (saturated)."""

    spec = GradeSpec(**cfg["grade"])
    metric = get_metric(spec.metric)
    sign = -1.0 if metric.lower_is_better else 1.0
    gaps, scores = [], []
    for seed in seeds:
        train, test, answers, sample = template().build(cfg, frame, seed, int(cfg["n_train"]), int(cfg["n_test"]),
                                                        prepared)
        answers = answers.astype({spec.id_column: str})
        constant = score_submission(spec, answers, sample.astype({spec.id_column: str}))
        score = score_submission(spec, answers, _predict(cfg, spec, train, test).astype({spec.id_column: str}))
        scale = 1.0 if metric.bounded else max(abs(constant), 1e-9)
        gaps.append(sign * (score - constant) / scale)
        scores.append(score)
    best = max(scores, key=lambda s: sign * s)
    saturated = metric.best is not None and abs(best - metric.best) < (0.01 if metric.bounded else 1e-9)
    return {"gap": round(min(gaps), 4), "score": round(float(best), 4), "metric": spec.metric,
            "ok": min(gaps) >= TRIAL_GAP and not saturated, "saturated": bool(saturated)}


def answer_columns(cfg: dict[str, Any], frame: Any, seed: int = 101, prepared: Any = None) -> list[str]:
    """Source columns of few values that alone — each value read as a label, the way the exploit audit reads them
    — score about as well as a plain model on the whole row: the answers could be read instead of learned."""

    task = cfg["task_type"]
    if task in ("regression", "multi_target_regression", "multilabel"):
        return []
    spec = GradeSpec(**cfg["grade"])
    metric = get_metric(spec.metric)
    sign = -1.0 if metric.lower_is_better else 1.0
    train, test, answers, sample = template().build(cfg, frame, seed, int(cfg["n_train"]), int(cfg["n_test"]),
                                                    prepared)
    answers = answers.astype({spec.id_column: str})
    constant = score_submission(spec, answers, sample.astype({spec.id_column: str}))
    model = score_submission(spec, answers, _predict(cfg, spec, train, test).astype({spec.id_column: str}))
    found = []
    for col in cfg["columns"]:
        if col["kind"] == "text" or col.get("derive") == "noise" or train[col["name"]].nunique() > 20:
            continue
        one = {**cfg, "columns": [{**col, "kind": "category"}]}
        tr, te = train.copy(), test.copy()  # the name is a label: never a keyword (a column may be named self)
        tr[col["name"]] = train[col["name"]].astype(str)
        te[col["name"]] = test[col["name"]].astype(str)
        try:
            rule = score_submission(spec, answers, _predict(one, spec, tr, te).astype({spec.id_column: str}))
        except Exception:  # noqa: BLE001 - a column a plain model cannot use reads as no answer
            continue
        if sign * (rule - constant) > 0 and sign * (rule - model) >= -0.25 * abs(model - constant):
            found.append(col["from"] if "from" in col else col["of"][0])
    return found


def sizes(blueprint: Blueprint, usable: int, rng: np.random.Generator, k: int = 0) -> tuple[int, int] | None:
    """(n_train, n_test) like the procedural designer's, within the rows there are; None when too few."""
    lo = 50 if k <= 3 else min(200, max(50, 10 * k))
    if usable < max(lo, 60) + 50:
        return None
    n_train = int(rng.integers(max(lo, 60), min(200, usable - 50) + 1))
    n_test = int(np.clip(int(n_train * rng.uniform(1.2, 1.8)), 120, 320))
    n_test = max(50, min(n_test, usable - n_train))
    return n_train, n_test


def plan(entry: Entry, option: TargetOption, blueprint: Blueprint, metric: str,
         rng: np.random.Generator, *, id_in_test: bool = True, frame: Any = None) -> dict[str, Any] | None:
    """The generator's CONFIG for ``entry`` with ``option`` as target, or None when the data do not fit after all
    (:func:`make_plan` says why)."""
    made = make_plan(entry, option, blueprint, metric, rng, id_in_test=id_in_test, frame=frame)
    return None if isinstance(made, Refused) else made


def source_frame(ref: DatasetRef) -> Any:
    """The dataset as the generator program reads it: loaded by name, its column labels as text, each once."""
    return template().source_columns(load(ref))


def make_plan(entry: Entry, option: TargetOption, blueprint: Blueprint, metric: str,
              rng: np.random.Generator, *, id_in_test: bool = True, frame: Any = None) -> dict[str, Any] | Refused:
    """The generator's CONFIG for ``entry`` with ``option`` as target (grading spec and description left to the
    grader and the describer), or why the data do not fit after all (:class:`Refused`: too few usable rows or
    classes, a target these rows cannot learn, or learn perfectly). ``frame``: the dataset already read
    (:func:`source_frame`; a sweep reads each dataset once), else it is read here. A held-out dataset raises
    :class:`~engine.errors.SynthesisError`, whoever calls."""
    # the plan fits hundreds of tiny models (a few hundred rows): BLAS threads only contend for the cores, 3-7x
    # slower on a loaded 2-core machine (psych/bfi for a binary seed at load average 9: 18-36 s with 2 threads,
    # 5.3-6.3 s with 1). The limit holds for the libraries loaded when it is set: scikit-learn's (and scipy's
    # BLAS) first, heavy
    import sklearn.linear_model  # noqa: F401

    with threadpool_limits(limits=1):
        return _make_plan(entry, option, blueprint, metric, rng, id_in_test=id_in_test, frame=frame)


def _make_plan(entry: Entry, option: TargetOption, blueprint: Blueprint, metric: str,
               rng: np.random.Generator, *, id_in_test: bool, frame: Any) -> dict[str, Any] | Refused:
    reason = reserved(entry.ref)
    if reason is not None:  # never a held-out dataset, whoever calls
        raise SynthesisError(reason)
    ref: DatasetRef = entry.ref
    frame = source_frame(ref) if frame is None else template().source_columns(frame)
    drop: list[str] = []
    leaks: list[str] = []
    for _ in range(3):
        names: set[str] = {"id"}
        target = target_spec(option, frame, blueprint, rng, names)
        if isinstance(target, Refused):
            return target
        spec, classes, phrase = target
        cols = columns_for(entry, blueprint, option, rng, names, drop)
        if isinstance(cols, Refused):
            return cols
        _fill_bins(cols, frame)
        cfg: dict[str, Any] = {
            "kind": "grounded", "source": {"source": ref.source, "package": ref.package, "name": ref.name},
            "key": ref.key, "id_column": "id", "id_style": "int", "task_type": blueprint.task_type, "metric": metric,
            "columns": cols, "target": spec, "classes": classes, "phrase": phrase,
            "nonnegative": bool(blueprint.nonnegative_target or get_metric(metric).non_negative),
        }
        if not id_in_test:
            cfg["id_in_test"] = False
        prepared = template().prepare(cfg, frame)  # the same rows for every check below: computed once
        feats, y, cls = prepared
        k = len(classes) if classes and blueprint.task_type != "multilabel" else 0
        if cls is not None and k:
            counts = np.bincount(np.asarray(cls), minlength=k)
            if (counts < 8).any():
                rare = (classes or [])[int(counts.argmin())]
                return Refused("rare-class", f"class {rare!r} holds {int(counts.min())} usable row(s)")
            cfg["priors"] = [max(0.0001, round(float(v), 4)) for v in counts / len(cls)]
        elif blueprint.task_type == "multilabel":
            cfg["priors"] = [max(0.0001, round(float(v), 4)) for v in y.mean(axis=0)]
        drawn = sizes(blueprint, len(feats), rng, k)
        if drawn is None:
            return Refused("rows", f"{len(feats)} usable rows")
        cfg["n_train"], cfg["n_test"] = drawn
        cfg["target_columns"] = list(y.columns)
        cfg["grade"] = _grade(cfg, blueprint, metric)
        try:
            leaks = leaky_columns(cfg, frame, prepared) or answer_columns(cfg, frame, prepared=prepared)
        except (RuntimeError, ValueError, GradingError) as exc:
            return Refused("trial-failed", f"the leakage check: {_line(exc)}")
        if not leaks:
            break
        drop += leaks
    else:
        return Refused("leaky", "alone, " + ", ".join(repr(c) for c in dict.fromkeys(drop)) + " gave the target "
                                "away")
    try:
        cfg["trial"] = trial(cfg, frame, prepared=prepared)
    except (RuntimeError, ValueError, GradingError) as exc:
        return Refused("trial-failed", _line(exc))
    found = cfg["trial"]
    if not found["ok"]:
        what = f"{found['metric']} {found['score']}, {found['gap']:+.3f} of its scale over the constant"
        return Refused("saturated" if found["saturated"] else "not-learnable", what)
    texts = [c["name"] for c in cfg["columns"] if c["kind"] == "text"]
    if texts:
        sample, _, _, _ = template().build(cfg, frame, 7, int(cfg["n_train"]), int(cfg["n_test"]), prepared)
        cfg["prose"] = {c: round(function_pair_share(sample[c].dropna().astype(str)), 4) for c in texts}
    cfg["names"] = name_map(cfg)
    return cfg


def name_map(cfg: dict[str, Any]) -> dict[str, str | list[str]]:
    """Each column of the task → the source column(s) it is read from (derived columns: the real ones they are
    computed from): the provenance of every name, the source's own spelling kept."""
    out: dict[str, str | list[str]] = {}
    for c in cfg["columns"]:
        if c.get("derive") == "noise":
            continue
        out[c["name"]] = c["from"] if "from" in c else list(c.get("of", []))
    t = cfg["target"]
    if t["how"] == "numeric":
        out.update(zip(t["names"], t["from"]))
    elif t["how"] == "labels":
        out.update((lab["name"], lab["from"]) for lab in t["labels"])
    else:
        out[t["name"]] = t["from"]
    return out


def _line(exc: BaseException) -> str:
    """An exception in one line (its type and the first line of its message, at most 200 characters)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200]


def _grade(cfg: dict[str, Any], blueprint: Blueprint, metric: str) -> dict[str, Any]:
    """The Grader's spec, as every backend's (the program writes it as grade.json)."""
    return grade_spec(blueprint, cfg, metric).to_dict()

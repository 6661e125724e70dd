"""The population board: an environment's medals come from many independent solutions, not from the verifier's
own three scripts.

A real competition's board is thousands of people's different solutions; a synthetic environment's board is a
*population*: model families (random forests, extra trees, gradient boosting at several depths and rates,
k-nearest neighbours, linear models across regularisation strengths, naive Bayes, discriminant analysis, small
MLPs, support vector machines, decision trees, blends), feature choices and seeds — :data:`POPULATION`, one
:class:`Entry` each. The whole population is one program (:func:`population_program`) run in the sandbox on the
environment's public files like any submission, in one interpreter (features built once per feature set, imports
paid once), writing one submission per entry; each is graded like any submission
(:func:`engine.grading.score.score_many`).

The board counts distinct solutions (:data:`BOARD_VERSION` ``population-2``; the first population counted copies):
- a feature set whose matrix equals another's here ("rich" is "plain" on tabular data without text or codes,
  "numeric" is "plain" on all-numeric data) does not run a model a second time: the program hashes each matrix
  once built and skips an entry whose model, parameters, seed and matrix already ran (said so in the summary);
- identical submissions -- the same predictions row by row (:func:`.distinct.prediction_key`), not a tied score
  -- become one entry before grading: the first in board order stays, the others are marked ``duplicate``;
- :data:`MIN_ENTRIES` counts distinct entries: while fewer have been written, the program goes on into
  :data:`RESERVE` (more seeds and hyperparameters of families whose predictions differ), and a board that still
  has fewer is refused, saying how many were copies.
There is no cross-validated model choice: it resubmitted one of its own candidates, which stood beside it.

The version (:data:`~engine.envs.layout.BOARD_VERSION`) is recorded in every population board's thresholds, so
``doctor --deep`` finds boards built before and ``sandmle envs reboard`` rebuilds them.

Our programs fit a value target in log space exactly where the metric is on the log scale
(:func:`.solutions.target_transform` of the grading spec, passed in the plan), never because a description uses
the word.

Independence from what a policy can pick: the program reads the files with the same generic code as every
solution (id, targets, what to predict, column kinds, the feature blocks), but no entry fits a model a policy's
strategy fits (the policy's options are :data:`engine.synthesis.solutions.LADDER`'s templates: a logistic
regression at C 0.5 or a ridge at alpha 3, one histogram-boosting setting, their blend); tests check that no
policy option's submission equals an entry's. Several entries are stronger than the strongest option: the top of
the board is not owned by our own teacher.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..envs.layout import BOARD_VERSION, GradeSpec
from ..errors import InvalidSubmission, SandboxError
from ..grading.score import score_many
from ..sandbox import Limits, RunMeta, SandboxBackend
from .distinct import first_of_each, prediction_key, program_source
from .solutions import KINDS, MEDIA_FEATURES, PRELUDE, TABULAR_FEATURES, TEXT_FEATURES, target_transform

#: solution → (its name on a classification board, on a regression board, its family in the Board tab)
SOLUTIONS: dict[str, tuple[str, str, str]] = {
    "linear": ("logistic-regression", "ridge", "linear"),
    "sparse-linear": ("l1-logistic-regression", "lasso", "linear"),
    "tuned-linear": ("logistic-regression-cv", "ridge-cv", "linear"),
    "discriminant": ("linear-discriminant", "ard-regression", "discriminant / Bayesian"),
    "naive-bayes": ("naive-bayes", "bayesian-ridge", "discriminant / Bayesian"),
    "knn": ("k-nearest-neighbours", "k-nearest-neighbours", "nearest neighbours"),
    "decision-tree": ("decision-tree", "decision-tree", "decision tree"),
    "random-forest": ("random-forest", "random-forest", "tree ensemble"),
    "extra-trees": ("extra-trees", "extra-trees", "tree ensemble"),
    "hist-gradient-boosting": ("hist-gradient-boosting", "hist-gradient-boosting", "gradient boosting"),
    "gradient-boosting": ("gradient-boosting", "gradient-boosting", "gradient boosting"),
    "mlp": ("mlp", "mlp", "neural network"),
    "svm": ("svm", "svm", "kernel machine"),
    "blend": ("blend", "blend", "blend"),
}


@dataclass(frozen=True)
class Entry:
    """One solution of the population: a model (``solution`` with ``params``) on a feature set, with a seed."""

    solution: str
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    features: str = "plain"  #: numeric (numbers only) | plain | rich (character codes, char n-grams, rich media)
    seed: int = 0

    @property
    def family(self) -> str:
        return SOLUTIONS[self.solution][2]

    def name(self, regression: bool) -> str:
        """The solution's name on a board of this kind (a ridge on a regression board, not a logistic regression)."""
        return SOLUTIONS[self.solution][1 if regression else 0]

    def label(self, regression: bool = False) -> str:
        """The entry in words: ``random-forest leaf=3 · rich · seed 1``."""
        ps = " ".join(f"{k}={v}" for k, v in self.params.items() if k != "members")
        if "members" in self.params:
            ps = "+".join(SOLUTIONS[m[0]][1 if regression else 0] for m in self.params["members"]) + \
                (f" {ps}" if ps else "")
        return " · ".join((f"{self.name(regression)} {ps}".strip(), self.features, f"seed {self.seed}"))

    def shown_params(self, regression: bool) -> dict[str, Any]:
        """The parameters as the board shows them: a blend's members by their names on this kind of board."""
        params = {**self.params, "features": self.features}
        if "members" in params:
            params["members"] = [[SOLUTIONS[m][1 if regression else 0], p] for m, p in params["members"]]
        return params

    def plan(self, index: int) -> dict[str, Any]:
        return {"index": index, "solution": self.solution, "params": self.params, "features": self.features,
                "seed": self.seed, "out": f"_pop_{index}.csv"}


def _grid() -> list[Entry]:
    e: list[Entry] = []
    for feats in ("plain", "rich"):
        e += [Entry("linear", {"C": c}, feats) for c in (0.03, 0.1, 0.3, 1.0, 3.0)]
    e += [Entry("linear", {"C": c}, "numeric") for c in (0.1, 1.0)]
    e += [Entry("sparse-linear", {"C": 1.0}, "rich"), Entry("tuned-linear", {}, "plain")]
    for feats in ("plain", "rich"):
        e += [Entry("discriminant", {}, feats), Entry("naive-bayes", {}, feats)]
    e += [Entry("knn", {"k": k}, "plain") for k in (3, 7, 15, 31)]
    e += [Entry("knn", {"k": k}, "rich") for k in (9, 21)] + [Entry("knn", {"k": 5}, "numeric")]
    e += [Entry("decision-tree", {"depth": d}, "plain") for d in (3, 6)] + [Entry("decision-tree", {"depth": 4}, "rich")]
    e += [Entry("svm", {"C": c}, "plain") for c in (0.3, 1.0, 10.0)]
    e += [Entry("svm", {"C": 3.0}, "rich"), Entry("svm", {"C": 1.0}, "numeric")]
    e += [Entry("random-forest", {"leaf": 1}, "rich", s) for s in (0, 1)] + \
        [Entry("random-forest", {"leaf": 3}, "plain", 2)]
    e += [Entry("extra-trees", {"leaf": 1}, "rich", 0), Entry("extra-trees", {"leaf": 2}, "plain", 1)]
    e += [Entry("hist-gradient-boosting", {"lr": 0.15, "leaves": 15, "trees": 80}, "rich")]
    e += [Entry("gradient-boosting", {"depth": 2, "lr": 0.2, "trees": 60}, "rich")]
    e += [Entry("mlp", {"alpha": 1.0}, "plain", 0)]
    # blends: what a strong competitor submits
    e += [Entry("blend", {"members": [["random-forest", {"leaf": 1}], ["linear", {"C": 1.0}]]}, "rich", 3),
          Entry("blend", {"members": [["extra-trees", {"leaf": 1}], ["svm", {"C": 3.0}], ["linear", {"C": 0.3}]]},
                "rich", 4),
          Entry("blend", {"members": [["linear", {"C": 3.0}], ["knn", {"k": 9}]]}, "plain")]
    return e


#: the population every synthetic environment's board is built from (in board order: cheap first)
POPULATION: tuple[Entry, ...] = tuple(_grid())

#: what the program runs, in this order, while fewer than :data:`MIN_ENTRIES` distinct submissions are written:
#: seeds and hyperparameters of families whose predictions differ by them, on the plain features (which every
#: environment has); none repeats an entry of :data:`POPULATION`
RESERVE: tuple[Entry, ...] = (
    Entry("random-forest", {"leaf": 1}, "plain", 5),
    Entry("extra-trees", {"leaf": 1}, "plain", 6),
    Entry("gradient-boosting", {"depth": 3, "lr": 0.1, "trees": 80}, "plain", 7),
    Entry("mlp", {"alpha": 0.1}, "plain", 8),
    Entry("knn", {"k": 11}, "plain"),
    Entry("svm", {"C": 30.0}, "plain"),
    Entry("hist-gradient-boosting", {"lr": 0.05, "leaves": 7, "trees": 120}, "plain", 9),
    Entry("decision-tree", {"depth": 5}, "plain", 10),
    Entry("random-forest", {"leaf": 5}, "plain", 11),
    Entry("extra-trees", {"leaf": 4}, "plain", 12),
    Entry("mlp", {"alpha": 3.0}, "plain", 13),
    Entry("linear", {"C": 10.0}, "plain"),
    Entry("knn", {"k": 23}, "plain"),
    Entry("gradient-boosting", {"depth": 4, "lr": 0.05, "trees": 100}, "plain", 14),
    Entry("blend", {"members": [["random-forest", {"leaf": 3}], ["knn", {"k": 15}]]}, "plain", 15),
    Entry("blend", {"members": [["gradient-boosting", {"depth": 2, "lr": 0.2, "trees": 60}], ["linear", {"C": 0.3}]]},
          "plain", 16),
)

#: the task types whose boards are regression boards
REGRESSION = ("regression", "multi_target_regression")

#: the least distinct entries a population board may have (fewer: the environment is rejected); the one constant
MIN_ENTRIES = 40


def _feature_code() -> str:
    """The shared feature blocks (tabular, media, text) as one program text, run once per feature set."""
    return TABULAR_FEATURES + MEDIA_FEATURES + TEXT_FEATURES


ZOO = r'''
# ---------------------------------------------------------------- the population's models
import hashlib as _hashlib
import json as _json
import time as _time
import traceback as _tb

from scipy import sparse as _sp
from sklearn import (discriminant_analysis as _da, ensemble as _en, linear_model as _lm, naive_bayes as _nb,
                     neighbors as _nn, neural_network as _mlp, svm as _svm, tree as _tree)
from sklearn.decomposition import TruncatedSVD as _SVD
from sklearn.multiclass import OneVsRestClassifier as _OvR
from sklearn.preprocessing import StandardScaler as _Scaler

class SkipEntry(Exception):
    """An entry that does not apply to this environment (it is left off the board, saying why)."""


import sklearn as _sklearn

_sklearn.set_config(skip_parameter_validation=True)  # the parameters are ours: skip re-checking each fit
CONFIG = _json.load(open("_population.json"))
# the target transform comes from the grading spec's metric (the runner's), never from words of the description
LOG_TARGET = CONFIG["target_transform"] == "log1p" and MODE == "value"
SETS = {"numeric": dict(STRATEGY_TEXT="words", STRATEGY_RICH=False, STRATEGY_CHARS=False),
        "plain": dict(STRATEGY_TEXT="words", STRATEGY_RICH=False, STRATEGY_CHARS=False),
        "rich": dict(STRATEGY_TEXT="words+chars", STRATEGY_RICH=True, STRATEGY_CHARS=True)}
_cache = {}
_digest = {}  # feature set -> the hash of its matrix
SAME_AS = {}  # feature set -> the earlier feature set whose matrix it equals here


def matrices(name):
    """The feature set ``name`` as (dense scaled, sparse-or-dense for linear models, dense for trees)."""
    if name in _cache:
        return _cache[name]
    if name == "numeric":
        X, TXT = both[NUMS].apply(pd.to_numeric, errors="coerce"), None
    else:
        ns = dict(globals(), **SETS[name])
        exec(FEATURE_CODE, ns)
        X, TXT = ns["X"], ns["TXT"]
    X = X.astype(float)
    if X.shape[1] == 0 and TXT is None:
        raise SkipEntry(f"no {name} features here")
    h = _hashlib.sha256(repr(X.shape).encode() + np.ascontiguousarray(X.to_numpy()).tobytes())
    if TXT is not None:
        for part in (TXT.data, TXT.indices, TXT.indptr, np.asarray(TXT.shape)):
            h.update(np.ascontiguousarray(part).tobytes())
    _digest[name] = h.hexdigest()
    SAME_AS[name] = next((k for k, v in _digest.items() if k != name and v == _digest[name]), None)
    Xm = X.fillna(X.iloc[:n_tr].median()).fillna(0.0)
    Z = _Scaler().fit(Xm.iloc[:n_tr]).transform(Xm) if X.shape[1] else np.zeros((len(both), 0))
    Z = np.clip(np.nan_to_num(Z), -6, 6)
    if TXT is not None:
        k = max(1, min(40, TXT.shape[1] - 1, n_tr - 1))
        svd = _SVD(n_components=k, random_state=0).fit_transform(TXT)
        dense = np.hstack([Xm.to_numpy(), svd])
        scaled = np.hstack([Z, _Scaler().fit(svd[:n_tr]).transform(svd)])
        lin = _sp.hstack([_sp.csr_matrix(Z * 0.5), TXT]).tocsr()
    else:
        dense, scaled, lin = Xm.to_numpy(), Z, Z
    _cache[name] = (scaled, lin, dense)
    return _cache[name]


def model(solution, p, kind, seed, n_classes):
    """(estimator, which matrix it reads: 'scaled' | 'lin' | 'dense')."""
    cls = kind == "class"
    if solution == "linear":
        return (_lm.LogisticRegression(C=p["C"], tol=1e-3, max_iter=2000) if cls
                else _lm.Ridge(alpha=1.0 / p["C"])), "lin"
    if solution == "sparse-linear":
        return (_OvR(_lm.LogisticRegression(C=p["C"], l1_ratio=1.0, solver="liblinear")) if cls
                else _lm.Lasso(alpha=0.01 / p["C"], max_iter=5000)), "lin"
    if solution == "tuned-linear":
        return (_lm.LogisticRegressionCV(Cs=3, cv=3, max_iter=3000) if cls
                else _lm.RidgeCV(alphas=(0.1, 1.0, 10.0, 100.0))), "scaled"
    if solution == "discriminant":
        return (_da.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto") if cls
                else _lm.ARDRegression()), "scaled"
    if solution == "naive-bayes":
        return (_nb.GaussianNB(var_smoothing=1e-2) if cls else _lm.BayesianRidge()), "scaled"
    if solution == "knn":
        k = max(1, min(p["k"], n_tr - 1))
        return (_nn.KNeighborsClassifier(k, weights="distance") if cls
                else _nn.KNeighborsRegressor(k, weights="distance")), "scaled"
    if solution == "decision-tree":
        args = dict(max_depth=p["depth"], min_samples_leaf=3, random_state=seed)
        return (_tree.DecisionTreeClassifier(**args) if cls else _tree.DecisionTreeRegressor(**args)), "dense"
    if solution in ("random-forest", "extra-trees"):
        args = dict(n_estimators=25, min_samples_leaf=p["leaf"], max_features="sqrt" if cls else 0.5,
                    random_state=seed, n_jobs=1)
        if solution == "random-forest":
            return (_en.RandomForestClassifier(**args) if cls else _en.RandomForestRegressor(**args)), "dense"
        return (_en.ExtraTreesClassifier(**args) if cls else _en.ExtraTreesRegressor(**args)), "dense"
    if solution == "hist-gradient-boosting":
        # a budget of trees: a multiclass model grows one per class and round
        rounds = max(10, p["trees"] // (n_classes if n_classes > 2 else 1))
        args = dict(learning_rate=p["lr"], max_leaf_nodes=p["leaves"], max_iter=rounds, min_samples_leaf=8,
                    early_stopping=False, random_state=seed)
        return (_en.HistGradientBoostingClassifier(**args) if cls
                else _en.HistGradientBoostingRegressor(**args)), "dense"
    if solution == "gradient-boosting":
        if cls and n_classes > 8:
            raise SkipEntry("gradient boosting fits one tree per class and round: too many classes here")
        rounds = max(10, p["trees"] // (n_classes if n_classes > 2 else 1))
        args = dict(max_depth=p["depth"], learning_rate=p["lr"], n_estimators=rounds, subsample=0.8,
                    random_state=seed)
        return (_en.GradientBoostingClassifier(**args) if cls else _en.GradientBoostingRegressor(**args)), "dense"
    if solution == "mlp":
        args = dict(hidden_layer_sizes=(32,), alpha=p["alpha"], max_iter=150, random_state=seed)
        return (_mlp.MLPClassifier(**args) if cls else _mlp.MLPRegressor(**args)), "scaled"
    if solution == "svm":
        return (_svm.SVC(C=p["C"], probability=True, random_state=seed) if cls else _svm.SVR(C=p["C"])), "scaled"
    raise ValueError(f"unknown solution {solution!r}")


def fit_one(solution, p, feats, seed, y, kind):
    """Predictions on the test rows: (probability matrix, classes) for ``kind`` 'class', else values."""
    if solution == "blend":
        outs = [fit_one(m, mp, feats, seed, y, kind) for m, mp in p["members"]]
        return combine(outs, kind)
    classes = np.unique(y) if kind == "class" else None
    est, which = model(solution, p, kind, seed, len(classes) if classes is not None else 0)
    M = dict(zip(("scaled", "lin", "dense"), matrices(feats)))[which]
    if kind == "class":
        if len(classes) == 1:
            return np.ones((len(test), 1)), classes
        est.fit(M[:n_tr], y)
        return est.predict_proba(M[n_tr:]), est.classes_
    t, back = target(y)
    return back(est.fit(M[:n_tr], t).predict(M[n_tr:]))


def target(y):
    """A value target standardised (in log space where the metric is: ``LOG_TARGET``), and the way back."""
    t = np.log1p(np.maximum(y, 0)) if LOG_TARGET else y
    mu, sd = float(np.mean(t)), float(np.std(t)) or 1.0

    def back(z):
        v = z * sd + mu
        return np.expm1(v) if LOG_TARGET else v
    return (t - mu) / sd, back


def combine(outs, kind):
    if kind != "class":
        return np.mean(outs, axis=0)
    classes = np.unique(np.concatenate([c for _, c in outs]))
    P = np.zeros((len(test), len(classes)))
    for proba, cls in outs:
        for j, c in enumerate(cls):
            P[:, np.searchsorted(classes, c)] += proba[:, j] / len(outs)
    return P, classes


def submission(item):
    sol, p, feats, seed = item["solution"], item["params"], item["features"], item["seed"]
    sub = pd.DataFrame({ID: test[ID]})
    if MODE == "proba":
        P, classes = fit_one(sol, p, feats, seed, train[TARGETS[0]].astype(str).to_numpy(), "class")
        classes = [str(c) for c in classes]
        for c in PRED:
            sub[c] = P[:, classes.index(str(c))] if str(c) in classes else 1e-3
        sub[PRED] = sub[PRED].clip(1e-4, 1).div(sub[PRED].sum(axis=1), axis=0)
    elif MODE == "score":
        for c in PRED:
            y = train[c].astype(int).to_numpy()
            P, classes = fit_one(sol, p, feats, seed, y, "class")
            sub[c] = P[:, -1] if len(classes) > 1 and classes[-1] == y.max() else 0.0
    elif MODE == "label":
        for c in PRED:
            P, classes = fit_one(sol, p, feats, seed, train[c].astype(str).to_numpy(), "class")
            labels = np.asarray(classes)[P.argmax(axis=1)]
            sub[c] = labels.astype(float).astype(int) if integral(train[c]) else labels
    else:
        for c in PRED:
            sub[c] = fit_one(sol, p, feats, seed, pd.to_numeric(train[c]).to_numpy(dtype=float), "value")
    return sub


RAN = {}  # (model, parameters, seed, matrix) -> the entry that fitted it
KEYS = set()  # the prediction keys of the submissions written


def signature(item):
    """What an entry fits: two entries with one signature write the same predictions (no need to run both)."""
    matrices(item["features"])
    return (item["solution"], _json.dumps(item["params"], sort_keys=True), item["seed"], _digest[item["features"]])


def run(item, log):
    start, cpu = _time.perf_counter(), _time.process_time()
    status, error = "ok", ""
    try:
        sig = signature(item)
        if sig in RAN:
            other = RAN[sig]
            same = "" if other["features"] == item["features"] else \
                f"the {item['features']} features equal the {other['features']} features here: "
            raise SkipEntry(f"{same}the same model ran on them as entry {other['index']}")
        RAN[sig] = item
        np.random.seed(item["seed"])
        submission(item).to_csv(item["out"], index=False)
        KEYS.add(prediction_key(pd.read_csv(item["out"], dtype={ID: str}), ID, PRED))
    except SkipEntry as exc:
        status, error = "skipped", str(exc)
    except Exception:
        status, error = "error", _tb.format_exc()[-2000:]
    log.write(_json.dumps({"index": item["index"], "status": status, "error": error,
                           "same_matrix_as": SAME_AS.get(item["features"]),
                           "wall_s": _time.perf_counter() - start, "cpu_s": _time.process_time() - cpu}) + "\n")
    log.flush()


with open("_population_result.jsonl", "w") as _log:
    for item in CONFIG["entries"]:
        run(item, _log)
    for item in CONFIG["reserve"]:  # more distinct solutions, only while the board has too few
        if len(KEYS) >= CONFIG["min_distinct"]:
            break
        run(item, _log)
print(f"population: {len(KEYS)} distinct submissions")
'''


def population_program() -> str:
    """The program that fits every entry of a plan (``_population.json``) in one interpreter."""
    return ('"""The population board\'s solutions, fitted in one interpreter: python _population.py."""\n'
            "SEED, STRATEGY_BAG = 0, False\n"
            + PRELUDE + KINDS + f"FEATURE_CODE = {_feature_code()!r}\n" + program_source() + ZOO)


@dataclass
class BoardEntry:
    """One entry of a population run: graded (a row of the ``leaderboard`` table), skipped, a ``duplicate`` of an
    earlier entry's predictions, or failed."""

    entry: Entry
    status: str  #: ok | skipped | duplicate | invalid | error | (the sandbox run's status: not reached)
    wall_s: float | None
    score: float | None = None
    error: str = ""
    cpu_s: float | None = None
    index: int = -1  #: its place in the plan (its submission's key in :attr:`PopulationRun.submissions`)
    same_matrix_as: str | None = None  #: the feature set whose matrix its own equals here, if any
    reserve: bool = False  #: run from :data:`RESERVE` (the plan's entries gave too few distinct submissions)

    def row(self, regression: bool) -> dict[str, Any]:
        return {"name": self.entry.name(regression), "family": self.entry.family, "score": self.score,
                "rng_seed": self.entry.seed, "source": "population", "wall_s": round(self.wall_s or 0.0, 4),
                "params": json.dumps(self.entry.shown_params(regression), sort_keys=True)}


@dataclass
class PopulationRun:
    entries: list[BoardEntry]  #: every entry of the plan, then the reserve entries that ran (in board order)
    wall_s: float
    regression: bool  #: a regression board (its linear entries are ridges, not logistic regressions)
    error: str = ""  #: why the program produced nothing (a sandbox failure), else ""
    #: entry index (in the plan) → its submission, for every entry that wrote one (duplicates included)
    submissions: dict[int, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def scored(self) -> list[BoardEntry]:
        """The board: every graded entry, one per distinct submission."""
        return [e for e in self.entries if e.score is not None]

    @property
    def duplicates(self) -> list[BoardEntry]:
        return [e for e in self.entries if e.status == "duplicate"]

    def board(self) -> list[dict[str, Any]]:
        """The leaderboard rows: every scored entry (distinct predictions)."""
        return [e.row(self.regression) for e in self.scored]

    def shortfall(self, least: int = MIN_ENTRIES) -> str:
        """Why the board is too small to be a yardstick (fewer than ``least`` distinct entries), else ""."""
        n = len(self.scored)
        if n >= least:
            return ""
        skipped = sum(e.status == "skipped" for e in self.entries)
        why = self.error or next(iter(self.summary()["failed"]), "")
        return (f"{n} distinct solutions scored of {len(self.entries)} run (needs {least}; "
                f"{len(self.duplicates)} copied another entry's predictions"
                + (f", {skipped} skipped" if skipped else "") + (f"; {why}" if why else "") + ")")

    def summary(self) -> dict[str, Any]:
        skipped = [e for e in self.entries if e.status == "skipped"]
        failed = [e for e in self.entries if e.status not in ("ok", "skipped", "duplicate") or
                  (e.status == "ok" and e.score is None)]
        label = {e.index: e.entry.label(self.regression) for e in self.entries}
        return {"version": BOARD_VERSION, "entries": len(self.entries), "scored": len(self.scored),
                "distinct": len(self.scored), "skipped": len(skipped), "duplicates": len(self.duplicates),
                "reserve": sum(e.reserve for e in self.entries),
                "equal_matrices": dict(sorted({e.entry.features: e.same_matrix_as for e in self.entries
                                               if e.same_matrix_as}.items())),
                "copies": [f"{label[e.index]}: {e.error}" for e in self.duplicates][:8],
                "failed": [f"{e.entry.label(self.regression)}: {e.error.strip().splitlines()[-1][:160]}"
                           if e.error.strip() else e.entry.label(self.regression) for e in failed][:8],
                "wall_s": round(self.wall_s, 3),
                "cpu_s": round(sum(e.cpu_s or 0.0 for e in self.entries), 3)}


def plan_of(entries: tuple[Entry, ...], reserve: tuple[Entry, ...], spec: GradeSpec,
            least: int = MIN_ENTRIES) -> dict[str, Any]:
    """``_population.json``: the entries, the reserve (numbered after them), the least distinct submissions the
    program goes into the reserve for, and the target transform the grading spec's metric asks for."""
    return {"entries": [e.plan(i) for i, e in enumerate(entries)],
            "reserve": [e.plan(len(entries) + i) for i, e in enumerate(reserve)],
            "min_distinct": least, "target_transform": target_transform(spec)}


def run_population(sandbox: SandboxBackend, public_dir: Path, spec: GradeSpec, answers: pd.DataFrame, *,
                   entries: tuple[Entry, ...] = POPULATION, reserve: tuple[Entry, ...] = RESERVE,
                   limits: Limits | None = None, meta: RunMeta | None = None) -> PopulationRun:
    """Every entry in one sandbox run over a copy of ``public_dir`` (only public files) -- then reserve entries
    while fewer than :data:`MIN_ENTRIES` distinct submissions are written -- and each distinct submission graded
    against ``answers`` (outside the sandbox); a copy of an earlier entry's predictions is a ``duplicate``."""
    config = plan_of(entries, reserve, spec)
    plan = config["entries"] + config["reserve"]
    by_index = dict(enumerate((*entries, *reserve)))
    with sandbox.open(public_dir, label="population") as ws:
        ws.write_file("_population.json", json.dumps(config).encode())
        res = ws.run_python(population_program(), filename="_population.py", limits=limits, meta=meta)
        try:
            lines = ws.read_file("_population_result.jsonl").decode().splitlines()
        except SandboxError:
            lines = []
        done = {r["index"]: r for r in (json.loads(x) for x in lines if x.strip())}
        out = [_entry(ws, spec, item, by_index[item["index"]], done.get(item["index"]), res)
               for item in plan if item["index"] < len(entries) or item["index"] in done]
    for be, _ in out:
        be.reserve = be.index >= len(entries)
    subs = {be.index: sub for be, sub in out if sub is not None}
    board = [be for be, _ in out]
    copies = first_of_each((i, prediction_key(sub, spec.id_column, spec.prediction_columns))
                           for i, sub in subs.items())
    label = {be.index: be.entry.label(spec.task_type in REGRESSION) for be in board}
    for be in board:
        if be.index in copies:
            be.status, be.error = "duplicate", f"same predictions as {label[copies[be.index]]}"
    scores = score_many(spec, answers, {str(i): sub for i, sub in subs.items() if i not in copies})
    for be in board:
        value = scores.get(str(be.index))
        if isinstance(value, InvalidSubmission):
            be.status, be.error = "invalid", str(value)
        elif value is not None:
            be.score = float(value)
    error = "" if done else f"the population program ran {res.status}: " + \
        ((res.stderr_tail or res.stdout_tail).strip().splitlines() or ["no output"])[-1][:200]
    return PopulationRun(board, res.wall_s, spec.task_type in REGRESSION, error, subs)


def _entry(ws: Any, spec: GradeSpec, item: dict[str, Any], entry: Entry, result: dict[str, Any] | None,
           res: Any) -> tuple[BoardEntry, pd.DataFrame | None]:
    """One entry as the program left it, with its submission (None when it wrote none)."""
    if result is None:
        tail = (res.stderr_tail or res.stdout_tail).strip().splitlines()
        return BoardEntry(entry, res.status, None, error=f"not reached: the run ended {res.status}"
                          + (f" ({tail[-1][:160]})" if tail else ""), index=item["index"]), None
    be = BoardEntry(entry, result["status"], result["wall_s"], error=result.get("error", ""),
                    cpu_s=result.get("cpu_s"), index=item["index"], same_matrix_as=result.get("same_matrix_as"))
    if be.status != "ok":
        return be, None
    try:
        return be, pd.read_csv(io.BytesIO(ws.read_file(item["out"])), dtype={spec.id_column: str})
    except (SandboxError, ValueError) as exc:
        be.status, be.error = "error", f"no readable submission: {exc}"
        return be, None


def versioned(thresholds: dict[str, Any]) -> dict[str, Any]:
    """A population board's thresholds with the version of the population that built it."""
    return {**thresholds, "version": BOARD_VERSION}

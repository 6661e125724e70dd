"""The population board: an environment's medals come from many independent solutions, not from the verifier's
own three scripts.

A real competition's board is thousands of people's different solutions; a synthetic environment's board is a
*population*: model families (random forests, extra trees, gradient boosting at several depths and rates,
k-nearest neighbours, linear models across regularisation strengths, naive Bayes, discriminant analysis, small
MLPs, support vector machines, decision trees, blends, a cross-validated model choice), feature choices and
seeds — :data:`POPULATION`, one :class:`Entry` each. The whole population is one program
(:func:`population_program`) run in the sandbox on the environment's public files like any submission, in one
interpreter (features built once per feature set, imports paid once), writing one submission per entry; each is
graded like any submission (:func:`engine.grading.score.score_many`).

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

from ..envs.layout import GradeSpec
from ..errors import InvalidSubmission, SandboxError
from ..grading.score import score_many
from ..sandbox import Limits, RunMeta, SandboxBackend
from .solutions import KINDS, MEDIA_FEATURES, PRELUDE, TABULAR_FEATURES, TEXT_FEATURES

#: the board's version: environments stored with another board (the 9-entry ladder board) are found by
#: ``doctor --deep`` and rebuilt by ``sandmle envs reboard``
BOARD_VERSION = "population-1"

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
    "cv-select": ("cv-select", "cv-select", "model selection"),
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
    # blends and a cross-validated model choice: what a strong competitor submits
    e += [Entry("blend", {"members": [["random-forest", {"leaf": 1}], ["linear", {"C": 1.0}]]}, "rich", 3),
          Entry("blend", {"members": [["extra-trees", {"leaf": 1}], ["svm", {"C": 3.0}], ["linear", {"C": 0.3}]]},
                "rich", 4),
          Entry("blend", {"members": [["linear", {"C": 3.0}], ["knn", {"k": 9}]]}, "plain"),
          Entry("cv-select", {"folds": 3}, "rich")]
    return e


#: the population every synthetic environment's board is built from (in board order: cheap first)
POPULATION: tuple[Entry, ...] = tuple(_grid())

#: the task types whose boards are regression boards
REGRESSION = ("regression", "multi_target_regression")

#: the least entries a population board may have (fewer valid ones: the environment is rejected)
MIN_ENTRIES = 40


def _feature_code() -> str:
    """The shared feature blocks (tabular, media, text) as one program text, run once per feature set."""
    return TABULAR_FEATURES + MEDIA_FEATURES + TEXT_FEATURES


ZOO = r'''
# ---------------------------------------------------------------- the population's models
import json as _json
import time as _time
import traceback as _tb

from scipy import sparse as _sp
from sklearn import (discriminant_analysis as _da, ensemble as _en, linear_model as _lm, naive_bayes as _nb,
                     neighbors as _nn, neural_network as _mlp, svm as _svm, tree as _tree)
from sklearn.decomposition import TruncatedSVD as _SVD
from sklearn.model_selection import KFold as _KFold
from sklearn.multiclass import OneVsRestClassifier as _OvR
from sklearn.preprocessing import StandardScaler as _Scaler

class SkipEntry(Exception):
    """An entry that does not apply to this environment (it is left off the board, saying why)."""


import sklearn as _sklearn

_sklearn.set_config(skip_parameter_validation=True)  # the parameters are ours: skip re-checking each fit
PLAN = _json.load(open("_population.json"))
LOG_TARGET = "log" in open("description.md", encoding="utf-8").read().lower() and MODE == "value"
SETS = {"numeric": dict(STRATEGY_TEXT="words", STRATEGY_RICH=False, STRATEGY_CHARS=False),
        "plain": dict(STRATEGY_TEXT="words", STRATEGY_RICH=False, STRATEGY_CHARS=False),
        "rich": dict(STRATEGY_TEXT="words+chars", STRATEGY_RICH=True, STRATEGY_CHARS=True)}
_cache = {}


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
    if solution == "cv-select":
        return cv_select(p, feats, seed, y, kind)
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
    """A value target standardised (in log space where the description speaks of logs), and the way back."""
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


CANDIDATES = (("linear", {"C": 1.0}), ("linear", {"C": 0.1}), ("knn", {"k": 9}), ("svm", {"C": 3.0}),
              ("naive-bayes", {}))


def cv_select(p, feats, seed, y, kind):
    """The candidate with the best cross-validated loss on the training rows (log loss, or squared error),
    refitted on all of them: the model choice a careful competitor makes."""
    folds = list(_KFold(p["folds"], shuffle=True, random_state=seed).split(np.arange(n_tr)))
    losses = []
    for solution, mp in CANDIDATES:
        try:
            losses.append(np.mean([_fold_loss(solution, mp, feats, seed, y, kind, tr, va) for tr, va in folds]))
        except Exception:
            losses.append(np.inf)
    return fit_one(*CANDIDATES[int(np.argmin(losses))], feats, seed, y, kind)


def _fold_loss(solution, mp, feats, seed, y, kind, tr, va):
    classes = np.unique(y) if kind == "class" else None
    est, which = model(solution, mp, kind, seed, len(classes) if classes is not None else 0)
    M = dict(zip(("scaled", "lin", "dense"), matrices(feats)))[which][:n_tr]
    if kind == "class":
        est.fit(M[tr], y[tr])
        P = np.clip(est.predict_proba(M[va]), 1e-6, 1)
        col = {c: j for j, c in enumerate(est.classes_)}
        return float(np.mean([-np.log(P[i, col[v]]) if v in col else 14.0 for i, v in enumerate(y[va])]))
    t, _ = target(y)
    return float(np.mean((est.fit(M[tr], t[tr]).predict(M[va]) - t[va]) ** 2))


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


with open("_population_result.jsonl", "w") as _log:
    for item in PLAN:
        start, cpu = _time.perf_counter(), _time.process_time()
        status, error = "ok", ""
        try:
            np.random.seed(item["seed"])
            submission(item).to_csv(item["out"], index=False)
        except SkipEntry as exc:
            status, error = "skipped", str(exc)
        except Exception:
            status, error = "error", _tb.format_exc()[-2000:]
        _log.write(_json.dumps({"index": item["index"], "status": status, "error": error,
                                "wall_s": _time.perf_counter() - start,
                                "cpu_s": _time.process_time() - cpu}) + "\n")
        _log.flush()
print(f"population: {len(PLAN)} entries")
'''


def population_program() -> str:
    """The program that fits every entry of a plan (``_population.json``) in one interpreter."""
    return ('"""The population board\'s solutions, fitted in one interpreter: python _population.py."""\n'
            "SEED, STRATEGY_BAG = 0, False\n"
            + PRELUDE + KINDS + f"FEATURE_CODE = {_feature_code()!r}\n" + ZOO)


@dataclass
class BoardEntry:
    """One graded entry of a population board (a row of the ``leaderboard`` table)."""

    entry: Entry
    status: str
    wall_s: float | None
    score: float | None = None
    error: str = ""
    cpu_s: float | None = None

    def row(self, regression: bool) -> dict[str, Any]:
        return {"name": self.entry.name(regression), "family": self.entry.family, "score": self.score,
                "rng_seed": self.entry.seed, "source": "population", "wall_s": round(self.wall_s or 0.0, 4),
                "params": json.dumps(self.entry.shown_params(regression), sort_keys=True)}


@dataclass
class PopulationRun:
    entries: list[BoardEntry]
    wall_s: float
    regression: bool  #: a regression board (its linear entries are ridges, not logistic regressions)
    error: str = ""  #: why the program produced nothing (a sandbox failure), else ""
    #: entry index (in the plan) → its submission, for every entry that wrote one
    submissions: dict[int, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def scored(self) -> list[BoardEntry]:
        return [e for e in self.entries if e.score is not None]

    def board(self) -> list[dict[str, Any]]:
        """The leaderboard rows: every scored entry."""
        return [e.row(self.regression) for e in self.scored]

    def summary(self) -> dict[str, Any]:
        skipped = [e for e in self.entries if e.status == "skipped"]
        failed = [e for e in self.entries if e.status not in ("ok", "skipped") or
                  (e.status == "ok" and e.score is None)]
        return {"version": BOARD_VERSION, "entries": len(self.entries), "scored": len(self.scored),
                "skipped": len(skipped), "failed": [f"{e.entry.label(self.regression)}: "
                                                    f"{e.error.strip().splitlines()[-1][:160]}" if e.error.strip()
                                                    else e.entry.label(self.regression) for e in failed][:8],
                "wall_s": round(self.wall_s, 3),
                "cpu_s": round(sum(e.cpu_s or 0.0 for e in self.entries), 3)}


def run_population(sandbox: SandboxBackend, public_dir: Path, spec: GradeSpec, answers: pd.DataFrame, *,
                   entries: tuple[Entry, ...] = POPULATION, limits: Limits | None = None,
                   meta: RunMeta | None = None) -> PopulationRun:
    """Every entry in one sandbox run over a copy of ``public_dir`` (only public files), then each submission
    graded against ``answers`` (outside the sandbox)."""
    plan = [e.plan(i) for i, e in enumerate(entries)]
    with sandbox.open(public_dir, label="population") as ws:
        ws.write_file("_population.json", json.dumps(plan).encode())
        res = ws.run_python(population_program(), filename="_population.py", limits=limits, meta=meta)
        try:
            lines = ws.read_file("_population_result.jsonl").decode().splitlines()
        except SandboxError:
            lines = []
        done = {r["index"]: r for r in (json.loads(x) for x in lines if x.strip())}
        out: list[BoardEntry] = []
        subs: dict[str, pd.DataFrame] = {}
        for item, entry in zip(plan, entries):
            r = done.get(item["index"])
            if r is None:
                tail = (res.stderr_tail or res.stdout_tail).strip().splitlines()
                out.append(BoardEntry(entry, res.status, None, error=f"not reached: the run ended {res.status}"
                                      + (f" ({tail[-1][:160]})" if tail else "")))
                continue
            be = BoardEntry(entry, r["status"], r["wall_s"], error=r.get("error", ""), cpu_s=r.get("cpu_s"))
            if be.status == "ok":
                try:
                    subs[str(item["index"])] = pd.read_csv(io.BytesIO(ws.read_file(item["out"])),
                                                           dtype={spec.id_column: str})
                except (SandboxError, ValueError) as exc:
                    be.status, be.error = "error", f"no readable submission: {exc}"
            out.append(be)
    scores = score_many(spec, answers, subs)
    for item, be in zip(plan, out):
        value = scores.get(str(item["index"]))
        if isinstance(value, InvalidSubmission):
            be.status, be.error = "invalid", str(value)
        elif value is not None:
            be.score = float(value)
    error = "" if done else f"the population program ran {res.status}: " + \
        ((res.stderr_tail or res.stdout_tail).strip().splitlines() or ["no output"])[-1][:200]
    return PopulationRun(out, res.wall_s, spec.task_type in REGRESSION, error,
                         {int(k): v for k, v in subs.items()})

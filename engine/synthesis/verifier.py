"""The Verifier: run the reference ladder in the sandbox (a workspace holding only ``public/``), score it outside,
and accept an environment only if it is learnable, discriminative, not saturated, its grader survives fuzzing,
no leakage probe fires and the exploit audit (:mod:`engine.grading.audit`: can the answers be read off a public
file?) finds nothing that reaches the lowest rewarded tier (bronze) or beats the strong reference.

The ladder gates; it does not set the medals. The leaderboard is a population of independent solutions
(:mod:`.population`) run in the sandbox like any submission, one entry per distinct submission (copies collapse;
fewer than :data:`~.population.MIN_ENTRIES` distinct ones: rejected); its thresholds follow MLE-bench's rule, and
an environment whose gold, silver and bronze are not three different scores, or where a constant prediction
reaches a tier, is rejected. (``board="ladder"`` builds the 9-entry board environments had before -- the
ladder's runs and blends of the strong one -- for ``sandmle bench synth``'s side-by-side cost only.)"""

from __future__ import annotations

import io
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..envs.layout import GradeSpec
from ..errors import InvalidSubmission, SandboxError
from ..grading.audit import audit
from ..grading.audit.lookup import Lookup, run_lookup
from ..grading.bootstrap import N_BOOT, paired_gap_interval
from ..grading.evaluator import using
from ..grading.score import (answers_matrix, metric_of, prediction_matrix, read_frame, score_many, score_submission,
                             screening_spec, validate)
from ..grading.thresholds import board_rank, thresholds
from ..sandbox import Limits, RunMeta, SandboxBackend
from .fidelity import Profile, check, measure
from .grader import better
from .population import MIN_ENTRIES, POPULATION, Entry, run_population, versioned
from .solutions import LADDER, RUNNER, render_solution, target_transform



@dataclass
class LadderRun:
    name: str
    seed: int
    status: str
    wall_s: float
    score: float | None = None
    error: str = ""


@dataclass
class Verdict:
    ok: bool
    reason: str = ""
    #: which role can fix a failure: engineer (data), grader, designer, or "" (reject)
    send_to: str = ""
    #: for the engineer: multiply the signal strength by this
    signal_factor: float = 1.0
    report: dict[str, Any] = field(default_factory=dict)
    leaderboard: list[dict[str, Any]] = field(default_factory=list)
    thresholds: dict[str, Any] | None = None
    #: the public files the exploit audit read → their hashes (what changes after it is audited again)
    audited: dict[str, str] = field(default_factory=dict)


def run_ladder(sandbox: SandboxBackend, public_dir: Path, spec: GradeSpec, seeds: tuple[int, ...] = (0, 1), *,
               limits: Limits | None = None, meta: RunMeta | None = None,
               ladder: dict | None = None) -> tuple[list[LadderRun], dict[tuple[str, int], pd.DataFrame], float]:
    """Every ladder solution × RNG seed in one sandbox run over a copy of ``public_dir`` (imports paid once); the
    target transform is the grading spec's (its metric's), not the description's words."""
    ladder = ladder or LADDER
    plan: list[dict[str, Any]] = []
    with sandbox.open(public_dir, label="ladder") as ws:
        for name, strategy in ladder.items():
            ws.write_file(f"_ref_{name}.py", render_solution(strategy, target_transform(spec)).encode())
            for s in seeds:
                plan.append({"name": name, "seed": s, "file": f"_ref_{name}.py", "out": f"_sub_{name}_{s}.csv"})
        ws.write_file("_ladder.json", json.dumps(plan).encode())
        res = ws.run_python(RUNNER, filename="_ladder.py", limits=limits, meta=meta)
        runs: list[LadderRun] = []
        subs: dict[tuple[str, int], pd.DataFrame] = {}
        try:
            results = json.loads(ws.read_file("_ladder_result.json"))
        except (SandboxError, ValueError):
            tail = (res.stderr_tail or res.stdout_tail).strip().splitlines()
            err = f"ladder run {res.status}: {tail[-1] if tail else 'no output'}"
            return [LadderRun(p["name"], p["seed"], res.status, res.wall_s, None, err) for p in plan], {}, res.wall_s
        for r in results:
            run = LadderRun(r["name"], r["seed"], r["status"], r["wall_s"], None, r.get("error", ""))
            if run.status == "ok":
                try:
                    subs[(run.name, run.seed)] = pd.read_csv(io.BytesIO(ws.read_file(r["out"])),
                                                             dtype={spec.id_column: str})
                except (SandboxError, ValueError) as exc:
                    run.status, run.error = "error", f"no readable submission: {exc}"
            runs.append(run)
    return runs, subs, res.wall_s


def blend(spec: GradeSpec, strong: pd.DataFrame, trivial: pd.DataFrame, alpha: float,
          rng: np.random.Generator) -> pd.DataFrame:
    """A leaderboard variant weaker than the strong submission: its predictions mixed with the same predictions
    shuffled across rows (signal diluted, format and value range kept; a constant mix would leave rank metrics
    such as ROC-AUC unchanged)."""
    out = strong.copy()
    perm = rng.permutation(len(out))
    if metric_of(spec).prediction == "label":
        swap = rng.random(len(out)) > alpha
        for c in spec.prediction_columns:
            vals = out[c].to_numpy()
            out[c] = np.where(swap, vals[perm], vals)
    else:
        for c in spec.prediction_columns:
            v = pd.to_numeric(strong[c]).to_numpy(dtype=float)
            out[c] = alpha * v + (1 - alpha) * v[perm]
    return out


def paired_bootstrap_interval(spec: GradeSpec, answers: pd.DataFrame, best: pd.DataFrame, trivial: pd.DataFrame,
                              rng: np.random.Generator, n_boot: int = N_BOOT,
                              q: float = 0.025) -> tuple[float, float, int]:
    """The (q, 1 − q) quantiles of (best − constant) over ``n_boot`` paired bootstrap resamples of the test rows
    (vectorised: :mod:`engine.grading.bootstrap`), and how many the metric was defined on: a lower bound > 0 means
    the lead holds beyond the test set's sampling noise (a fluke on random labels does not). An environment graded
    by its own evaluator is resampled with its proxy metric (a program cannot score resampled ids)."""
    spec = screening_spec(spec)
    Y = answers_matrix(spec, answers)
    Pb = prediction_matrix(spec, validate(spec, answers, best))
    Pt = prediction_matrix(spec, validate(spec, answers, trivial))
    return paired_gap_interval(spec.metric, spec.lower_is_better, Y, Pb, Pt, rng, n_boot, q)


def fuzz_cases(spec: GradeSpec, sub: pd.DataFrame, rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    idc, pc = spec.id_column, spec.prediction_columns
    cases: dict[str, pd.DataFrame] = {
        "missing_row": sub.iloc[:-1],
        "extra_row": pd.concat([sub, sub.iloc[:1]], ignore_index=True),
        "unknown_id": sub.assign(**{idc: ["zz-unknown"] + list(sub[idc].iloc[1:])}),
        "shuffled_ids": sub.assign(**{idc: rng.permutation(sub[idc].to_numpy())}),
        "renamed_column": sub.rename(columns={pc[0]: pc[0] + "_pred"}),
        "no_id_column": sub.drop(columns=[idc]),
        "header_only": sub.iloc[:0],
        "label_column_copied": sub.assign(**{(spec.target_columns[0] if spec.target_columns[0] not in pc
                                              else spec.target_columns[0] + "_true"): sub[pc[0]]}),
    }
    nan = sub.copy()
    nan[pc[0]] = nan[pc[0]].astype(object)
    nan.loc[nan.index[0], pc[0]] = np.nan
    cases["nan_value"] = nan
    inf = sub.copy()
    inf[pc[0]] = inf[pc[0]].astype(object)
    inf.loc[inf.index[0], pc[0]] = np.inf
    cases["inf_value"] = inf
    cases["wrong_dtype"] = sub.assign(**{pc[0]: ["abc"] * len(sub)})
    return cases


def fuzz(spec: GradeSpec, answers: pd.DataFrame, sub: pd.DataFrame, base: float,
         rng: np.random.Generator, tolerance: float = 1e-12) -> tuple[dict[str, str], list[str]]:
    """Each malformed variant must be invalid or score no better (beyond ``tolerance``, the seed-to-seed noise,
    for a variant such as shuffled ids that stays valid); a crash is a grader bug."""
    outcome, problems = {}, []
    cases = fuzz_cases(spec, sub, rng)
    results: dict[str, float | Exception] = dict(score_many(spec, answers, cases)) if spec.external else {}
    for name, case in cases.items():
        if not spec.external:
            try:
                results[name] = score_submission(spec, answers, case)
            except Exception as exc:  # noqa: BLE001 - a crash is exactly what fuzzing looks for
                results[name] = exc
        s = results[name]
        if isinstance(s, InvalidSubmission):
            outcome[name] = "invalid"
            continue
        if isinstance(s, Exception):
            outcome[name] = f"crash: {type(s).__name__}"
            problems.append(f"grader crashed on {name}: {type(s).__name__}: {s}")
            continue
        outcome[name] = f"score {s:.4g}"
        if better(spec, s, base) and abs(s - base) > tolerance:
            problems.append(f"{name} scored better ({s:.4g}) than the submission it came from ({base:.4g})")
    return outcome, problems


def _numeric_id(ids: pd.Series) -> pd.Series | None:
    digits = ids.astype(str).str.extract(r"(\d+)$")[0]
    if digits.isna().any():
        return None
    return pd.to_numeric(digits)


def leakage(spec: GradeSpec, pub: Path, answers: pd.DataFrame, media_col: str | None) -> tuple[dict, list[str]]:
    """Probes: id ↔ label correlation, train/test duplicate rows, a label recoverable from one column."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # heavy: only for this check

    train = read_frame(pub / "train.csv", spec.id_column)
    test = read_frame(pub / "test.csv", spec.id_column)
    report: dict[str, Any] = {}
    problems = []
    targets = [t for t in spec.target_columns if t in train.columns]
    regression = spec.task_type in ("regression", "multi_target_regression")
    # the id only in the sample submission: training rows carry none, test rows follow the answers' order
    num_id = _numeric_id(train[spec.id_column]) if spec.id_column in train.columns else None
    test_ids = test[spec.id_column] if spec.id_column in test.columns else answers[spec.id_column]
    worst = 0.0
    if num_id is not None and num_id.nunique() > 10:
        for t in targets:
            y = train[t]
            indicators = [pd.to_numeric(y, errors="coerce")] if regression or spec.task_type == "multilabel" else \
                [(y.astype(str) == c).astype(float) for c in y.astype(str).unique()]
            for ind in indicators:
                if ind.nunique() > 1:
                    rho = abs(pd.Series(num_id.rank().to_numpy()).corr(pd.Series(ind.rank().to_numpy())))
                    worst = max(worst, float(np.nan_to_num(rho)))
        if worst > 0.45:
            problems.append(f"the id predicts the label (|Spearman| {worst:.2f})")
    report["id_label_corr"] = round(worst, 4)
    feats = [c for c in test.columns if c not in (spec.id_column, media_col)]
    # duplicates only mean something when rows are distinguishable (not a few low-cardinality columns)
    if feats and len(train[feats].drop_duplicates()) >= 0.8 * len(train):
        key_tr = set(pd.util.hash_pandas_object(train[feats].astype(str), index=False))
        key_te = pd.util.hash_pandas_object(test[feats].astype(str), index=False)
        dup = float(key_te.isin(key_tr).mean())
        report["train_test_duplicates"] = round(dup, 4)
        if dup > 0.05:
            problems.append(f"{dup:.0%} of test rows duplicate a training row")
    best_rule = 0.0
    ans = answers.set_index(spec.id_column).loc[test_ids].reset_index()
    for c in feats:
        col = train[c]
        if col.dtype == object or pd.api.types.is_string_dtype(col):
            if col.astype(str).str.count(" ").mean() >= 3:
                continue  # free text: not a single-column rule
            # a missing label is a label of its own (pandas 3 keeps NaN through astype(str): unsortable with text)
            tr_text, te_text = col.fillna("<missing>").astype(str), test[c].fillna("<missing>").astype(str)
            codes = {v: i for i, v in enumerate(sorted(set(tr_text) | set(te_text)))}
            xtr = tr_text.map(codes).to_numpy(dtype=float)[:, None]
            xte = te_text.map(codes).to_numpy(dtype=float)[:, None]
        else:
            xtr = pd.to_numeric(col, errors="coerce").fillna(-1e9).to_numpy()[:, None]
            xte = pd.to_numeric(test[c], errors="coerce").fillna(-1e9).to_numpy()[:, None]
        for t in targets:
            if regression:
                ytr = pd.to_numeric(train[t]).to_numpy()
                yte = pd.to_numeric(ans[t]).to_numpy() if t in ans else None
                if yte is None:
                    continue
                pred = DecisionTreeRegressor(max_depth=3).fit(xtr, ytr).predict(xte)
                r2 = 1 - np.mean((pred - yte) ** 2) / max(np.var(yte), 1e-12)
                best_rule = max(best_rule, float(r2))
            else:
                ytr = train[t].astype(str).to_numpy()
                if t in ans:
                    yte = ans[t].astype(str).to_numpy()
                elif spec.metric == "log_loss":
                    yte = np.asarray(spec.prediction_columns, dtype=object)[ans[spec.prediction_columns].to_numpy().argmax(axis=1)]
                else:
                    continue
                pred = DecisionTreeClassifier(max_depth=3).fit(xtr, ytr).predict(xte)
                classes = np.unique(yte)
                bal = np.mean([np.mean(pred[yte == k] == k) for k in classes])
                best_rule = max(best_rule, float(bal))
    report["best_single_column_rule"] = round(best_rule, 4)
    if best_rule >= 0.97:
        problems.append(f"one column recovers the label by a trivial rule (score {best_rule:.3f})")
    return report, problems


def ladder_board(spec: GradeSpec, answers: pd.DataFrame, scored: list[tuple[LadderRun, float]], strong: pd.DataFrame,
                 trivial: pd.DataFrame, seed: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """The 9-entry board environments had before population boards (every reference run, and blends of the strong
    one with the constant): kept for ``bench synth``'s side-by-side cost, never stored by synthesis."""
    board: list[dict[str, Any]] = [{"name": f"reference-{r.name}", "score": score, "rng_seed": r.seed,
                                    "source": "reference", "wall_s": round(r.wall_s, 4)} for r, score in scored]
    variants = {alpha: blend(spec, strong, trivial, alpha, rng) for alpha in (0.25, 0.5, 0.75)}
    scores = score_many(spec, answers, {str(alpha): df for alpha, df in variants.items()})
    for alpha in variants:
        v = scores[str(alpha)]
        if isinstance(v, InvalidSubmission):
            continue
        board.append({"name": f"variant-strong{int(alpha * 100)}", "score": float(v), "rng_seed": seed,
                      "source": "variant", "wall_s": None})
    return board


def verify(sandbox: SandboxBackend, env_dir: Path, spec: GradeSpec, *, seeds: tuple[int, ...] = (0, 1),
           media_col: str | None = None, limits: Limits | None = None, meta: RunMeta | None = None,
           rng: np.random.Generator | None = None, expected: Profile | None = None,
           exploit_audit: bool = True, board: str = "population",
           population: tuple[Entry, ...] = POPULATION) -> Verdict:
    """Accept or reject one environment; ``expected`` (the seed's profile) is checked first: an environment that
    loses what makes its seed that task (classes, feature kind and count, id and submission format) is rejected.
    (``exploit_audit=False`` only to measure what the audit costs: ``sandmle bench synth``.) An environment graded by
    its own evaluator is graded by it here too, in ``sandbox``: the ladder, the leaderboard, fuzzing and the audit's
    confirmations. ``board``: "population" (the leaderboard every environment is stored with) or "ladder" (the old
    9-entry board, for measuring cost only)."""
    if board not in ("population", "ladder"):
        raise ValueError(f"unknown board {board!r}; expected population or ladder")
    with using(sandbox):
        return _verify(sandbox, env_dir, spec, seeds=seeds, media_col=media_col, limits=limits, meta=meta,
                       rng=rng or np.random.default_rng(0), expected=expected, exploit_audit=exploit_audit,
                       board=board, population=population)


def _verify(sandbox: SandboxBackend, env_dir: Path, spec: GradeSpec, *, seeds: tuple[int, ...],
            media_col: str | None, limits: Limits | None, meta: RunMeta | None, rng: np.random.Generator,
            expected: Profile | None, exploit_audit: bool, board: str,
            population: tuple[Entry, ...]) -> Verdict:
    if expected is not None:
        measured = measure(env_dir, spec)
        problems = check(expected, measured)
        if problems:
            return Verdict(False, "fidelity: " + "; ".join(problems), "",
                           report={"fidelity": {"seed": expected.to_dict(), "env": measured.to_dict()}})
    answers = read_frame(env_dir / "private" / "answers.csv", spec.id_column)
    runs, subs, wall = run_ladder(sandbox, env_dir / "public", spec, seeds, limits=limits, meta=meta)
    report: dict[str, Any] = {"ladder_wall_s": round(wall, 3)}
    failed, perfect = _score_ladder(spec, answers, runs, subs)
    report["ladder"] = [asdict(r) for r in runs]
    if failed:
        f = failed[0]
        return Verdict(False, f"reference solution {f.name} (seed {f.seed}) failed: {f.status}: "
                              f"{f.error.strip().splitlines()[-1] if f.error.strip() else ''}", "", report=report)
    by: dict[str, list[float]] = {}
    scored = [(r, r.score) for r in runs if r.score is not None]  # every run, once none failed
    for r, score in scored:
        by.setdefault(r.name, []).append(score)
    means = {k: float(np.mean(v)) for k, v in by.items()}
    noise = max(float(np.std(v)) for v in by.values())
    m = metric_of(spec)
    sign = -1.0 if spec.lower_is_better else 1.0
    best_name = max(("simple", "strong"), key=lambda k: sign * means[k])
    gap = sign * (means[best_name] - means["trivial"])
    scale = 1.0 if m.bounded else max(abs(means["trivial"]), 1e-9)
    min_gap = max(3 * noise, 0.03 * scale)
    started = time.perf_counter()
    lower, upper, resamples = paired_bootstrap_interval(spec, answers, subs[(best_name, seeds[0])],
                                                        subs[("trivial", seeds[0])], rng)
    report.update({"means": means, "noise": noise, "gap": gap, "min_gap": min_gap, "gap_lower_q": lower,
                   "gap_upper_q": upper, "bootstrap_metric": screening_spec(spec).metric,
                   "bootstrap_resamples": resamples, "bootstrap_s": round(time.perf_counter() - started, 4)})
    if gap <= min_gap or lower <= 0:
        return Verdict(False, f"not learnable: the best reference ({best_name} {means[best_name]:.4g}) beats the "
                              f"constant ({means['trivial']:.4g}) by {gap:.4g} (needs > {min_gap:.4g} and a bootstrap lower "
                              f"bound > 0, got {lower:.3g})", "engineer", 1.6, report)
    best_score = max(by["strong"] + by["simple"], key=lambda s: sign * s)
    saturated = _saturated(spec, best_score, means["trivial"], perfect)
    report["saturated"] = bool(saturated)
    if saturated:
        best = "what the answers themselves score" if spec.external else "the metric's best"
        return Verdict(False, f"saturated: a reference scores {best_score:.4g}, (nearly) {best}", "engineer", 0.6,
                       report)
    strong0 = subs[("strong", seeds[0])]
    if board == "ladder":
        entries = ladder_board(spec, answers, scored, strong0, subs[("trivial", seeds[0])], seeds[0], rng)
    else:
        pop = run_population(sandbox, env_dir / "public", spec, answers, entries=population, limits=limits,
                             meta=meta)
        report["population"] = pop.summary()
        short = pop.shortfall(min(MIN_ENTRIES, len(population)))
        if short:
            return Verdict(False, f"population board: {short}", "engineer", 1.0, report)
        entries = pop.board()
    th = thresholds([e["score"] for e in entries], spec.lower_is_better, board)
    th_dict = versioned(th.to_dict()) if board == "population" else th.to_dict()
    const_medals = [th.medal(s) for s in by["trivial"]]
    report["thresholds"] = th_dict
    if board == "population":
        report["strong_rank"] = board_rank(means["strong"], [e["score"] for e in entries], spec.lower_is_better)
        if not th.distinct():
            return Verdict(False, f"population board: gold {th.gold:.4g}, silver {th.silver:.4g} and bronze "
                                  f"{th.bronze:.4g} are not three different scores", "engineer", 1.0, report)
    if any(const_medals):
        return Verdict(False, f"a constant prediction reaches {const_medals[0]}", "engineer", 1.6, report)
    outcome, problems = fuzz(spec, answers, strong0, by["strong"][0], rng, tolerance=max(noise, 1e-12))
    report["fuzz"] = outcome
    if problems:
        return Verdict(False, "grader fuzzing: " + problems[0], "grader", report=report)
    leak, leak_problems = leakage(screening_spec(spec), env_dir / "public", answers, media_col)
    report["leakage"] = leak
    report["leaks_fired"] = leak_problems
    if leak_problems:
        return Verdict(False, "leakage: " + leak_problems[0], "engineer", 1.0, report)
    accepted = Verdict(True, "", report=report, leaderboard=entries, thresholds=th_dict)
    if not exploit_audit:
        return accepted
    screen = float(np.mean([score_submission(screening_spec(spec), answers, subs[("strong", s)]) for s in seeds])) \
        if spec.external else None
    if screen is not None:
        report["screen_strong"] = screen  # the strong reference by the proxy metric: the audit's screening bar
    return _audited(env_dir, spec, accepted, means["strong"], screen, lookup=run_lookup(env_dir, spec, sandbox,
                                                                                        meta=meta))


def _score_ladder(spec: GradeSpec, answers: pd.DataFrame, runs: list[LadderRun],
                  subs: dict[tuple[str, int], pd.DataFrame]) -> tuple[list[LadderRun], float | None]:
    """Score every ladder submission (an environment's own evaluator: all in one run, with the answers themselves
    as a submission, whose score is that grader's best); the runs that failed, and that best (None: a metric's)."""
    failed = [r for r in runs if r.status != "ok"]
    batch = {f"{r.name}-{r.seed}": subs[(r.name, r.seed)] for r in runs if (r.name, r.seed) in subs}
    if spec.external:
        batch["_perfect"] = answers[[spec.id_column, *spec.prediction_columns]]
    scores = score_many(spec, answers, batch)
    for r in runs:
        if (r.name, r.seed) in subs:
            value = scores[f"{r.name}-{r.seed}"]
            if isinstance(value, InvalidSubmission):
                r.status, r.error = "invalid", str(value)
                failed.append(r)
            else:
                r.score = value
    perfect = scores.get("_perfect")
    return failed, perfect if isinstance(perfect, float) else None


def _saturated(spec: GradeSpec, best_score: float, trivial: float, perfect: float | None) -> bool:
    """A reference at (nearly) the metric's best, or -- graded by its own evaluator, whose scale is unknown -- within
    1% of the way from the constant to what the answers themselves score; lower-is-better, under 2% of the constant."""
    m = metric_of(spec)
    return (m.best is not None and abs(best_score - m.best) < 1e-9) or \
        (m.bounded and m.best is not None and abs(best_score - m.best) < 0.01) or \
        (perfect is not None and abs(best_score - perfect) <= 0.01 * abs(perfect - trivial)) or \
        (spec.lower_is_better and best_score < 0.02 * abs(trivial))


def _audited(env_dir: Path, spec: GradeSpec, verdict: Verdict, strong: float,
             screen_strong: float | None = None, lookup: Lookup | None = None) -> Verdict:
    """The last check: can the answers be read off a public file (the exploit audit, against the board's lowest
    rewarded tier -- the bronze threshold -- and the strong reference)? ``verdict`` (an acceptance) is returned with
    what it read, or a rejection. (``screen_strong``: the strong reference's proxy score, for an environment graded
    by its own evaluator.)"""
    bronze = (verdict.thresholds or {}).get("bronze")
    exploits = audit(env_dir, spec, medal=bronze, strong=strong, screen_strong=screen_strong, lookup=lookup)
    verdict.report["audit"] = exploits.to_dict()
    if exploits.findings:
        return Verdict(False, "exploit audit: " + exploits.reason(), "engineer", 1.0, verdict.report)
    verdict.audited = exploits.files
    return verdict

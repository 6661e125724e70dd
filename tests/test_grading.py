"""Grading: medal thresholds by board size, HumanRank, grade reports, every invalid-submission case, rewards."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from engine.envs.layout import EnvSpec
from engine.grading import GradeReport, board_rank, compute_reward, grade, medal_ranks, thresholds
from engine.grading.rewards import Scheme, Term, valid_submission, well_formed_share
from store.trajectories import Turn

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"


# ------------------------------------------------------------------ thresholds
@pytest.mark.parametrize("n, ranks, median", [
    (5, (1, 1, 2), 3.0),            # 1-99: gold max(1, int(0.1N)), silver int(0.2N), bronze int(0.4N)
    (150, (10, 30, 60), 75.5),      # 100-249: gold 10
    (500, (11, 50, 100), 250.5),    # 250-999: gold 10 + int(0.002N), silver 50, bronze 100
    (2000, (14, 100, 200), 1000.5),  # >=1000: silver int(0.05N), bronze int(0.1N)
])
def test_thresholds_by_board_size_both_directions(n, ranks, median):
    assert medal_ranks(n) == ranks
    scores = list(range(1, n + 1))
    rng = np.random.default_rng(n)
    shuffled = [float(s) for s in rng.permutation(scores)]
    hi = thresholds(shuffled, lower_is_better=False)  # k-th best of 1..N (higher better) is N + 1 - k
    assert (hi.gold, hi.silver, hi.bronze) == tuple(float(n + 1 - k) for k in ranks)
    assert hi.median == median
    lo = thresholds(shuffled, lower_is_better=True)  # k-th best is k
    assert (lo.gold, lo.silver, lo.bronze) == tuple(float(k) for k in ranks)
    assert lo.median == median


def test_medals_are_exclusive_and_inclusive_at_the_threshold():
    t = thresholds([float(s) for s in range(1, 151)], lower_is_better=False)
    assert t.medal(141.0) == "gold" and t.medal(150.0) == "gold"
    assert t.medal(140.9) == "silver" and t.medal(121.0) == "silver"
    assert t.medal(120.0) == "bronze" and t.medal(91.0) == "bronze"
    assert t.medal(90.9) is None
    assert t.above_median(75.6) and not t.above_median(75.5)  # strict
    lo = thresholds([float(s) for s in range(1, 151)], lower_is_better=True)
    assert lo.medal(10.0) == "gold" and lo.medal(10.5) == "silver" and lo.medal(60.0) == "bronze"
    assert lo.medal(60.01) is None
    assert lo.above_median(75.4) and not lo.above_median(75.5)


def test_thresholds_reject_an_empty_board():
    with pytest.raises(ValueError):
        thresholds([], lower_is_better=False)


def test_board_rank_examples():
    board = [0.9, 0.8, 0.8, 0.7]
    assert board_rank(0.95, board, False) == 1.0   # nobody better: position 1
    assert board_rank(0.8, board, False) == 0.75   # one entry strictly better; ties do not count
    assert board_rank(0.75, board, False) == 0.25
    assert board_rank(0.1, board, False) == 0.0
    assert board_rank(2.5, [1.0, 2.0, 3.0, 4.0], True) == 0.5
    assert board_rank(1.0, [1.0, 2.0, 3.0, 4.0], True) == 1.0
    with pytest.raises(ValueError):
        board_rank(1.0, [], True)


# ------------------------------------------------------------------ grade reports
@pytest.fixture
def env() -> EnvSpec:
    return EnvSpec.from_dir(TINY)


def _answers() -> pd.DataFrame:
    return pd.read_csv(TINY / "private" / "answers.csv", dtype={"id": str})


def _write(tmp_path, df: pd.DataFrame | str, name="submission.csv"):
    path = tmp_path / name
    if isinstance(df, str):
        path.write_text(df)
    else:
        df.to_csv(path, index=False)
    return path


def test_perfect_submission_wins_gold_with_every_field(env, tmp_path):
    rep = grade(env, _write(tmp_path, _answers()))
    assert rep.valid_submission and rep.submission_exists and rep.error is None
    assert rep.score == 1.0
    assert rep.gold_medal and rep.any_medal and not rep.silver_medal and not rep.bronze_medal
    assert rep.above_median and rep.rank == 1.0
    assert rep.gold_threshold == 0.875 and rep.silver_threshold == 0.85 and rep.bronze_threshold == 0.8
    assert rep.median_threshold == pytest.approx(0.765) and rep.is_lower_better is False
    d = rep.to_dict()
    for key in ("score", "valid_submission", "submission_exists", "gold_medal", "silver_medal", "bronze_medal",
                "any_medal", "above_median", "gold_threshold", "silver_threshold", "bronze_threshold",
                "median_threshold", "is_lower_better", "error"):
        assert key in d
    assert GradeReport.from_dict(json.loads(json.dumps(d))) == rep


def test_rows_in_another_order_grade_the_same(env, tmp_path):
    ans = _answers()
    rep = grade(env, _write(tmp_path, ans.sample(frac=1.0, random_state=3)))
    assert rep.valid_submission and rep.score == 1.0


def test_a_poor_submission_is_valid_without_medal(env, tmp_path):
    sub = _answers().assign(label="no")
    rep = grade(env, _write(tmp_path, sub))
    expected = float((_answers()["label"] == "no").mean())
    assert rep.valid_submission and rep.score == pytest.approx(expected)
    assert not rep.any_medal and not rep.above_median
    assert rep.rank == pytest.approx(1 - sum(s > expected for s in env.leaderboard) / len(env.leaderboard))


def _bad_cases():
    a = _answers
    return {
        "missing file": (None, "no submission.csv"),
        "empty file": ("", "empty"),
        "not a csv": ("\x00\x01garbage\n\"unterminated", None),
        "missing id column": (lambda: a().drop(columns=["id"]), "missing id column"),
        "missing prediction column": (lambda: a().drop(columns=["label"]), "missing prediction column"),
        "extra column": (lambda: a().assign(extra=1), "unexpected column"),
        "too few rows": (lambda: a().iloc[:-1], "expected 40 rows, got 39"),
        "too many rows": (lambda: pd.concat([a(), a().iloc[:1]]), "expected 40 rows, got 41"),
        "duplicated id": (lambda: a().assign(id=[*a()["id"][:-1], a()["id"].iloc[0]]), "more than once"),
        "unknown id": (lambda: a().assign(id=[*a()["id"][:-1], "zzz"]), "not in the test set"),
        "missing id value": (lambda: a().assign(id=[*a()["id"][:-1], None]), "missing ids"),
        "NaN prediction": (lambda: a().assign(label=[None, *a()["label"][1:]]), "missing values"),
        "unknown label": (lambda: a().assign(label=["maybe", *a()["label"][1:]]), "not one of the classes"),
        "duplicate columns": ("id,label,label\n" + "\n".join(f"{i},no,no" for i in a()["id"]), None),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_every_invalid_submission_case_is_reported_not_raised(env, tmp_path, case):
    make, needle = _bad_cases()[case]
    if make is None:
        path = None
    elif isinstance(make, str):
        path = _write(tmp_path, make)
    else:
        path = _write(tmp_path, make())
    rep = grade(env, path)
    assert rep.valid_submission is False and rep.score is None and rep.error
    assert not (rep.gold_medal or rep.silver_medal or rep.bronze_medal or rep.any_medal or rep.above_median)
    assert rep.submission_exists is (path is not None)
    if needle:
        assert needle in rep.error, rep.error


@pytest.fixture
def numeric_env(tmp_path) -> EnvSpec:
    """A regression env (RMSE, lower is better) for the numeric cases."""
    root = tmp_path / "reg"
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    ids = [f"{i:03d}" for i in range(10)]  # leading zeros must survive
    pd.DataFrame({"id": ids, "y": np.arange(10.0)}).to_csv(root / "private" / "answers.csv", index=False)
    (root / "private" / "grade.json").write_text(json.dumps({
        "metric": "rmse", "lower_is_better": True, "id_column": "id", "target_columns": ["y"],
        "prediction_columns": ["y"], "task_type": "regression"}))
    (root / "env.json").write_text(json.dumps({"id": "reg", "leaderboard": [{"score": s} for s in (0.5, 1, 2, 3, 4)]}))
    return EnvSpec.from_dir(root)


@pytest.mark.parametrize("values, needle", [
    (["a"] + [1.0] * 9, "must be numeric"),
    ([math.inf] + [1.0] * 9, "non-finite"),
    ([-math.inf] + [1.0] * 9, "non-finite"),
    ([None] + [1.0] * 9, "missing values"),
])
def test_numeric_invalid_cases(numeric_env, tmp_path, values, needle):
    sub = pd.DataFrame({"id": [f"{i:03d}" for i in range(10)], "y": values})
    rep = grade(numeric_env, _write(tmp_path, sub))
    assert not rep.valid_submission and needle in rep.error


def test_numeric_grading_keeps_leading_zero_ids_and_lower_is_better(numeric_env, tmp_path):
    sub = pd.DataFrame({"id": [f"{i:03d}" for i in range(10)], "y": np.arange(10.0) + 0.4})
    rep = grade(numeric_env, _write(tmp_path, sub))
    assert rep.valid_submission and rep.score == pytest.approx(0.4)
    assert rep.is_lower_better and rep.gold_medal and rep.rank == 1.0
    stripped = sub.assign(id=[str(i) for i in range(10)])  # '0' is not '000'
    bad = grade(numeric_env, _write(tmp_path, stripped, "b.csv"))
    assert not bad.valid_submission and "not in the test set" in bad.error


def test_grade_without_leaderboard_gives_no_medals(env, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(TINY, root)
    (root / "env.json").unlink()
    e = EnvSpec.from_dir(root)
    rep = grade(e, _write(tmp_path, _answers()))
    assert rep.valid_submission and rep.score == 1.0
    assert not rep.any_medal and rep.gold_threshold is None and rep.rank is None


def test_mlebench_competition_folder_grades_the_same(tmp_path):
    from engine.seeds.competition import env_from_mlebench

    folder = DATA / "mlebench" / "spooky-mini"
    env = env_from_mlebench(folder, tmp_path / "cache")
    assert env.grade.metric == "log_loss" and env.grade.prediction_columns == ["EAP", "HPL", "MWS"]
    answers = pd.read_csv(folder / "prepared" / "private" / "test.csv", dtype={"id": str})
    rep = grade(env, _write(tmp_path, answers))
    assert rep.valid_submission and rep.score == pytest.approx(0.0, abs=1e-9) and rep.gold_medal
    uniform = answers.assign(EAP=1 / 3, HPL=1 / 3, MWS=1 / 3)
    rep = grade(env, _write(tmp_path, uniform, "u.csv"))
    assert rep.score == pytest.approx(math.log(3)) and rep.is_lower_better


# ------------------------------------------------------------------ rewards
def _report(**kw) -> GradeReport:
    base = dict(competition_id="x", score=0.5, valid_submission=True, submission_exists=True)
    return GradeReport(**{**base, **kw})


TURNS = [Turn("system", ""), Turn("user", ""), Turn("assistant", "", well_formed=True), Turn("tool", ""),
         Turn("assistant", "", well_formed=False), Turn("assistant", "", well_formed=True),
         Turn("assistant", "", well_formed=True)]


@pytest.mark.parametrize("medal, expected", [
    (dict(gold_medal=True, any_medal=True, above_median=True), 1.0 - 0.025 + 0.0),  # capped below 1 by format
    (dict(silver_medal=True, any_medal=True, above_median=True), 0.2 + 0.6 + 0.075),
    (dict(bronze_medal=True, any_medal=True, above_median=True), 0.2 + 0.5 + 0.075),
    (dict(above_median=True), 0.2 + 0.1 + 0.075),
    (dict(), 0.2 + 0.075),
])
def test_milestone_reward(medal, expected):
    total, breakdown = compute_reward(_report(**medal), TURNS, "milestone")
    assert total == pytest.approx(expected)
    assert breakdown["terms"]["format"]["value"] == 0.75 and breakdown["scheme"] == "milestone"


def test_milestone_is_capped_and_invalid_earns_format_only():
    all_good = [Turn("assistant", "", well_formed=True)] * 3
    total, b = compute_reward(_report(gold_medal=True, any_medal=True, above_median=True), all_good)
    assert total == 1.0 and b["uncapped"] == pytest.approx(1.0)
    total, b = compute_reward(_report(valid_submission=False, score=None), all_good)
    assert total == pytest.approx(0.1) and b["terms"]["valid"]["reward"] == 0.0


def test_sparse_reward_and_custom_scheme():
    total, _ = compute_reward(_report(gold_medal=True, any_medal=True), TURNS, "sparse")
    assert total == pytest.approx(0.1 * 0.75 + 0.9)
    total, _ = compute_reward(_report(silver_medal=True, any_medal=True), TURNS, "sparse")
    assert total == pytest.approx(0.075)
    scheme = Scheme("mine", (Term("valid", 0.5, valid_submission), Term("format", 0.5, well_formed_share)))
    total, b = compute_reward(_report(), TURNS, scheme)
    assert total == pytest.approx(0.5 + 0.375) and set(b["terms"]) == {"valid", "format"}
    assert well_formed_share(_report(), []) == 0.0


def test_unknown_scheme_is_a_user_error():
    from engine.errors import SandmleError

    with pytest.raises(SandmleError, match="unknown reward scheme"):
        compute_reward(_report(), TURNS, "nope")


# ------------------------------------------------------------------ the metric library
def _case(name):
    rng = np.random.default_rng(0)
    n = 40
    if name in ("accuracy", "f1_macro", "f1_micro", "f1_weighted"):
        y = rng.choice(["a", "b", "c"], size=(n, 1)).astype(object)
        worse = y.copy()
        worse[:15, 0] = np.where(y[:15, 0] == "a", "b", "a")
        return y, y.copy(), worse
    if name == "qwk":
        y = rng.integers(1, 6, size=(n, 1)).astype(float)
        return y, y.copy(), np.clip(y + rng.integers(-2, 3, size=(n, 1)), 1, 5)
    if name == "roc_auc":
        y = (rng.random((n, 1)) < 0.5).astype(float)
        return y, y.copy(), np.where(rng.random((n, 1)) < 0.3, 1 - y, y) * 0.8 + 0.1
    if name in ("mean_columnwise_roc_auc", "multilabel_log_loss"):
        y = (rng.random((n, 3)) < 0.4).astype(float)
        worse = np.clip(np.where(rng.random((n, 3)) < 0.3, 1 - y, y) * 0.8 + 0.1, 0, 1)
        return y, np.clip(y, 1e-9, 1 - 1e-9), worse
    if name == "log_loss":
        labels = rng.integers(0, 3, size=n)
        y = np.eye(3)[labels]
        return y, y.copy(), np.full((n, 3), 1 / 3)
    if name == "map_at_3":
        y = rng.choice(["a", "b", "c", "d"], size=(n, 1)).astype(object)
        best = np.array([[f"{v} x y"] for v in y[:, 0]], dtype=object)
        worse = np.array([[f"x {v} y"] for v in y[:, 0]], dtype=object)
        return y, best, worse
    y = rng.random((n, 2 if name in ("mcrmse", "mean_columnwise_rmsle") else 1)) * 10
    return y, y.copy(), y + rng.normal(0, 1, size=y.shape) ** 2


@pytest.mark.parametrize("name", sorted(__import__("engine.grading.metrics", fromlist=["METRICS"]).METRICS))
def test_every_metric_scores_perfect_best_and_a_worse_prediction_worse(name):
    from engine.grading.metrics import get_metric

    m = get_metric(name)
    y, perfect, worse = _case(name)
    best = m.fn(y, perfect)
    other = m.fn(y, worse)
    if m.best is not None:
        assert best == pytest.approx(m.best, abs=1e-6), name
    assert (other > best) if m.lower_is_better else (other < best), (name, best, other)


def test_map_at_3_and_unknown_metric():
    from engine.grading.metrics import get_metric, map_at_k

    assert map_at_k(["a", "b", "c"], [["a"], ["x", "b"], ["x", "y", "z", "c"]], 3) == pytest.approx((1 + 0.5) / 3)
    with pytest.raises(KeyError, match="unknown metric"):
        get_metric("banana")


#: a metric's answer to constant answers (one class, one value) predicted perfectly: None where it is defined (the
#: metric's best), else what its refusal says
UNDEFINED_ON_CONSTANT = {
    "accuracy": None, "f1_macro": None, "f1_micro": None, "f1_weighted": None, "log_loss": None,
    "multilabel_log_loss": None, "rmse": None, "rmsle": None, "mean_columnwise_rmsle": None, "mcrmse": None,
    "mae": None, "map_at_3": None,
    "roc_auc": "a single class", "mean_columnwise_roc_auc": "single class", "r2": "the answers are constant",
    "qwk": "one and the same class",
}


def _spoiled(a, case, row):
    """``a`` with one value missing (NaN, or None for labels) or infinite."""
    out = a.copy() if a.dtype.kind == "f" else a.astype(object)
    out[row, 0] = (np.nan if a.dtype.kind == "f" else None) if case == "NaN" else np.inf
    return out


def _degenerate(y, p):
    """(case, y, p) of the degenerate inputs every metric meets: NaN and inf on either side, no rows."""
    cases = [(f"{case} in the {side}", _spoiled(y, case, 5) if side == "answers" else y,
              _spoiled(p, case, 3) if side == "predictions" else p)
             for case in ("NaN", "inf") for side in ("answers", "predictions")]
    return cases + [("no rows", y[:0], p[:0])]


@pytest.mark.parametrize("name", sorted(__import__("engine.grading.metrics", fromlist=["METRICS"]).METRICS))
def test_every_metric_refuses_degenerate_inputs(name):
    """NaN, inf, no rows: refused (ValueError, which a grade turns into an invalid submission); constant answers:
    the metric's best where it is defined, else refused saying why; the fast re-implementation does the same."""
    from engine.grading.metrics import FAST_METRICS, METRICS, get_metric

    assert set(UNDEFINED_ON_CONSTANT) == set(METRICS)  # a new metric says how it meets constant answers
    m = get_metric(name)
    fns = [m.fn] + ([FAST_METRICS[name]] if name in FAST_METRICS else [])
    y, perfect, _ = _case(name)
    for case, yy, pp in _degenerate(y, perfect):
        for fn in fns:
            with pytest.raises(ValueError):
                fn(yy, pp)
                pytest.fail(f"{name} scored {case}")
    constant = np.repeat(y[:1], len(y), axis=0)
    why = UNDEFINED_ON_CONSTANT[name]
    for fn in fns:
        if why is None:
            assert fn(constant, constant.copy()) == pytest.approx(m.best, abs=1e-6), name
        else:
            with pytest.raises(ValueError, match=why):
                fn(constant, constant.copy())


def test_log_loss_refuses_one_column_and_answers_that_are_not_one_hot():
    from engine.grading.metrics import get_metric

    fn = get_metric("log_loss").fn
    y = np.array([[1.0], [1.0], [0.0], [1.0]])
    for guess in (np.full((4, 1), 0.01), np.full((4, 1), 0.99), 1 - y):  # renormalised: each "scored" 0.0
        with pytest.raises(ValueError, match="at least two"):
            fn(y, guess)
    with pytest.raises(ValueError, match="not one-hot"):
        fn(np.array([[1.0, 1.0], [0.0, 1.0]]), np.full((2, 2), 0.5))
    assert fn(np.eye(2)[[0, 1, 1]], np.full((3, 2), 0.5)) == pytest.approx(np.log(2))


def test_a_one_column_log_loss_environment_is_refused_with_the_reason(run_cli, tmp_path):
    """An environment whose spec asks log loss over one column: `sandmle grade` refuses it (its audit cannot score
    a constant submission, and says why), and a submission graded against it is invalid with the reason — never a
    perfect 0.0."""
    import json
    import shutil

    from conftest import DATA
    from engine.envs.layout import GradeSpec
    from engine.errors import InvalidSubmission
    from engine.grading.score import score_submission

    env = tmp_path / "one-col"
    shutil.copytree(DATA / "envs" / "tiny-tabular", env)
    answers = pd.read_csv(env / "private" / "answers.csv")
    answers["label"] = (answers["label"] == "yes").astype(int)
    answers.to_csv(env / "private" / "answers.csv", index=False)
    spec = json.loads((env / "private" / "grade.json").read_text())
    spec.update(metric="log_loss", lower_is_better=True, classes=None, task_type="binary")
    (env / "private" / "grade.json").write_text(json.dumps(spec))
    sub = answers.assign(label=0.5)
    sub.to_csv(tmp_path / "sub.csv", index=False)
    why = "log loss needs one probability column per class, at least two (1 given)"
    res = run_cli("grade", str(env), str(tmp_path / "sub.csv"), "--json")
    assert res.code == 1 and "broken grading spec" in res.err and why in res.err, (res.code, res.out, res.err)
    for guess in (0.5, 0.01, 0.99):
        with pytest.raises(InvalidSubmission, match=why.replace("(", r"\(").replace(")", r"\)")):
            score_submission(GradeSpec.load(env / "private" / "grade.json"), answers, answers.assign(label=guess))

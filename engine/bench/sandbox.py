"""`sandmle bench sandbox`: what the sandbox costs per step. An empty step and a pandas+sklearn step, bare
(``python`` with no sandbox) versus the local backend cold (jail launcher + exec) and warm (a fork of a worker with
pandas/sklearn imported), and the Docker backend where a daemon answers. Overhead of an empty step = sandboxed wall
time minus the bare ``python -c pass`` wall time (for warm: the whole step, counted in full, since it starts no
interpreter); of the pandas+sklearn step = sandboxed minus the same step run bare.

Each row's ``isolation`` is the label of the isolation record its runs had (:func:`isolation_label`), the record
``sandbox run --json`` prints. As root the result is ``sandbox.json``; as an ordinary user ``sandbox-unprivileged.json``
beside it, with the user in every row."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..sandbox import get_backend
from ..sandbox.base import isolation_label
from ..sandbox.local import LocalBackend
from ..sandbox.child import run_env, venv_python
from . import BenchResult

EMPTY = "pass"
ML_STEP = ("import numpy as np, pandas as pd\nfrom sklearn.linear_model import LogisticRegression\n"
           "df = pd.DataFrame(np.random.RandomState(0).rand(200, 5), columns=list('abcde'))\n"
           "y = (df.a + df.b > 1).astype(int)\nprint(LogisticRegression().fit(df, y).score(df, y))\n")
TARGET_WARM_P50_MS = 50.0
#: the warm pandas+sklearn step against the cold one (p50s), for root and for an ordinary user alike
TARGET_ML_COLD_OVER_WARM = 8.0


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if len(values) == 1:
        return values[0]
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def _times(fn: Callable[[], float], n: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    return [fn() for _ in range(n)]


def _bare(code: str) -> Callable[[], float]:
    py = venv_python()

    def once() -> float:
        t = time.perf_counter()
        subprocess.run([py, "-c", code], check=True, stdout=subprocess.DEVNULL, env=run_env(Path("/tmp")))
        return time.perf_counter() - t

    return once


def _sandboxed(ws, code: str, *, warm: bool, seen: set[str] | None = None) -> Callable[[], float]:
    """One timed step; the label of each run's isolation record goes to ``seen``."""
    def once() -> float:
        t = time.perf_counter()
        r = ws.run_python(code, warm=warm) if warm else ws.run(["python", "-c", code])
        elapsed = time.perf_counter() - t
        if r.status != "ok":
            raise RuntimeError(f"benchmark step failed ({r.status}): {r.stderr_tail[-300:]}")
        if seen is not None:
            seen.add(isolation_label(r.isolation))
        return elapsed

    return once


def _timed_rows(rows: list[dict[str, Any]], case: str, mode: str, ws, code: str, n: int, ref: float | None, *,
                warm: bool, warmup: int = 1) -> None:
    seen: set[str] = set()
    secs = _times(_sandboxed(ws, code, warm=warm, seen=seen), n, warmup=warmup)
    rows.append(_row(case, mode, secs, ref, " | ".join(sorted(seen))))


def _row(case: str, mode: str, secs: list[float], ref_p50_ms: float | None, isolation: str) -> dict[str, Any]:
    p50, p90 = _pct(secs, 0.5) * 1000, _pct(secs, 0.9) * 1000
    over50 = over90 = None
    if ref_p50_ms is not None:
        over50, over90 = p50 - ref_p50_ms, p90 - ref_p50_ms
    return {"case": case, "mode": mode, "n": len(secs), "p50_ms": round(p50, 1), "p90_ms": round(p90, 1),
            "overhead_p50_ms": None if over50 is None else round(over50, 1),
            "overhead_p90_ms": None if over90 is None else round(over90, 1), "isolation": isolation}


def _ml_rows(rows: list[dict[str, Any]], ws, n: int, ref: float, *, warm_ok: bool, quick: bool) -> None:
    """The pandas+sklearn step cold and warm, alternating (cold, warm, cold, ...): both see the same load, so
    their ratio — the headline — holds on a shared machine whose load changes while the benchmark runs."""
    seen: dict[bool, set[str]] = {False: set(), True: set()}
    steps = {warm: _sandboxed(ws, ML_STEP, warm=warm, seen=seen[warm]) for warm in ((False, True) if warm_ok
                                                                                    else (False,))}
    for warm, step in steps.items():
        for _ in range((2 if warm else 1) if not quick else 0):
            step()  # warm-up
    secs: dict[bool, list[float]] = {warm: [] for warm in steps}
    for _ in range(n):
        for warm, step in steps.items():
            secs[warm].append(step())
    for warm in steps:
        rows.append(_row("pandas+sklearn step", "local warm" if warm else "local cold", secs[warm], ref,
                         " | ".join(sorted(seen[warm]))))


def _user() -> str:
    if os.geteuid() == 0:
        return "root"
    try:
        return f"{pwd.getpwuid(os.geteuid()).pw_name} (uid {os.geteuid()}, no root)"
    except KeyError:
        return f"uid {os.geteuid()} (no root)"


def run(store: Store, quick: bool = False, **_options: Any) -> BenchResult:
    n_empty, n_ml = (3, 1) if quick else (40, 10)
    notes: list[str] = []
    rows: list[dict[str, Any]] = []

    bare_empty = _times(_bare(EMPTY), n_empty)
    ref = _pct(bare_empty, 0.5) * 1000
    rows.append(_row("empty step", "bare python -c pass", bare_empty, None, "none"))
    with LocalBackend(store=store, warm=True) as backend, backend.open(label="bench") as ws:
        _timed_rows(rows, "empty step", "local cold", ws, EMPTY, n_empty, ref, warm=False)
        warm_ok = backend.warm_worker() is not None
        if warm_ok:
            # warm starts no interpreter: its overhead is the whole step
            _timed_rows(rows, "empty step", "local warm", ws, EMPTY, n_empty, 0.0, warm=True, warmup=2)
            # a fresh workspace for every step (synthesis runs each program so): the worker's ready-made spare
            # predates the workspace's mount and cannot be used, so each step clones afresh (open/close not timed)
            fresh: list[float] = []
            seen: set[str] = set()
            for _ in range(max(3, n_empty // 2)):
                with backend.open(label="bench") as one:
                    fresh.append(_sandboxed(one, EMPTY, warm=True, seen=seen)())
            rows.append(_row("empty step", "local warm, new workspace", fresh, 0.0, " | ".join(sorted(seen))))
        else:
            notes.append(f"warm worker unavailable here: {backend._warm_error}")
        bare_ml = _times(_bare(ML_STEP), n_ml, warmup=0 if quick else 1)
        ref_ml = _pct(bare_ml, 0.5) * 1000  # ML rows: against the same step run bare (negative = faster)
        rows.append(_row("pandas+sklearn step", "bare python", bare_ml, None, "none"))
        _ml_rows(rows, ws, n_ml, ref_ml, warm_ok=warm_ok, quick=quick)
    docker_note = _docker_rows(store, rows, ref, n_empty)
    if docker_note:
        notes.append(docker_note)
    user = _user()
    for row in rows:
        row["user"] = user
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    notes.append(f"{sys.platform}, {os.cpu_count()} CPUs, load average {load} at the end: absolute figures scale "
                 "with load (compare rows within one run)")
    return BenchResult(name="sandbox", rows=rows, summary=_summary(rows, ref, user), notes=notes,
                       variant=None if os.geteuid() == 0 else "unprivileged")


def _summary(rows: list[dict[str, Any]], ref: float, user: str) -> dict[str, Any]:
    by = {(r["case"], r["mode"]): r for r in rows}
    summary: dict[str, Any] = {"user": user, "bare_python_p50_ms": round(ref, 1)}
    if ("empty step", "local warm") in by:
        w = by[("empty step", "local warm")]
        summary.update(warm_step_overhead_p50_ms=w["p50_ms"], warm_step_overhead_p90_ms=w["p90_ms"],
                       target_warm_p50_ms=TARGET_WARM_P50_MS, target_met=w["p50_ms"] <= TARGET_WARM_P50_MS)
    summary["cold_step_overhead_p50_ms"] = by[("empty step", "local cold")]["overhead_p50_ms"]
    if ("pandas+sklearn step", "local warm") in by:
        c, w = by[("pandas+sklearn step", "local cold")], by[("pandas+sklearn step", "local warm")]
        ratio = round(c["p50_ms"] / max(w["p50_ms"], 1e-6), 1)
        summary.update(ml_step_cold_over_warm=ratio, target_ml_cold_over_warm=TARGET_ML_COLD_OVER_WARM,
                       ml_target_met=ratio >= TARGET_ML_COLD_OVER_WARM)
    return summary


def _docker_rows(store: Store, rows: list[dict[str, Any]], ref: float, n: int) -> str | None:
    try:
        backend = get_backend("docker", store=store)
    except Exception as exc:  # no SDK, no daemon: a note, not a failure
        return f"docker: skipped ({str(exc).splitlines()[0][:160]})"
    with backend, backend.open(label="bench") as ws:
        _timed_rows(rows, "empty step", "docker", ws, EMPTY, max(3, n // 4), ref, warm=False)
    return None

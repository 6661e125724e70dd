"""Benchmarks: ``sandmle bench NAME [--json]``. Each benchmark is a module ``engine.bench.<name>`` with a
``run(store, results_dir=..., **options) -> BenchResult`` function. Results go to ``<data dir>/bench/NAME.json``
(``--out benchmarks/results`` updates the shipped ones) with machine info and date, and are printed as a table.
Ratios are measured side by side in one run (machines are noisy)."""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import platform
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from store import Store

from ..errors import SandmleError

#: benchmark name → module with a ``run`` function: engine/bench/<name>.py (the workbench's ``tui`` too: it measures
#: the app in child processes, so the engine never imports the UI)
BENCHMARKS: dict[str, str] = {}


@dataclass
class BenchResult:
    name: str
    #: rows of the printed table (each a dict with the same keys)
    rows: list[dict[str, Any]]
    #: headline figures (targets and whether they were met)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: a second result file of the same benchmark beside the first: NAME-VARIANT.json (the sandbox bench of an
    #: ordinary user writes its rows beside root's)
    variant: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "machine": machine_info(), **asdict(self)}


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        with open("/proc/meminfo") as f:
            info["mem_gb"] = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        import torch  # heavy optional dependency: loaded only when used

        info["torch"] = torch.__version__
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` for a block, then back. Benchmarks of the tiny model use 1: its
    matrices are too small to split, and on a shared 2-core machine two spinning OpenMP threads made a training step
    5x slower than one (22 s vs 4.3 s for a forward and backward pass of 2 x 900 tokens at load average 12)."""
    import torch  # heavy optional dependency

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_benchmark(name: str, store: Store, results_dir: Path | None = None, **options: Any) -> tuple[BenchResult, Path]:
    """Run benchmark ``name``; its result file (and any plot) goes to ``results_dir``, by default
    ``<data dir>/bench`` (``benchmarks/results`` holds the shipped results: pass it to update them)."""
    _load_registry()
    if name not in BENCHMARKS:
        raise SandmleError(f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS)) or 'none'}")
    module = importlib.import_module(BENCHMARKS[name])
    out_dir = Path(results_dir) if results_dir else Path(store.data_dir) / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    load_start, started = _load(), time.monotonic()
    result: BenchResult = module.run(store, results_dir=out_dir, **options)
    path = out_dir / (f"{name}-{result.variant}.json" if result.variant else f"{name}.json")
    # the machine's load beside the figures: other work on a shared machine understates speeds 2-5x
    written = {**result.to_dict(), "wall_s": round(time.monotonic() - started, 1),
               "load": {"start": load_start, "end": _load(), "cpus": os.cpu_count()}}
    if results_dir is not None:  # a result file outside the data dir (benchmarks/results) names no path of this machine
        written = _without_data_dir(written, str(store.data_dir))
    path.write_text(json.dumps(written, indent=2, default=str) + "\n")
    return result, path


def _load() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _without_data_dir(value: Any, data_dir: str) -> Any:
    """``value`` with every string that starts with ``data_dir`` written ``<data dir>/…`` instead."""
    if isinstance(value, dict):
        return {k: _without_data_dir(v, data_dir) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_data_dir(v, data_dir) for v in value]
    if isinstance(value, str) and value.startswith(data_dir.rstrip("/") + "/"):
        return "<data dir>" + value[len(data_dir.rstrip("/")):]
    return value


def _load_registry() -> None:
    """Benchmarks register by module name: every engine/bench/<name>.py with a ``run`` function."""
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        BENCHMARKS.setdefault(path.stem, f"engine.bench.{path.stem}")


def available() -> list[str]:
    _load_registry()
    return sorted(BENCHMARKS)

"""Benchmarks: ``sandmle bench NAME [--json]``. Each benchmark is a module ``engine.bench.<name>`` with a
``run(store, **options) -> BenchResult`` function. Results go to ``benchmarks/results/NAME.json`` with machine
info and date, and are printed as a table. Ratios are measured side by side in one run (machines are noisy)."""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SandmleError

#: benchmark name → module under engine.bench
BENCHMARKS: dict[str, str] = {}

RESULTS_DIR = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "results"


def register(name: str, module: str) -> None:
    BENCHMARKS[name] = module


@dataclass
class BenchResult:
    name: str
    #: rows of the printed table (each a dict with the same keys)
    rows: list[dict[str, Any]]
    #: headline figures (targets and whether they were met)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

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
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def format_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no rows)"
    headers = list(rows[0].keys())

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    cells = [headers] + [[fmt(r.get(h)) for h in headers] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run_benchmark(name: str, store, results_dir: Path | None = None, **options: Any) -> tuple[BenchResult, Path]:
    _load_registry()
    if name not in BENCHMARKS:
        raise SandmleError(f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS)) or 'none'}")
    module = importlib.import_module(BENCHMARKS[name])
    result: BenchResult = module.run(store, **options)
    out_dir = Path(results_dir) if results_dir else RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n")
    return result, path


def _load_registry() -> None:
    """Benchmarks register by module name: every engine/bench/<name>.py with a ``run`` function."""
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        BENCHMARKS.setdefault(path.stem, f"engine.bench.{path.stem}")


def available() -> list[str]:
    _load_registry()
    return sorted(BENCHMARKS)

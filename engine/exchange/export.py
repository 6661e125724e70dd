"""``sandmle envs export SELECTOR DEST --format mlebench|harbor|sandmle``: one task folder per environment under DEST
and an ``index.jsonl`` (one line per environment: id, seed, split, metric, direction, thresholds, leaderboard size,
provenance, format, folder).

The export is built in a private folder beside DEST and renamed into place at the end, so a failure leaves no
half-written DEST, and ``--force`` replaces only a folder that holds an earlier export (an ``index.jsonl``, or the
``config.yaml`` + ``prepared/`` of a single MLE-bench export).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import Store

from ..envs.layout import REAL_SPLIT
from ..envs.storage import export_env
from ..errors import SandmleError
from ..eval.select import select_envs
from ..grading.rewards import SCHEMES
from ..sandbox.image import BASE_IMAGE
from . import harbor_env
from .harbor import write_harbor_task
from .paper import LEAK_WARNING, OK_LIST, write_paper_task
from .source import FORMATS, Source

INDEX = "index.jsonl"
#: rewards a Harbor verifier can write: the training schemes, or the metric's own value
REWARDS = (*SCHEMES, "score")


@dataclass
class ExportOptions:
    fmt: str = "mlebench"
    base_image: str = BASE_IMAGE
    reward: str = "milestone"
    paper_compatible: bool = False
    agent_timeout_s: float = 1200.0

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise SandmleError(f"unknown format {self.fmt!r}; expected {', '.join(FORMATS)}")
        if self.reward not in REWARDS:
            raise SandmleError(f"unknown reward {self.reward!r}; expected {', '.join(REWARDS)}")
        if self.paper_compatible and self.fmt != "sandmle":
            raise SandmleError("--paper-compatible applies to --format sandmle only")
        if self.agent_timeout_s <= 0:
            raise SandmleError("--agent-timeout must be > 0 seconds")


@dataclass
class ExportResult:
    dest: Path
    fmt: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"dest": str(self.dest), "format": self.fmt, "environments": self.rows, "warnings": self.warnings}


def is_export(folder: Path) -> bool:
    """Whether ``folder`` holds an earlier export (the only kind of folder ``--force`` replaces)."""
    return (folder / INDEX).is_file() or ((folder / "config.yaml").is_file() and (folder / "prepared").is_dir())


def check_dest(dest: Path, force: bool) -> None:
    if dest.exists() and not dest.is_dir():
        raise SandmleError(f"{dest} is a file, not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        if not force:
            raise SandmleError(f"{dest} exists and is not empty", hint="add --force to replace an earlier export")
        if not is_export(dest):
            raise SandmleError(f"{dest} does not hold an export (no {INDEX}); not replacing it")


def sources(store: Store, selector: str) -> list[Source]:
    """The stored, verified environments a selector names (as ``eval --envs`` reads it; folders are not stored)."""
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        if Path(part).expanduser().is_dir():
            raise SandmleError(f"{part}: a folder is not a stored environment; give env ids, split:NAME, seed:ID "
                               "or all")
    out = []
    for spec in select_envs(store, selector):
        row = store.envs.get(spec.id)
        if row["split"] == REAL_SPLIT:
            raise SandmleError(f"{spec.id} is a real competition: export its MLE-bench folder as it is")
        out.append(Source.load(store, spec.id))
    return out


def _write_one(store: Store, src: Source, folder: Path, opts: ExportOptions) -> None:
    if opts.fmt == "mlebench":
        export_env(store, src.id, folder)
    elif opts.fmt == "harbor":
        write_harbor_task(src, folder, base_image=opts.base_image, reward=opts.reward,
                          agent_timeout_s=opts.agent_timeout_s)
    else:
        write_paper_task(src, folder, paper_compatible=opts.paper_compatible, reward=opts.reward)


def export_envs(store: Store, selector: str, dest: str | Path, opts: ExportOptions, *,
                force: bool = False) -> ExportResult:
    """Export every environment ``selector`` names into ``dest`` (see the module docstring)."""
    dest = Path(dest).expanduser()
    check_dest(dest, force)
    chosen = sources(store, selector)
    dest.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{dest.name}-export-", dir=dest.parent))
    result = ExportResult(dest=dest, fmt=opts.fmt)
    try:
        for src in chosen:
            _write_one(store, src, build / src.id, opts)
            result.rows.append(src.index_row(opts.fmt, build / src.id))
        with open(build / INDEX, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in result.rows)
        if opts.fmt == "sandmle":
            (build / OK_LIST).write_text(json.dumps([r["id"] for r in result.rows], indent=1) + "\n")
        if opts.fmt == "harbor":
            (build / f"{harbor_env.MODULE}.py").write_text(harbor_env.SOURCE)
        if dest.exists():
            shutil.rmtree(dest)
        build.rename(dest)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    if opts.paper_compatible:
        result.warnings.append(LEAK_WARNING)
    return result
